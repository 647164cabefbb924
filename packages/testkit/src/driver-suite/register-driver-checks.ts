import { isSandboxConflict, isSandboxGone } from '@berth/core';
import { assertSandboxDriver, type ExecChannel } from '@berth/core/driver';
import { expect, it, type TestContext } from 'vitest';
import { DRIVER_TEST_TIMEOUT_MS, type DriverTestContext } from '../test-driver.js';

/** What a process run through a channel wrote and how it ended; the channel is dropped if it runs past `boundMs`. */
async function collect(channel: ExecChannel, stdin?: string, boundMs = 30_000): Promise<{ stdout: string; stderr: string; exitCode: number | undefined }> {
  let stdout = '';
  let stderr = '';
  channel.onStdout((chunk) => (stdout += chunk.toString('utf8')));
  channel.onStderr((chunk) => (stderr += chunk.toString('utf8')));
  const closed = new Promise<void>((resolve) => channel.onClose(resolve));
  if (stdin !== undefined) channel.write(stdin);
  channel.end();
  const timer = setTimeout(() => channel.destroy(), boundMs);
  await closed;
  clearTimeout(timer);
  return { stdout, stderr, exitCode: await channel.exitCode() };
}

/** The error `work` rejects with (fails the test when it resolves). */
async function rejection(work: Promise<unknown>): Promise<unknown> {
  try {
    await work;
  } catch (error) {
    return error;
  }
  throw new Error('resolved where the driver port says it rejects');
}

const METHODS = [
  'ping',
  'describe',
  'hasImage',
  'prepareImage',
  'inspect',
  'list',
  'create',
  'start',
  'stop',
  'unpause',
  'remove',
  'rename',
  'listProcesses',
  'openChannel',
];

/** Registers the checks of what `SandboxDriverV1` promises; `context.driver` is made by then. */
export function registerDriverChecks(context: DriverTestContext, options: { readonly renames: boolean }): void {
  const test = (title: string, body: (testContext: TestContext) => Promise<void>) => it(title, { timeout: DRIVER_TEST_TIMEOUT_MS }, body);

  test('is a v1 driver with every method of the port, an engine name, a spec revision and its capabilities', async () => {
    const { driver } = context;
    expect(() => assertSandboxDriver(driver)).not.toThrow();
    expect(driver.engine).toMatch(/^\S+$/);
    expect(driver.specRevision).toMatch(/^\S+$/);
    for (const flag of ['networkIsolation', 'hostFolders', 'processList'] as const) expect(typeof driver.capabilities[flag], flag).toBe('boolean');
    for (const method of METHODS) expect(typeof (driver as unknown as Record<string, unknown>)[method], method).toBe('function');
  });

  test('answers ping, describes its engine, and knows the image is there and an unknown one is not', async () => {
    const { driver } = context;
    await driver.ping();
    const description = await driver.describe();
    for (const field of ['engine', 'endpoint', 'discovery', 'version', 'apiVersion'] as const) expect(typeof description[field], field).toBe('string');
    expect(Array.isArray(description.warnings)).toBe(true);
    const spec = await context.spec();
    expect(await driver.hasImage(spec.image)).toBe(true);
    expect(await driver.hasImage(`localhost/berth-testkit-absent-${context.runId}:none`)).toBe(false);
  });

  test('creates a sandbox stopped, which inspect finds by name and by id with its labels; a taken name is undefined, not an error', async () => {
    const { driver } = context;
    const spec = await context.spec({ 'dev.berth.testkit.case': 'create' });
    await driver.prepare?.(spec);
    const id = await driver.create(spec);
    expect(id, 'create answered undefined for a new name').toEqual(expect.any(String));
    context.track(id!);
    const byId = await driver.inspect(id!);
    expect(byId).toMatchObject({ id, name: spec.name, labels: expect.objectContaining(spec.labels) });
    expect(byId!.state, 'a created sandbox is not started').not.toBe('running');
    expect(await driver.inspect(spec.name)).toMatchObject({ id, name: spec.name });
    expect(await driver.create(spec), 'the same name again').toBeUndefined();
  });

  test('starts a sandbox (twice is fine) and stops it (twice is fine), ending the processes that ran in it', async () => {
    const { driver } = context;
    const id = await context.running();
    expect((await driver.inspect(id))?.state).toBe('running');
    await driver.start(id);
    expect((await driver.inspect(id))?.state).toBe('running');
    const waiting = await driver.openChannel(id, ['/bin/sh', '-c', 'echo up; exec sleep 3600']);
    const closed = new Promise<void>((resolve) => waiting.onClose(resolve));
    const up = new Promise<void>((resolve) => waiting.onStdout(() => resolve()));
    await up;
    await driver.stop(id, 1);
    await closed;
    expect((await driver.inspect(id))?.state).toBe('stopped');
    await driver.stop(id, 1);
    const refused = await rejection(driver.openChannel(id, ['/bin/sh', '-c', 'true']));
    expect(isSandboxGone(refused), `openChannel into a stopped sandbox: ${String(refused)}`).toBe(true);
    await driver.start(id);
    expect((await driver.inspect(id))?.state).toBe('running');
  });

  test('lists every sandbox carrying all the labels asked, and only those', async () => {
    const { driver } = context;
    const first = await driver.create(await context.spec({ 'dev.berth.testkit.case': 'list', 'dev.berth.testkit.which': 'first' }));
    const second = await driver.create(await context.spec({ 'dev.berth.testkit.case': 'list', 'dev.berth.testkit.which': 'second' }));
    for (const id of [first, second]) context.track(id!);
    const ids = async (labels: Record<string, string>) => (await driver.list({ ...context.runLabels, ...labels })).map((sandbox) => sandbox.id).sort();
    expect(await ids({ 'dev.berth.testkit.case': 'list' })).toEqual([first, second].sort());
    expect(await ids({ 'dev.berth.testkit.case': 'list', 'dev.berth.testkit.which': 'second' })).toEqual([second]);
    expect(await ids({ 'dev.berth.testkit.case': `none-${context.runId}` })).toEqual([]);
    const listed = (await driver.list({ ...context.runLabels, 'dev.berth.testkit.which': 'first' }))[0];
    expect(listed).toMatchObject({ id: first, labels: expect.objectContaining({ 'dev.berth.testkit.which': 'first' }) });
    expect(listed!.name).toMatch(/^berth-testkit-/);
  });

  test('runs a process through openChannel: its stdin, stdout and stderr apart, its exit code, a working folder', async () => {
    const { driver } = context;
    const id = await context.running();
    const script = 'read -r line; echo "out:$line"; echo "err:$line" >&2; exit 3';
    expect(await collect(await driver.openChannel(id, ['/bin/sh', '-c', script]), 'hello\n')).toEqual({
      stdout: 'out:hello\n',
      stderr: 'err:hello\n',
      exitCode: 3,
    });
    expect(await collect(await driver.openChannel(id, ['cat']), 'stdin ends\n'), 'cat until end of stdin').toMatchObject({
      stdout: 'stdin ends\n',
      exitCode: 0,
    });
    expect(await collect(await driver.openChannel(id, ['pwd'], { workingDir: '/' }))).toMatchObject({ stdout: '/\n', exitCode: 0 });
  });

  test("lists a running sandbox's processes, its main process among them, or says the engine cannot see them", async () => {
    const { driver } = context;
    const id = await context.running();
    const listed = await driver.listProcesses(id);
    if (listed.engineProcess !== undefined) expect(listed.engineProcess).toBeInstanceOf(RegExp);
    // No commands: the runtime lists from inside, through openChannel (checked above).
    if (listed.commands === undefined) return;
    for (const command of listed.commands) expect(typeof command).toBe('string');
    expect(
      listed.commands.some((command) => command.includes(context.mainMarker)),
      `the main process in ${JSON.stringify(listed.commands)}`,
    ).toBe(true);
    // The ids, when given, are one for each command, and the main process leads its own group.
    if (listed.ids === undefined) return;
    expect(listed.ids).toHaveLength(listed.commands.length);
    for (const ids of listed.ids) for (const value of [ids.pid, ids.ppid, ids.pgid]) expect(Number.isSafeInteger(value)).toBe(true);
    const main = listed.ids[listed.commands.findIndex((command) => command.includes(context.mainMarker))]!;
    expect(listed.ids.some((ids) => ids.pgid === ids.pid && (ids.pid === main.pid || ids.pid === main.ppid))).toBe(true);
  });

  test('renames a sandbox; a name another sandbox holds is SANDBOX_CONFLICT', async (testContext) => {
    if (!options.renames) testContext.skip('the driver cannot rename (renames: false)');
    const { driver } = context;
    const spec = await context.spec();
    const id = await context.running(spec);
    const other = await context.spec();
    const otherId = await driver.create(other);
    context.track(otherId!);
    const renamed = `${spec.name}-renamed`;
    await driver.rename(id, renamed);
    expect(await driver.inspect(renamed)).toMatchObject({ id, name: renamed });
    expect(await driver.inspect(spec.name)).toBeUndefined();
    const refused = await rejection(driver.rename(id, other.name));
    expect(isSandboxConflict(refused), `rename to a taken name: ${String(refused)}`).toBe(true);
  });

  test('removes a running sandbox (twice is fine); gone, inspect answers undefined, list leaves it out, start and openChannel are SANDBOX_GONE', async () => {
    const { driver } = context;
    const spec = await context.spec({ 'dev.berth.testkit.case': 'remove' });
    const id = await context.running(spec);
    await driver.remove(id);
    await driver.remove(id);
    expect(await driver.inspect(id)).toBeUndefined();
    expect(await driver.inspect(spec.name)).toBeUndefined();
    expect(await driver.list({ ...context.runLabels, 'dev.berth.testkit.case': 'remove' })).toEqual([]);
    for (const [what, work] of [
      ['start', () => driver.start(id)],
      ['openChannel', () => driver.openChannel(id, ['/bin/sh', '-c', 'true'])],
    ] as const) {
      const refused = await rejection(work());
      expect(isSandboxGone(refused), `${what} of a removed sandbox: ${String(refused)}`).toBe(true);
    }
    await driver.stop(id, 1);
    expect(await driver.inspect(`berth-testkit-${context.runId}-never`)).toBeUndefined();
  });
}
