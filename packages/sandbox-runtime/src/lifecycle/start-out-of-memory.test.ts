import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createPlatformRegistry, createSandboxResolver, parseTerminalConfig, SandboxError, type SandboxRequest } from '@berth/core';
import { afterEach, describe, expect, it } from 'vitest';
import { createSandboxRuntime, type SandboxRuntime } from '../create-sandbox-runtime.js';
import { sandboxSettings } from '../sandbox-settings.js';
import { createFakeDriver, type FakeDriver } from '../testing/fake-driver.js';

// A start the kernel had no memory for: under a full shared bound, cgroup v1 charges the new
// sandbox's cgroup to the bound, and runc's mkdir of it fails (seen on Docker in the shared-bound
// attack, when a sandbox that gave way was started again while the bound was still full). The
// runtime makes room once more and starts again; a second failure is one line of Berth's.

const folders: string[] = [];
const runtimes: SandboxRuntime[] = [];
afterEach(async () => {
  for (const runtime of runtimes.splice(0)) await runtime.close();
  for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true });
});

const RUNC_ENOMEM =
  'runc create failed: unable to start container process: unable to apply cgroup configuration: ' +
  'mkdir /sys/fs/cgroup/memory/berth-123456/0123abcd: cannot allocate memory';

function setUp(): { driver: FakeDriver; runtime: SandboxRuntime; request: (userId: string) => SandboxRequest; failStarts: (count: number) => void } {
  const sandboxDir = mkdtempSync(path.join(tmpdir(), 'berth-start-oom-'));
  folders.push(sandboxDir);
  const config = parseTerminalConfig({ sandbox_dir: sandboxDir, lifetime_seconds: 0, container_disk: 0 });
  const resolver = createSandboxResolver({ config, registry: createPlatformRegistry(), environment: {} });
  const driver = createFakeDriver();
  const start = driver.start.bind(driver);
  let failing = 0;
  driver.start = async (...args) => {
    if (failing > 0) {
      failing -= 1;
      driver.calls.push(`start failed ${args[0]}`);
      throw new SandboxError('ENGINE_ERROR', RUNC_ENOMEM);
    }
    return start(...args);
  };
  const runtime = createSandboxRuntime({ driver, settings: sandboxSettings(config), reapIntervalMs: 0, firstLaunchWaitMs: 0 });
  runtimes.push(runtime);
  return {
    driver,
    runtime,
    request: (userId) => resolver.resolve({ session: { platform: 'telegram', userId } }),
    failStarts: (count) => {
      failing = count;
    },
  };
}

describe('a start the kernel had no memory for', () => {
  it('is tried once more after room is made, and the command runs', async () => {
    const { driver, runtime, request, failStarts } = setUp();
    failStarts(1);
    const result = await runtime.doExec(request('61'), { command: 'echo started' });
    expect(result.stdout).toBe('started\n');
    expect(driver.calls.filter((call) => call.startsWith('start'))).toHaveLength(2);
    // A sandbox that was stopped (it gave way) and meets the full bound as it starts again.
    const [sandbox] = [...driver.sandboxes.values()];
    await driver.stop(sandbox!.id, 0);
    failStarts(1);
    expect((await runtime.doExec(request('61'), { command: 'echo again' })).stdout).toBe('again\n');
    expect(driver.sandboxes.size).toBe(1);
  });

  it("fails twice: refused in one line of Berth's, naming the setting, and nothing half-created is left", async () => {
    const { driver, runtime, request, failStarts } = setUp();
    failStarts(2);
    const error = await runtime.doExec(request('62'), { command: 'true' }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(SandboxError);
    expect(error).toMatchObject({ code: 'SANDBOX_LIMIT' });
    const message = (error as Error).message;
    expect(message.split('\n')).toHaveLength(1);
    expect(message).toMatch(/could not start: .*no memory.*terminal\.docker_total_memory/);
    expect(message).not.toContain('runc');
    expect(driver.sandboxes.size).toBe(0);
    // The next command, with memory free, starts the user's sandbox.
    expect((await runtime.doExec(request('62'), { command: 'echo fine' })).stdout).toBe('fine\n');
  });

  it('any other failure to start is not tried again', async () => {
    const { driver, runtime, request } = setUp();
    driver.failNext('start', new SandboxError('ENGINE_ERROR', 'the fake engine cannot start it'));
    await expect(runtime.doExec(request('63'), { command: 'true' })).rejects.toMatchObject({ code: 'ENGINE_ERROR' });
    expect(driver.calls.filter((call) => call.startsWith('start'))).toHaveLength(1);
  });
});
