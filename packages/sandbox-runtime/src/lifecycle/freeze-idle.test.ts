import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createPlatformRegistry, createSandboxResolver, parseTerminalConfig, sandboxRootOf, type SandboxRequest } from '@berth/core';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createSandboxRuntime, type SandboxRuntime } from '../create-sandbox-runtime.js';
import { sandboxSettings } from '../sandbox-settings.js';
import { createFakeDriver, type FakeDriver } from '../testing/fake-driver.js';

// Freezing idle sandboxes (docker_freeze_seconds) against the fake engine, whose sandboxes' shells
// are host processes: a freeze stops them (SIGSTOP) and a thaw continues them, so a command sent
// to a frozen shell would not answer. The real engines: the conformance suites' freeze test.
const folders: string[] = [];
const runtimes: SandboxRuntime[] = [];
afterEach(async () => {
  vi.useRealTimers();
  for (const runtime of runtimes.splice(0)) await runtime.close();
  for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true });
});

function setUp(settings: Record<string, unknown>) {
  const sandboxDir = mkdtempSync(path.join(tmpdir(), 'berth-freeze-'));
  folders.push(sandboxDir);
  const config = parseTerminalConfig({ sandbox_dir: sandboxDir, container_disk: 0, ...settings });
  const resolver = createSandboxResolver({ config, registry: createPlatformRegistry(), environment: {} });
  const request = (userId: string): SandboxRequest => resolver.resolve({ session: { platform: 'telegram', userId } });
  const events: string[] = [];
  const runtimeOver = (driver: FakeDriver, logs: string[] = []): SandboxRuntime => {
    const runtime = createSandboxRuntime({
      driver,
      settings: sandboxSettings(config),
      sandboxRoot: sandboxRootOf(sandboxDir),
      reapIntervalMs: 0,
      firstLaunchWaitMs: 0,
      observer: { command: () => undefined, event: (entry, event) => void events.push(`${event} ${entry.owner.userId}`) },
      logger: { info: () => undefined, warn: (line) => void logs.push(line), error: () => undefined },
    });
    runtimes.push(runtime);
    return runtime;
  };
  return { request, runtimeOver, events };
}

const stateOf = async (runtime: SandboxRuntime, userId: string) => (await runtime.list()).find((info) => info.userId === userId)?.state;

describe('idle sandboxes are frozen, then stopped', () => {
  it('freezes at lifetime_seconds, thaws for the next command with its cd and export, and stops after docker_freeze_seconds more', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const { request, runtimeOver, events } = setUp({ lifetime_seconds: 1, docker_freeze_seconds: 10 });
    const driver = createFakeDriver({ pause: true });
    const runtime = runtimeOver(driver);
    expect((await runtime.doExec(request('41'), { command: 'cd /tmp && export KEPT=yes' })).exitCode).toBe(0);
    vi.setSystemTime(Date.now() + 1_100);
    expect(await runtime.reap()).toEqual([]);
    expect(await stateOf(runtime, '41')).toBe('paused');
    expect(driver.calls.filter((call) => call.startsWith('pause '))).toHaveLength(1);

    // The shell was stopped with the sandbox: the answer proves it was thawed, and the same shell kept its state.
    const woke = await runtime.doExec(request('41'), { command: 'echo "$KEPT $PWD"', timeout: 10 });
    expect(woke).toMatchObject({ exitCode: 0, stdout: 'yes /tmp\n', timedOut: false });
    expect(await stateOf(runtime, '41')).toBe('running');
    // Neither made nor started again.
    expect(driver.calls.filter((call) => call.startsWith('create '))).toHaveLength(1);
    expect(driver.calls.filter((call) => call.startsWith('start '))).toHaveLength(1);

    // Idle again: frozen again; frozen for docker_freeze_seconds: stopped (thawed first, so its processes get the stop's signals).
    vi.setSystemTime(Date.now() + 1_100);
    expect(await runtime.reap()).toEqual([]);
    vi.setSystemTime(Date.now() + 9_000);
    expect(await runtime.reap()).toEqual([]);
    vi.setSystemTime(Date.now() + 1_100);
    expect(await runtime.reap()).toEqual(['user:telegram:41']);
    expect(await stateOf(runtime, '41')).toBe('stopped');
    expect(events).toEqual(['created 41', 'frozen 41', 'thawed 41', 'frozen 41', 'stopped 41']);
  });

  it('freezes by default (docker_freeze_seconds: 3600); stops at lifetime_seconds with 0, and where the engine cannot freeze or the freeze fails (warned once)', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    {
      const { request, runtimeOver } = setUp({ lifetime_seconds: 1 });
      const driver = createFakeDriver({ pause: true });
      const runtime = runtimeOver(driver);
      await runtime.doExec(request('41'), { command: 'true' });
      vi.setSystemTime(Date.now() + 1_100);
      expect(await runtime.reap()).toEqual([]);
      expect(driver.calls.filter((call) => call.startsWith('pause '))).toHaveLength(1);
    }
    for (const [settings, driver] of [
      [{ docker_freeze_seconds: 0 }, createFakeDriver({ pause: true })],
      [{ docker_freeze_seconds: 60 }, createFakeDriver()],
    ] as const) {
      const { request, runtimeOver } = setUp({ lifetime_seconds: 1, ...settings });
      const runtime = runtimeOver(driver);
      await runtime.doExec(request('42'), { command: 'true' });
      vi.setSystemTime(Date.now() + 1_100);
      expect(await runtime.reap()).toEqual(['user:telegram:42']);
      expect(driver.calls.some((call) => call.startsWith('pause '))).toBe(false);
    }
    const { request, runtimeOver } = setUp({ lifetime_seconds: 1, docker_freeze_seconds: 60 });
    const driver = createFakeDriver({ pause: true });
    const logs: string[] = [];
    const runtime = runtimeOver(driver, logs);
    await runtime.doExec(request('43'), { command: 'true' });
    driver.failNext('pause', new Error('the engine refused'));
    vi.setSystemTime(Date.now() + 1_100);
    expect(await runtime.reap()).toEqual(['user:telegram:43']);
    expect(logs.filter((line) => /could not freeze .*the engine refused.*stopping it instead/.test(line))).toHaveLength(1);
  });

  it('two commands of one user at once on a frozen sandbox: both answered in the same shell state, one thaw', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const { request, runtimeOver, events } = setUp({ lifetime_seconds: 1, docker_freeze_seconds: 60 });
    const driver = createFakeDriver({ pause: true });
    const runtime = runtimeOver(driver);
    await runtime.doExec(request('46'), { command: 'export KEPT=yes' });
    vi.setSystemTime(Date.now() + 1_100);
    expect(await runtime.reap()).toEqual([]);
    expect(await stateOf(runtime, '46')).toBe('paused');
    const answers = await Promise.all([1, 2].map((n) => runtime.doExec(request('46'), { command: `echo "$KEPT ${n}"`, timeout: 10 })));
    expect(answers.map((answer) => [answer.exitCode, answer.stdout, answer.timedOut])).toEqual([
      [0, 'yes 1\n', false],
      [0, 'yes 2\n', false],
    ]);
    // The fake engine's unpause throws when not paused: a second thaw would have failed a command.
    expect(driver.calls.filter((call) => call.startsWith('unpause '))).toHaveLength(1);
    expect(driver.calls.filter((call) => call.startsWith('create ') || call.startsWith('start '))).toHaveLength(2);
    expect(events.filter((event) => event === 'thawed 46')).toHaveLength(1);
  });

  it('a restarted gateway adopts a frozen sandbox: its next command thaws it, and the reaper stops it once frozen long enough', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const { request, runtimeOver } = setUp({ lifetime_seconds: 1, docker_freeze_seconds: 5 });
    const driver = createFakeDriver({ pause: true });
    const first = runtimeOver(driver);
    await first.doExec(request('44'), { command: 'echo kept > "$HOME/f" 2>/dev/null; true' });
    await first.doExec(request('45'), { command: 'true' });
    vi.setSystemTime(Date.now() + 1_100);
    expect(await first.reap()).toEqual([]);
    await first.close();
    const second = runtimeOver(driver);
    // The first reap adopts both, frozen: not stopped before they were frozen long enough.
    expect(await second.reap()).toEqual([]);
    expect((await second.doExec(request('44'), { command: 'echo awake', timeout: 10 })).stdout).toBe('awake\n');
    expect(await stateOf(second, '44')).toBe('running');
    vi.setSystemTime(Date.now() + 6_000);
    expect(await second.reap()).toEqual(['user:telegram:45']);
    expect(await stateOf(second, '45')).toBe('stopped');
    expect(driver.calls.filter((call) => call.startsWith('create '))).toHaveLength(2);
  });
});
