import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  createPlatformRegistry,
  createSandboxResolver,
  EngineUnavailableError,
  ImageNotFoundError,
  parseTerminalConfig,
  SandboxError,
  sandboxRootOf,
  type SandboxRequest,
} from '@berth/core';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createSandboxRuntime, type SandboxRuntime } from './create-sandbox-runtime.js';
import { sandboxSettings } from './sandbox-settings.js';
import { LABELS, MANAGED_BY } from './sandbox-spec.js';
import { createFakeDriver, fakeId, type FakeDriver } from './testing/fake-driver.js';
import { hostProcessesWith } from './testing/host-processes.js';

// The runtime's policies against an in-memory engine whose execs are real host shells: fast
// and deterministic, so adoption, drift, capacity and the reap race are each pinned down here,
// while the conformance suite proves the real drivers.

const folders: string[] = [];
const runtimes: SandboxRuntime[] = [];
afterEach(async () => {
  vi.useRealTimers();
  for (const runtime of runtimes.splice(0)) await runtime.close();
  for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true });
});

function setUp(settings: Record<string, unknown> = {}, environment: Record<string, string> = {}) {
  const sandboxDir = mkdtempSync(path.join(tmpdir(), 'berth-runtime-'));
  folders.push(sandboxDir);
  // No per-scope disks here (a fake has no containers to bind them into): scope-disks.test.ts has those.
  const config = parseTerminalConfig({ sandbox_dir: sandboxDir, lifetime_seconds: 0, container_disk: 0, ...settings });
  const resolver = createSandboxResolver({ config, registry: createPlatformRegistry(), environment });
  const request = (userId: string): SandboxRequest => resolver.resolve({ session: { platform: 'telegram', userId } });
  return { sandboxDir, config, request };
}

function runtimeOver(
  driver: FakeDriver,
  config: ReturnType<typeof parseTerminalConfig>,
  extra: {
    sandboxRoot?: string;
    reapIntervalMs?: number;
    shellReadyTimeoutMs?: number;
    logger?: { info: (line: string) => void; warn: (line: string) => void; error: (line: string) => void };
  } = {},
): SandboxRuntime {
  // The fake engine's sandboxes have a launch FIFO but no launcher: no waiting for one.
  const runtime = createSandboxRuntime({ driver, settings: sandboxSettings(config), reapIntervalMs: 0, firstLaunchWaitMs: 0, ...extra });
  runtimes.push(runtime);
  return runtime;
}

/** A host logger that keeps what it was warned of. */
function warnings() {
  const logs: string[] = [];
  return { logs, logger: { info: () => undefined, warn: (line: string) => void logs.push(line), error: () => undefined } };
}

const creates = (driver: FakeDriver) => driver.calls.filter((call) => call.startsWith('create '));

describe('the sandbox runtime', () => {
  it("runs a command in the scope's own sandbox, with its exit code and streams apart, and masks its secrets", async () => {
    const { config, request } = setUp({}, { HERMES_USER_TELEGRAM_11_GITHUB_TOKEN: 'ghp_secret_value_11' });
    const driver = createFakeDriver();
    const runtime = runtimeOver(driver, config);
    const result = await runtime.doExec(request('11'), { command: 'echo "token=$GITHUB_TOKEN"; echo oops >&2; exit 3' });
    expect(result).toMatchObject({ exitCode: 3, stdout: 'token=***\n', stderr: 'oops\n', timedOut: false });
    expect(creates(driver)).toHaveLength(1);
    const [sandbox] = driver.sandboxes.values();
    expect(sandbox!.name).toMatch(/^berth-[0-9a-f]{24}$/);
    expect(sandbox!.labels).toMatchObject({ [LABELS.managedBy]: MANAGED_BY, [LABELS.scope]: 'user:telegram:11' });
  });

  it('creates exactly one sandbox for many first commands of one scope at once, and keeps cd and export between them', async () => {
    const { config, request } = setUp();
    const driver = createFakeDriver();
    const runtime = runtimeOver(driver, config);
    const results = await Promise.all(Array.from({ length: 8 }, (_unused, index) => runtime.doExec(request('12'), { command: `echo ${index}` })));
    expect(results.map((result) => result.stdout)).toEqual(Array.from({ length: 8 }, (_unused, index) => `${index}\n`));
    expect(creates(driver)).toHaveLength(1);
    await runtime.doExec(request('12'), { command: 'cd /; export X=kept' });
    expect((await runtime.doExec(request('12'), { command: 'pwd; echo $X' })).stdout).toBe('/\nkept\n');
  });

  it('adopts the running sandbox after a restart instead of making another', async () => {
    const { config, request } = setUp();
    const driver = createFakeDriver();
    await runtimeOver(driver, config).doExec(request('13'), { command: 'true' });
    const restarted = runtimeOver(driver, config);
    expect((await restarted.doExec(request('13'), { command: 'echo again' })).stdout).toBe('again\n');
    expect(creates(driver)).toHaveLength(1);
    expect(await restarted.list()).toEqual([
      expect.objectContaining({ scopeKey: 'user:telegram:13', kind: 'user', platform: 'telegram', userId: '13', state: 'running' }),
    ]);
  });

  it('recreates a sandbox removed under a live session, once, with the files kept', async () => {
    const { config, request } = setUp();
    const driver = createFakeDriver();
    const runtime = runtimeOver(driver, config);
    await runtime.doExec(request('14'), { command: 'true' });
    const [before] = driver.sandboxes.keys();
    writeFileSync(path.join(request('14').paths.workspace, 'kept.txt'), 'x');
    driver.removeFromOutside(before!);
    expect((await runtime.doExec(request('14'), { command: 'echo back' })).stdout).toBe('back\n');
    expect(creates(driver)).toHaveLength(2);
    expect(existsSync(path.join(request('14').paths.workspace, 'kept.txt'))).toBe(true);
  });

  it('restarts a sandbox stopped from outside (an engine restart) instead of making another', async () => {
    const { config, request } = setUp();
    const driver = createFakeDriver();
    const runtime = runtimeOver(driver, config);
    await runtime.doExec(request('15'), { command: 'true' });
    const [id] = driver.sandboxes.keys();
    driver.stopFromOutside(id!);
    expect((await runtime.doExec(request('15'), { command: 'echo up' })).stdout).toBe('up\n');
    expect(creates(driver)).toHaveLength(1);
    expect(driver.sandboxes.get(id!)!.state).toBe('running');
  });

  it('recreates an idle sandbox whose settings changed, and leaves a busy one until it is idle', async () => {
    const { config, request } = setUp();
    const driver = createFakeDriver();
    await runtimeOver(driver, config).doExec(request('16'), { command: 'true' });
    const [oldId] = driver.sandboxes.keys();
    const warnings: string[] = [];
    const changed = parseTerminalConfig({ ...config, docker_pids_limit: 100 });
    driver.busy.add(oldId!);
    const busyRuntime = runtimeOver(driver, changed, { logger: { info: () => undefined, warn: (line) => warnings.push(line), error: () => undefined } });
    await busyRuntime.doExec(request('16'), { command: 'true' });
    expect([...driver.sandboxes.keys()]).toEqual([oldId]);
    expect(warnings.join('\n')).toMatch(/settings of berth-\w+ changed, but it is busy/);
    driver.busy.clear();
    const idleRuntime = runtimeOver(driver, changed);
    await idleRuntime.doExec(request('16'), { command: 'true' });
    const [newId] = driver.sandboxes.keys();
    expect(newId).not.toBe(oldId);
    expect(driver.sandboxes.get(newId!)!.spec.limits.pids).toBe(100);
  });

  it('waits for a restart when the driver cannot tell a busy sandbox from an idle one', async () => {
    const { config, request } = setUp();
    const driver = createFakeDriver({ processList: false });
    await runtimeOver(driver, config).doExec(request('17'), { command: 'true' });
    const [oldId] = driver.sandboxes.keys();
    await runtimeOver(driver, parseTerminalConfig({ ...config, docker_pids_limit: 100 })).doExec(request('17'), { command: 'true' });
    expect([...driver.sandboxes.keys()]).toEqual([oldId]);
  });

  it('stops the least recently used idle sandbox beyond docker_max_running', async () => {
    const { config, request } = setUp({ docker_max_running: 2 });
    const driver = createFakeDriver();
    const runtime = runtimeOver(driver, config);
    for (const user of ['21', '22', '23']) await runtime.doExec(request(user), { command: 'true' });
    const states = Object.fromEntries((await runtime.list()).map((info) => [info.userId, info.state]));
    expect(states).toEqual({ '21': 'stopped', '22': 'running', '23': 'running' });
    expect((await runtime.doExec(request('21'), { command: 'echo back' })).stdout).toBe('back\n');
    expect(Object.fromEntries((await runtime.list()).map((info) => [info.userId, info.state]))).toEqual({ '21': 'running', '22': 'stopped', '23': 'running' });
  });

  it('a command for the sandbox the cap is stopping waits for the stop, then runs in it started again (the capacity race)', async () => {
    const { config, request } = setUp({ docker_max_running: 2 });
    const driver = createFakeDriver();
    const logs: string[] = [];
    const runtime = runtimeOver(driver, config, {
      logger: { info: (line) => void logs.push(line), warn: (line) => void logs.push(line), error: (line) => void logs.push(line) },
    });
    for (const user of ['41', '42']) await runtime.doExec(request(user), { command: 'true' });
    const first = [...driver.sandboxes.keys()][0]!;
    driver.stopDelayMs = 400;
    // 43's first command stops 41, the least recently used; 41's user writes while the engine
    // is still stopping it, and their command must not run in a sandbox about to stop.
    const third = runtime.doExec(request('43'), { command: 'true' });
    while (!driver.calls.includes(`stop ${first}`)) await sleep(5);
    const back = await runtime.doExec(request('41'), { command: 'sleep 0.6; echo back' });
    expect(back).toMatchObject({ exitCode: 0, stdout: 'back\n' });
    // Not by luck of a retry: on a real engine the retry can meet the same stopping sandbox.
    expect(logs.filter((line) => /was gone/.test(line))).toEqual([]);
    await third;
    expect(driver.sandboxes.get(first)?.state).toBe('running');
  });

  it('stops the least recently used beyond the cap docker_max_running: auto derives from the host', async () => {
    // 3 GB of memory per sandbox on the host this driver describes (8 GB): 2 fit.
    const { config, request } = setUp({ container_memory: 3072 });
    const driver = createFakeDriver();
    driver.describe = async () => ({
      engine: 'fake',
      endpoint: 'fake',
      discovery: 'given',
      version: '1',
      apiVersion: '1',
      warnings: [],
      host: { memoryMb: 8192, cpus: 16 },
    });
    const runtime = runtimeOver(driver, config);
    for (const user of ['24', '25', '26']) await runtime.doExec(request(user), { command: 'true' });
    expect(Object.fromEntries((await runtime.list()).map((info) => [info.userId, info.state]))).toEqual({ '24': 'stopped', '25': 'running', '26': 'running' });
  });

  it('with the shared bound in force, docker_max_running: auto stops sandboxes when the bound fills up, not when their limits add up', async () => {
    // Five sandboxes of 3 GB each on a host of 8 GB: the old count (limits added up) would keep 2.
    const { config, request } = setUp({ container_memory: 3072, docker_cgroup_parent: 'test-bound', docker_total_memory: 4096 });
    const cgroupRoot = mkdtempSync(path.join(tmpdir(), 'berth-cgroup-'));
    folders.push(cgroupRoot);
    const memory = path.join(cgroupRoot, 'memory', 'test-bound');
    const pids = path.join(cgroupRoot, 'pids', 'test-bound');
    // As the kernel lays out a cgroup v1 parent (it makes a new cgroup's files itself).
    for (const [folder, files] of [
      [memory, { 'memory.limit_in_bytes': '', 'memory.usage_in_bytes': String(100 * 2 ** 20), 'memory.stat': 'total_inactive_file 0\n' }],
      [pids, { 'pids.max': '', 'pids.current': '20' }],
    ] as const) {
      mkdirSync(folder, { recursive: true });
      for (const [name, value] of Object.entries(files)) writeFileSync(path.join(folder, name), value);
    }
    const driver = createFakeDriver();
    driver.describe = async () => ({
      engine: 'fake',
      endpoint: 'fake',
      discovery: 'given',
      version: '1',
      apiVersion: '1',
      warnings: [],
      host: { memoryMb: 8192, cpus: 16 },
      cgroups: { manager: 'cgroupfs', version: 1 },
    });
    const logs: string[] = [];
    const runtime = createSandboxRuntime({
      driver,
      settings: sandboxSettings(config),
      reapIntervalMs: 0,
      firstLaunchWaitMs: 0,
      cgroupRoot,
      logger: { info: (line) => logs.push(line), warn: (line) => logs.push(line), error: (line) => logs.push(line) },
    });
    runtimes.push(runtime);
    for (const user of ['41', '42', '43', '44', '45']) await runtime.doExec(request(user), { command: 'true' });
    expect(readFileSync(path.join(memory, 'memory.limit_in_bytes'), 'utf8')).toBe(String(4096 * 2 ** 20));
    expect((await runtime.list()).filter((info) => info.state === 'running')).toHaveLength(5);
    expect([...driver.sandboxes.values()].every((sandbox) => sandbox.spec.limits.cgroupParent === '/test-bound')).toBe(true);

    // Each sandbox's own cgroup under the parent, as the engine makes it (named by container id):
    // 41 holds next to nothing, 42 and 43 hold 300 MB each, 44 and 45 10 MB.
    const held: Record<string, number> = { '41': 1, '42': 300, '43': 300, '44': 10, '45': 10 };
    for (const info of await runtime.list()) {
      const id = info.containerId;
      for (const [folder, file, value] of [
        [memory, 'memory.usage_in_bytes', String(held[String(info.userId)]! * 2 ** 20)],
        [memory, 'memory.stat', 'total_inactive_file 0\n'],
        [pids, 'pids.current', '3'],
      ] as const) {
        mkdirSync(path.join(folder, id), { recursive: true });
        writeFileSync(path.join(folder, id, file), value);
      }
    }
    // The bound is 90 % full (page cache that could be dropped not counted): for a new user,
    // the least recently used idle sandboxes that hold something stop, only until it would be
    // under 85 % again; one that holds next to nothing is left running, and so is a busy one
    // (42: a job of its user still runs).
    const busy = (await runtime.list()).find((info) => info.userId === '42')!.containerId;
    driver.busy.add(busy);
    writeFileSync(path.join(memory, 'memory.usage_in_bytes'), String(3986 * 2 ** 20));
    writeFileSync(path.join(memory, 'memory.stat'), `total_inactive_file ${300 * 2 ** 20}\n`);
    await runtime.doExec(request('46'), { command: 'true' });
    expect(Object.fromEntries((await runtime.list()).map((info) => [info.userId, info.state]))).toEqual({
      '41': 'running',
      '42': 'running',
      '43': 'stopped',
      '44': 'running',
      '45': 'running',
      '46': 'running',
    });
    expect(
      logs.filter((line) =>
        /stopping .*least recently used, because the sandboxes' shared bound is filling up \(memory 90 % of it in use; it held 300 MB\)/.test(line),
      ),
    ).toHaveLength(1);
    // Back under the bound's high mark: nobody is stopped.
    writeFileSync(path.join(memory, 'memory.usage_in_bytes'), String(1000 * 2 ** 20));
    driver.busy.delete(busy);
    await runtime.doExec(request('43'), { command: 'true' });
    expect((await runtime.list()).filter((info) => info.state === 'running')).toHaveLength(6);
    expect((await runtime.describe()).sharedBound).toEqual({ parent: '/test-bound', memoryMb: 4096, pids: expect.any(Number), enforced: true });
  });

  it('refuses a new user past docker_max_sandboxes in one line, and creates nothing', async () => {
    const { config, request } = setUp({ docker_max_sandboxes: 2 });
    const driver = createFakeDriver();
    const runtime = runtimeOver(driver, config);
    await runtime.doExec(request('27'), { command: 'true' });
    await runtime.doExec(request('28'), { command: 'true' });
    const refused = await runtime.doExec(request('29'), { command: 'true' }).catch((error: unknown) => error);
    expect(refused).toMatchObject({
      code: 'SANDBOX_LIMIT',
      message: expect.stringMatching(/already has 2 sandboxes, the most terminal\.docker_max_sandboxes \(2\) allows/),
    });
    expect((refused as Error).message).not.toMatch(/[\r\n]/);
    // Nothing for them: no sandbox, no create asked of the engine, no folder on the host.
    expect(driver.sandboxes.size).toBe(2);
    expect(driver.calls.filter((call) => call.startsWith('create '))).toHaveLength(2);
    expect(existsSync(request('29').paths.folder)).toBe(false);
    // An existing user still gets theirs.
    expect((await runtime.doExec(request('27'), { command: 'echo mine' })).stdout).toBe('mine\n');
  });

  it('removes the sandbox of a user unseen for docker_remove_after_seconds, keeping the files', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const { config, request } = setUp({ docker_remove_after_seconds: 1, docker_max_running: 1 });
    const driver = createFakeDriver();
    const runtime = runtimeOver(driver, config);
    await runtime.doExec(request('30'), { command: 'true' });
    await runtime.doExec(request('35'), { command: 'true' });
    vi.setSystemTime(Date.now() + 1_100);
    await runtime.reap();
    // 30 was stopped (one running at most), then unused for a second: removed; 35 still runs.
    expect((await runtime.list()).map((info) => info.userId)).toEqual(['35']);
    expect(existsSync(request('30').paths.workspace)).toBe(true);
  });

  it('reaps idle sandboxes, and never one a command is queued for (the reap race)', async () => {
    // The clock is the test's: "idle for longer than lifetime_seconds" must not depend on how
    // fast a loaded machine runs the first commands (only Date is faked; timers stay real).
    vi.useFakeTimers({ toFake: ['Date'] });
    const { config, request } = setUp({ lifetime_seconds: 1 });
    const driver = createFakeDriver();
    const runtime = runtimeOver(driver, config);
    await runtime.doExec(request('31'), { command: 'true' });
    await runtime.doExec(request('32'), { command: 'true' });
    expect(await runtime.reap()).toEqual([]);
    vi.setSystemTime(Date.now() + 1_100);
    // 32 gets a command in the same tick as the reap: the command must run, in a running sandbox.
    const [reaped, command] = await Promise.all([runtime.reap(), runtime.doExec(request('32'), { command: 'echo still-here' })]);
    expect(reaped).toEqual(['user:telegram:31']);
    expect(command.stdout).toBe('still-here\n');
    const states = Object.fromEntries((await runtime.list()).map((info) => [info.userId, info.state]));
    expect(states).toEqual({ '31': 'stopped', '32': 'running' });
    expect((await runtime.doExec(request('31'), { command: 'echo woke' })).stdout).toBe('woke\n');
  });

  it('a first reap adopts and stops what a previous gateway left running, by its recorded last use', async () => {
    const { sandboxDir, config, request } = setUp({ lifetime_seconds: 1 });
    const driver = createFakeDriver();
    // As a gateway makes its backend: told its sandbox root, so it knows its sandboxes before any request.
    const sandboxRoot = sandboxRootOf(sandboxDir);
    await runtimeOver(driver, config, { sandboxRoot }).doExec(request('33'), { command: 'true' });
    // The last use is recorded beside the folders (at most every few seconds); make it old.
    const marker = path.join(path.dirname(request('33').paths.workspace), '.berth-last-used');
    writeFileSync(marker, '');
    const { utimesSync } = await import('node:fs');
    utimesSync(marker, new Date(Date.now() - 60_000), new Date(Date.now() - 60_000));
    const restarted = runtimeOver(driver, config, { sandboxRoot });
    expect(await restarted.reap()).toEqual(['user:telegram:33']);
  });

  it('never reaps a sandbox that another process of the installation used lately, by the use it recorded', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const { sandboxDir, config, request } = setUp({ lifetime_seconds: 60 });
    const driver = createFakeDriver();
    const sandboxRoot = sandboxRootOf(sandboxDir);
    // Two processes on one installation: a gateway that serves the user, and another that reaps.
    const serving = runtimeOver(driver, config, { sandboxRoot });
    const reaping = runtimeOver(driver, config, { sandboxRoot });
    await serving.doExec(request('43'), { command: 'true' });
    expect(await reaping.reap()).toEqual([]);
    vi.setSystemTime(Date.now() + 50_000);
    await serving.doExec(request('43'), { command: 'true' });
    // 70 s after the reaping process adopted it, 20 s after its last use.
    vi.setSystemTime(Date.now() + 20_000);
    expect(await reaping.reap()).toEqual([]);
    vi.setSystemTime(Date.now() + 61_000);
    expect(await reaping.reap()).toEqual(['user:telegram:43']);
  });

  it("a runtime made without a sandbox root lists, reaps and stops only the sandboxes of the roots it served, never another installation's", async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const mine = setUp({ lifetime_seconds: 1 });
    const theirs = setUp({ lifetime_seconds: 1 });
    const driver = createFakeDriver();
    // Another gateway on the same engine, with a sandbox idle for a minute by its record.
    await runtimeOver(driver, theirs.config, { sandboxRoot: sandboxRootOf(theirs.sandboxDir) }).doExec(theirs.request('40'), { command: 'true' });
    const marker = path.join(path.dirname(theirs.request('40').paths.workspace), '.berth-last-used');
    writeFileSync(marker, '');
    const { utimesSync } = await import('node:fs');
    utimesSync(marker, new Date(Date.now() - 60_000), new Date(Date.now() - 60_000));
    const theirsRunning = async (): Promise<boolean> =>
      (await driver.list({ [LABELS.managedBy]: MANAGED_BY })).some(
        (sandbox) => sandbox.state === 'running' && (sandbox.labels[LABELS.workspace] ?? '').startsWith(theirs.sandboxDir),
      );
    // A backend made as a library user or a test makes one: settings, no root.
    const runtime = runtimeOver(driver, mine.config);
    expect(await runtime.list()).toEqual([]);
    expect(await runtime.reap()).toEqual([]);
    await runtime.stop('user:telegram:40');
    await runtime.remove('user:telegram:40');
    expect(await theirsRunning()).toBe(true);
    // Its own, once served, are its own; theirs stay running through its reaps.
    await runtime.doExec(mine.request('41'), { command: 'true' });
    expect((await runtime.list()).map((info) => info.userId)).toEqual(['41']);
    vi.setSystemTime(Date.now() + 1_100);
    expect(await runtime.reap()).toEqual(['user:telegram:41']);
    expect(await theirsRunning()).toBe(true);
  });

  it("refuses a sandbox of its name that is not Berth's sandbox for the scope", async () => {
    const { config, request } = setUp();
    const driver = createFakeDriver();
    const runtime = runtimeOver(driver, config);
    driver.plant(runtime.containerName(request('41')), { 'some.other': 'owner' });
    await expect(runtime.doExec(request('41'), { command: 'true' })).rejects.toMatchObject({ code: 'SANDBOX_NAME_TAKEN' });
  });

  it('renames the sandbox an earlier release named after its user, instead of making a duplicate', async () => {
    const { config, request } = setUp();
    const driver = createFakeDriver();
    const runtime = runtimeOver(driver, config);
    const legacy = driver.plant('berth-telegram-42-0123456789abcdef', {
      [LABELS.managedBy]: MANAGED_BY,
      [LABELS.scope]: 'user:telegram:42',
      [LABELS.workspace]: request('42').paths.workspace,
      [LABELS.configHash]: 'old',
    });
    // The same scope served by another installation (other folders) is not touched.
    const foreign = driver.plant('berth-telegram-42-fedcba9876543210', {
      [LABELS.managedBy]: MANAGED_BY,
      [LABELS.scope]: 'user:telegram:42',
      [LABELS.workspace]: '/elsewhere/workspace',
    });
    expect((await runtime.doExec(request('42'), { command: 'echo ok' })).stdout).toBe('ok\n');
    expect(driver.calls).toContain(`rename ${legacy.id} ${runtime.containerName(request('42'))}`);
    expect(driver.sandboxes.has(foreign.id)).toBe(true);
    // The renamed one had old settings and was idle: recreated under the new name.
    expect([...driver.sandboxes.values()].filter((sandbox) => sandbox.name === runtime.containerName(request('42')))).toHaveLength(1);
  });

  it('removes a sandbox that was created but cannot start: nothing half-created', async () => {
    const { config, request } = setUp();
    const driver = createFakeDriver();
    const runtime = runtimeOver(driver, config);
    driver.failNext('start', new SandboxError('ENGINE_ERROR', 'the fake engine cannot start it'));
    await expect(runtime.doExec(request('51'), { command: 'true' })).rejects.toMatchObject({ code: 'ENGINE_ERROR' });
    expect(driver.sandboxes.size).toBe(0);
  });

  it('retries once when the sandbox was gone before the command started, and not a second time', async () => {
    const { config, request } = setUp();
    const driver = createFakeDriver();
    const runtime = runtimeOver(driver, config);
    driver.failNext('inspect', new SandboxError('SANDBOX_GONE', 'it went'));
    expect((await runtime.doExec(request('52'), { command: 'echo ran' })).stdout).toBe('ran\n');
    // Gone again on the retry: the error is the caller's, with no third attempt (which would run it).
    const inspect = vi.spyOn(driver, 'inspect');
    inspect.mockRejectedValueOnce(new SandboxError('SANDBOX_GONE', 'it went')).mockRejectedValueOnce(new SandboxError('SANDBOX_GONE', 'it went again'));
    const marker = path.join(request('52').paths.workspace, 'ran-a-third-time');
    await expect(runtimeOver(driver, config).doExec(request('52'), { command: `touch ${marker}` })).rejects.toMatchObject({
      code: 'SANDBOX_GONE',
      message: 'it went again',
    });
    expect(inspect).toHaveBeenCalledTimes(2);
    expect(existsSync(marker)).toBe(false);
    inspect.mockRestore();
    // An error that is not "gone before it started" is not retried at all.
    driver.failNext('inspect', new SandboxError('ENGINE_ERROR', 'the engine broke'));
    const runtime2 = runtimeOver(driver, config);
    await expect(runtime2.doExec(request('52'), { command: 'true' })).rejects.toMatchObject({ code: 'ENGINE_ERROR' });
  });

  it("kills a timed-out command's process tree (exit 124) and keeps the session usable", async () => {
    const { config, request } = setUp();
    const driver = createFakeDriver();
    const runtime = runtimeOver(driver, config);
    const result = await runtime.doExec(request('53'), { command: 'echo started; (sleep 30 &) ; sleep 30', timeout: 0.5 });
    expect(result).toMatchObject({ exitCode: 124, timedOut: true });
    expect(result.stdout).toContain('started');
    expect((await runtime.doExec(request('53'), { command: 'echo after' })).stdout).toBe('after\n');
  });

  it('restarts a sandbox whose shell answered before and now does not (a fork bomb left holding every pid), then runs the command there', async () => {
    const { config, request } = setUp();
    const driver = createFakeDriver();
    const { logs, logger } = warnings();
    const runtime = runtimeOver(driver, config, { shellReadyTimeoutMs: 500, logger });
    expect((await runtime.doExec(request('59'), { command: 'echo first' })).stdout).toBe('first\n');
    const [sandbox] = driver.sandboxes.values();
    // The command leaves a process holding its shell's output (the next command needs a new
    // session), and the sandbox fills up.
    expect((await runtime.doExec(request('59'), { command: 'sleep 30 & echo left' })).stdout).toBe('left\n');
    driver.stalled.add(sandbox!.id);
    const after = await runtime.doExec(request('59'), { command: 'echo recovered' });
    expect(after).toMatchObject({ exitCode: 0, stdout: 'recovered\n' });
    expect(driver.calls).toContain(`stop ${sandbox!.id}`);
    expect(creates(driver)).toHaveLength(1);
    expect(logs.join('\n')).toMatch(/no shell could answer in berth-[0-9a-f]+; restarting the sandbox/);
    // Still a session: cd and export persist.
    await runtime.doExec(request('59'), { command: 'cd /; export KEPT=1' });
    expect((await runtime.doExec(request('59'), { command: 'pwd; echo $KEPT' })).stdout).toBe('/\n1\n');
  });

  it(
    'restarts a running sandbox it adopted whose new shell does not answer ' + '(a gateway restarted beside a fork bomb), then runs the command there',
    async () => {
      const { config, request } = setUp();
      const driver = createFakeDriver();
      const { logs, logger } = warnings();
      await runtimeOver(driver, config).doExec(request('61'), { command: 'true' });
      const [sandbox] = driver.sandboxes.values();
      driver.stalled.add(sandbox!.id);
      const restarted = runtimeOver(driver, config, { shellReadyTimeoutMs: 500, logger });
      expect(await restarted.doExec(request('61'), { command: 'echo recovered' })).toMatchObject({ exitCode: 0, stdout: 'recovered\n' });
      expect(driver.calls).toContain(`stop ${sandbox!.id}`);
      expect(logs.join('\n')).toMatch(/no shell could answer in berth-[0-9a-f]+; restarting the sandbox/);
      expect(creates(driver)).toHaveLength(1);
    },
  );

  it("runs one exec per command, and restarts nothing, when a new sandbox's shell never answers (an image whose shell cannot hold a session)", async () => {
    const { config, request } = setUp();
    const driver = createFakeDriver();
    const { logs, logger } = warnings();
    const runtime = runtimeOver(driver, config, { shellReadyTimeoutMs: 500, logger });
    // The fake engine's first sandbox.
    driver.stalled.add(fakeId(1));
    expect((await runtime.doExec(request('60'), { command: 'echo by-exec' })).stdout).toBe('by-exec\n');
    expect(driver.calls.filter((call) => call.startsWith('stop '))).toEqual([]);
    expect(logs.join('\n')).toMatch(/cannot hold a session .*running one exec per command/);
  });

  it('keeps what a background job writes after its command ended out of every later result, and cd/export going', async () => {
    const { config, request } = setUp();
    const driver = createFakeDriver();
    const runtime = runtimeOver(driver, config);
    // The job writes only once told to, after its command's answer came back (however slow the
    // machine), and the next command runs once it has written.
    const signals = mkdtempSync(path.join(tmpdir(), 'berth-late-'));
    folders.push(signals);
    const go = path.join(signals, 'go');
    const done = path.join(signals, 'done');
    const first = await runtime.doExec(request('54'), {
      command: `cd /; export KEEP=yes; (while [ ! -e ${go} ]; do sleep 0.05; done; echo LATE; echo LATE >&2; : > ${done}) & echo now`,
    });
    expect(first.stdout).toBe('now\n');
    writeFileSync(go, '');
    await expect.poll(() => existsSync(done), { timeout: 20_000 }).toBe(true);
    const second = await runtime.doExec(request('54'), { command: 'sleep 0.5; pwd; echo "$KEEP"' });
    expect(second).toMatchObject({ stdout: '/\nyes\n', stderr: '' });
    expect(`${second.stdout}${second.stderr}`).not.toContain('LATE');
  });

  it("kills a timed-out command's tree in the exec-per-command mode too, and nothing outside it", async () => {
    const { config, request } = setUp({ docker_exec_mode: 'exec' });
    const runtime = runtimeOver(createFakeDriver(), config);
    const marker = `berth-fallback-${randomBytes(4).toString('hex')}`;
    // A process of the host's, in a group of its own: the kill must leave it running.
    const bystander = spawn('sh', ['-c', `sleep 30; : ${marker}-bystander`], { detached: true, stdio: 'ignore' });
    try {
      const result = await runtime.doExec(request('58'), { command: `sh -c 'sleep 30; : ${marker}-child' & wait`, timeout: 1 });
      expect(result).toMatchObject({ exitCode: 124, timedOut: true });
      await expect.poll(() => hostProcessesWith(`${marker}-child`), { timeout: 20_000 }).toEqual([]);
      expect(hostProcessesWith(`${marker}-bystander`)).toHaveLength(1);
      expect(readFileSync(`/proc/${bystander.pid}/stat`, 'utf8').split(') ')[1]![0]).not.toBe('T');
      expect((await runtime.doExec(request('58'), { command: 'echo after' })).stdout).toBe('after\n');
    } finally {
      bystander.kill('SIGKILL');
    }
  });

  it("says so when a command's own EXIT trap and exit keep its cd and export from being saved, and keeps them otherwise", async () => {
    const { config, request } = setUp();
    const runtime = runtimeOver(createFakeDriver(), config);
    const kept = await runtime.doExec(request('55'), { command: "trap 'echo bye' EXIT; cd /; export A=1" });
    expect(kept).toMatchObject({ stdout: 'bye\n', stderr: '' });
    expect((await runtime.doExec(request('55'), { command: 'pwd; echo $A' })).stdout).toBe('/\n1\n');
    const lost = await runtime.doExec(request('55'), { command: "trap 'echo bye' EXIT; cd /tmp; export A=2; exit 3" });
    expect(lost.exitCode).toBe(3);
    expect(lost.stderr).toMatch(/^berth: this command ended its shell before Berth could save its cd and export/);
    expect((await runtime.doExec(request('55'), { command: 'pwd; echo $A' })).stdout).toBe('/\n1\n');
    // The save itself failed for want of memory (a full shared bound): said as that, not as an exit.
    const full = await runtime.doExec(request('55'), {
      command: 'cd /tmp; echo "sh: can\'t create state: Cannot allocate memory" >&2; rm -f "$__berth_dir/state"; mkdir "$__berth_dir/state"',
    });
    expect(full.stderr).toMatch(/\nberth: this command's cd and export could not be saved \(the sandbox's \/tmp had no memory for them/);
    expect(full.stderr).not.toMatch(/ended its shell/);
  });

  it("tells the truth when a command deletes the session's state folder, and runs the next command in a new shell", async () => {
    const { config, request } = setUp();
    const runtime = runtimeOver(createFakeDriver(), config);
    await runtime.doExec(request('56'), { command: 'export GONE=soon' });
    // $__berth_dir is the state folder in a command (on the test host, /tmp holds other tests'
    // folders too, and this runs on the host: nothing but a Berth state folder is removed).
    const wiped = await runtime.doExec(request('56'), { command: 'case "$__berth_dir" in /tmp/.berth-?*) rm -rf "$__berth_dir" ;; esac; echo wiped' });
    expect(wiped.stdout).toBe('wiped\n');
    expect(wiped.stderr).toMatch(/berth: this command deleted the sandbox's shell state .* the next command starts a new shell/);
    const next = await runtime.doExec(request('56'), { command: 'echo "[$GONE]"' });
    expect(next).toMatchObject({ stdout: '[]\n', stderr: '' });
  });

  it('purges one scope: its sandbox and folders, after the driver had its say, nothing else', async () => {
    const { config, request, sandboxDir } = setUp();
    const driver = createFakeDriver();
    const purged: string[] = [];
    driver.beforePurge = async (paths) => void purged.push(paths.folder);
    const runtime = runtimeOver(driver, config);
    await runtime.doExec(request('61'), { command: 'true' });
    await runtime.doExec(request('62'), { command: 'true' });
    await runtime.remove('user:telegram:61', { purge: true, paths: request('61').paths });
    expect(purged).toEqual([request('61').paths.folder]);
    expect(existsSync(request('61').paths.folder)).toBe(false);
    expect(existsSync(request('62').paths.workspace)).toBe(true);
    expect((await runtime.list()).map((info) => info.userId)).toEqual(['62']);
    // Beside the scope folders: the installation key, the scopes' lock files and the (empty) purge folder.
    expect(readdirSync(path.join(sandboxDir, 'docker')).sort()).toEqual(['.berth-installation-key', '.berth-locks', '.berth-purge', 'telegram@62']);
    expect(readdirSync(path.join(sandboxDir, 'docker', '.berth-purge'))).toEqual([]);
    expect(readdirSync(path.join(sandboxDir, 'docker', '.berth-locks'))).toEqual(['telegram@62.lock']);
    await expect(runtime.remove('user:telegram:62', { purge: true })).rejects.toMatchObject({ code: 'PURGE_NEEDS_PATHS' });
  });

  it('a purge by another process is never re-populated: the gateway refuses the user meanwhile, then starts them afresh', { timeout: 60_000 }, async () => {
    const { config, request } = setUp();
    const driver = createFakeDriver();
    // The gateway, and `berth rm --purge` in a process of its own (another runtime: its own lock descriptors).
    const gateway = runtimeOver(driver, config);
    const cli = runtimeOver(driver, config);
    const paths = request('63').paths;
    await gateway.doExec(request('63'), { command: 'true' });
    // Enough files that the deletion takes a while.
    const many = path.join(paths.workspace, 'many');
    execFileSync('sh', [
      '-c',
      'mkdir -p "$1" && cd "$1" && i=0; while [ $i -lt 40 ]; do mkdir d$i && (cd d$i && touch $(seq 1 1000)); i=$((i+1)); done',
      'sh',
      many,
    ]);
    writeFileSync(path.join(paths.workspace, 'old.txt'), 'old');
    const purge = cli.remove('user:telegram:63', { purge: true, paths });
    // Once the sandbox is gone and the deletion runs, the user's next command is refused at once.
    for (let i = 0; i < 6000 && driver.sandboxes.size > 0; i++) await sleep(10);
    const refused = await gateway.doExec(request('63'), { command: 'true' }).catch((error: unknown) => error);
    await purge;
    expect(refused).toMatchObject({ code: 'SANDBOX_PURGING' });
    expect(existsSync(path.join(paths.workspace, 'old.txt'))).toBe(false);
    // Afterwards the user starts afresh.
    expect((await gateway.doExec(request('63'), { command: 'echo again' })).stdout).toBe('again\n');
    expect(readdirSync(paths.workspace)).toEqual([]);
  });

  it('makes no installation key, folder or sandbox when the engine does not answer', async () => {
    const { config, request, sandboxDir } = setUp();
    const driver = createFakeDriver();
    driver.reachable = false;
    const runtime = runtimeOver(driver, config);
    await expect(runtime.doExec(request('71'), { command: 'true' })).rejects.toBeInstanceOf(EngineUnavailableError);
    expect(readdirSync(sandboxDir)).toEqual([]);
  });

  it('refuses commands after close', async () => {
    const { config, request } = setUp();
    const runtime = runtimeOver(createFakeDriver(), config);
    await runtime.close();
    await expect(runtime.doExec(request('81'), { command: 'true' })).rejects.toMatchObject({ code: 'BACKEND_CLOSED' });
  });
});

describe('the image check', () => {
  it('looks for the image again after a create that found it gone, and only then', async () => {
    const { config, request } = setUp();
    const driver = createFakeDriver();
    const hasImage = vi.spyOn(driver, 'hasImage');
    const runtime = runtimeOver(driver, config);
    driver.failNext('create', new SandboxError('ENGINE_ERROR', 'the engine failed once'));
    await expect(runtime.doExec(request('90'), { command: 'true' })).rejects.toMatchObject({ code: 'ENGINE_ERROR' });
    driver.failNext('create', new ImageNotFoundError('busybox', 'the image went away between the check and the create'));
    await expect(runtime.doExec(request('90'), { command: 'true' })).rejects.toBeInstanceOf(ImageNotFoundError);
    expect(hasImage).toHaveBeenCalledTimes(1);
    expect((await runtime.doExec(request('90'), { command: 'echo made' })).stdout).toBe('made\n');
    expect(hasImage).toHaveBeenCalledTimes(2);
  });
});

describe('brokered variables (docs/brokered-secrets.md)', () => {
  const hosts = { docker_secret_hosts: { GITHUB_TOKEN: ['api.github.com'] } };
  const environment = { HERMES_USER_TELEGRAM_41_GITHUB_TOKEN: 'ghp_value_of_41_xxxxxxxx', HERMES_USER_TELEGRAM_42_GITHUB_TOKEN: 'ghp_value_of_42_xxxxxxxx' };

  it('never hand the value to the sandbox, with networking or without: a placeholder per sandbox, the same on every command', async () => {
    for (const network of [false, true]) {
      const { config, request } = setUp({ ...hosts, docker_network: network, docker_mask_secrets: false }, environment);
      const driver = createFakeDriver();
      const runtime = runtimeOver(driver, config);
      const first = await runtime.doExec(request('41'), { command: 'echo "$GITHUB_TOKEN"; env' });
      const placeholder = first.stdout.split('\n')[0]!;
      expect(placeholder).toMatch(/^berth_secret_[0-9a-f]{32}$/);
      expect(first.stdout).not.toContain('ghp_value_of_41');
      expect((await runtime.doExec(request('41'), { command: 'echo "$GITHUB_TOKEN"' })).stdout).toBe(`${placeholder}\n`);
      const other = (await runtime.doExec(request('42'), { command: 'echo "$GITHUB_TOKEN"' })).stdout;
      expect(other).toMatch(/^berth_secret_[0-9a-f]{32}\n$/);
      expect(other).not.toBe(`${placeholder}\n`);
    }
  });

  it('warn once where the engine cannot run the proxy (its sandboxes are not on this host): placeholders, no proxy variables', async () => {
    const { config, request } = setUp({ ...hosts, docker_network: true }, environment);
    const { logs, logger } = warnings();
    const runtime = runtimeOver(createFakeDriver(), config, { logger });
    const output = (await runtime.doExec(request('41'), { command: 'echo "$GITHUB_TOKEN" "${HTTPS_PROXY:-no proxy}"' })).stdout;
    expect(output).toMatch(/^berth_secret_[0-9a-f]{32} no proxy\n$/);
    await runtime.doExec(request('42'), { command: 'true' });
    expect(logs.filter((line) => line.includes('no egress proxy'))).toHaveLength(1);
    expect(logs.join('\n')).not.toContain('ghp_value_of');
    const description = await runtime.describe();
    expect(description.egress).toMatchObject({ mode: 'open', brokered: { GITHUB_TOKEN: ['api.github.com'] } });
    expect(description.egress?.unavailable).toMatch(/not on networks of this host/);
  });

  it('refuse allow-list mode in one line where it cannot be enforced, before any sandbox is made', async () => {
    const { config, request } = setUp({ docker_egress: 'allowlist', docker_egress_domains: ['api.github.com'] }, environment);
    const driver = createFakeDriver();
    const runtime = runtimeOver(driver, config);
    const error = await runtime.doExec(request('41'), { command: 'true' }).catch((caught: unknown) => caught as SandboxError);
    expect(error).toBeInstanceOf(SandboxError);
    expect((error as SandboxError).code).toBe('EGRESS_ALLOWLIST_UNENFORCED');
    expect((error as SandboxError).message).toMatch(
      /^terminal\.docker_egress is allowlist, but it cannot be enforced here: .*; no sandbox starts with networking/,
    );
    expect((error as SandboxError).message.split('\n')).toHaveLength(1);
    expect(creates(driver)).toHaveLength(0);
    // Without networking there is nothing to hold.
    const { config: offline, request: offlineRequest } = setUp({ docker_egress: 'allowlist', docker_network: false });
    expect((await runtimeOver(createFakeDriver(), offline).doExec(offlineRequest('41'), { command: 'echo fine' })).stdout).toBe('fine\n');
  });
});
