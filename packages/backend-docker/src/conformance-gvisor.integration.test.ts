import { randomInt } from 'node:crypto';
import { access, mkdtemp, rm } from 'node:fs/promises';
import { release, tmpdir } from 'node:os';
import path from 'node:path';
import { createPlatformRegistry, createSandboxResolver, parseTerminalConfig } from '@berth/core';
import { dockerApiEngine, testBackend } from '@berth/testkit';
import { releaseDisksUnder } from '@berth/sandbox-runtime';
import { isOlderRelease, TESTED_RUNTIME_RELEASES } from '@berth/sandbox-runtime/driver';
import Docker from 'dockerode';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createDockerBackend } from './index.js';

/**
 * The whole backend conformance suite a second time, with every sandbox under gVisor
 * (`docker_runtime: runsc`, which the set-up registers: docs/gvisor.md), and a check that the
 * sandboxes really run on gVisor's kernel rather than quietly on the host's.
 */
const docker = new Docker();
const image = process.env.BERTH_TEST_IMAGE ?? 'localhost/berth-busybox:latest';
const RUNTIME = 'runsc';

beforeAll(async () => {
  const info = (await docker.info()) as { Runtimes?: Record<string, unknown> };
  if (!info.Runtimes?.[RUNTIME])
    throw new Error(`the Docker Engine has no runtime ${RUNTIME}; run scripts/engines.sh, which installs gVisor and registers it, then run the tests again`);
});

testBackend({
  name: 'docker (gVisor)',
  image,
  create: (config) => createDockerBackend({ settings: config, docker }),
  configOverrides: { docker_runtime: RUNTIME },
  // gVisor shows no cgroup files inside: the pids limit is read from the engine (docs/gvisor.md).
  engine: dockerApiEngine(docker, { pidsLimitFromEngine: true }),
});

describe('docker (gVisor): the kernel between users', () => {
  let root: string;
  beforeAll(async () => {
    root = await mkdtemp(path.join(tmpdir(), 'berth-gvisor-'));
  });
  afterAll(async () => {
    await releaseDisksUnder(root);
    await rm(root, { recursive: true, force: true });
  });

  it("runs each sandbox on gVisor's kernel, says so in describe(), and its release is the one the tests ran or newer", async () => {
    const config = parseTerminalConfig({
      docker_image: image,
      sandbox_dir: root,
      docker_runtime: RUNTIME,
      docker_network_pool: `10.${randomInt(224, 248)}.${randomInt(0, 16) * 16}.0/20`,
    });
    const backend = createDockerBackend({ settings: config, docker });
    try {
      const resolver = createSandboxResolver({ config, registry: createPlatformRegistry() });
      const request = resolver.resolve({ session: { platform: 'telegram', userId: String(randomInt(1_000_000_000, 2_000_000_000)) } });
      // gVisor's own boot log, and its own kernel release: the host's is not in there.
      const result = await backend.doExec(request, { command: 'dmesg | head -n 1; uname -r' });
      expect(result.exitCode).toBe(0);
      expect(result.stdout).toMatch(/Starting gVisor/);
      expect(result.stdout).not.toContain(release());
      const [sandbox] = (await backend.list()).filter((entry) => entry.scopeKey === request.scope.key);
      expect((await docker.getContainer(sandbox!.containerId).inspect()).HostConfig.Runtime).toBe(RUNTIME);
      const description = await backend.describe();
      expect(description.runtime).toMatchObject({ name: RUNTIME, configured: true, gvisor: true });
      expect(description.runtime!.fallbacks.length).toBeGreaterThan(0);
      expect(isOlderRelease(description.runtime!.release!, TESTED_RUNTIME_RELEASES.runsc!)).toBe(false);
      await backend.remove(request.scope.key);
    } finally {
      await backend.close();
    }
  });

  it('answers the next command within seconds when its sandbox is removed or killed under a live session (the engine leaves the exec open)', async () => {
    const config = parseTerminalConfig({ docker_image: image, sandbox_dir: root, docker_runtime: RUNTIME, docker_network: false });
    const backend = createDockerBackend({ settings: config, docker });
    try {
      const resolver = createSandboxResolver({ config, registry: createPlatformRegistry() });
      const request = resolver.resolve({ session: { platform: 'telegram', userId: String(randomInt(1_000_000_000, 2_000_000_000)) } });
      await backend.doExec(request, { command: 'echo kept > /workspace/kept' });
      for (const fault of ['remove', 'kill'] as const) {
        const id = await backend.doAcquire(request);
        if (fault === 'remove') await docker.getContainer(id).remove({ force: true });
        else await docker.getContainer(id).kill();
        // The command's own timeout is 60 s: an answer long before it is the sandbox found gone and made again.
        const started = Date.now();
        const result = await backend.doExec(request, { command: 'cat /workspace/kept', timeout: 60 });
        expect(result, fault).toMatchObject({ exitCode: 0, stdout: 'kept\n' });
        expect(Date.now() - started, `${fault}: answered in ms`).toBeLessThan(30_000);
      }
      await backend.remove(request.scope.key);
    } finally {
      await backend.close();
    }
  });

  it("tells a busy sandbox from an idle one from inside (the engine's own list reads gVisor's process ids as the host's)", async () => {
    const config = parseTerminalConfig({ docker_image: image, sandbox_dir: root, docker_runtime: RUNTIME, docker_network: false });
    const backend = createDockerBackend({ settings: config, docker });
    try {
      const resolver = createSandboxResolver({ config, registry: createPlatformRegistry() });
      const request = resolver.resolve({ session: { platform: 'telegram', userId: String(randomInt(1_000_000_000, 2_000_000_000)) } });
      const id = await backend.doAcquire(request);
      // The engine's list is wrong here: what it shows are not this sandbox's processes.
      const top = (await docker.getContainer(id).top({ ps_args: '-o pid,args' })) as { Processes?: string[][] };
      expect((top.Processes ?? []).some((row) => /sleep 3600/.test(row.join(' ')))).toBe(false);
      // Idle once the first command's shell has settled (busy is the safe answer meanwhile).
      await vi.waitFor(async () => expect(await backend.isBusy(id), 'idle').toBe(false), { timeout: 20_000, interval: 500 });
      const running = backend.doExec(request, { command: ': > /workspace/started; sleep 5; echo done' });
      await vi.waitFor(() => access(path.join(request.paths.workspace, 'started')), { timeout: 30_000, interval: 50 });
      expect(await backend.isBusy(id), 'running sleep 5').toBe(true);
      expect((await running).stdout).toBe('done\n');
      await vi.waitFor(async () => expect(await backend.isBusy(id), 'idle again').toBe(false), { timeout: 20_000, interval: 500 });
      await backend.remove(request.scope.key);
    } finally {
      await backend.close();
    }
  });
});
