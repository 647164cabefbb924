import { randomInt } from 'node:crypto';
import { access, mkdtemp, rm } from 'node:fs/promises';
import { release, tmpdir } from 'node:os';
import path from 'node:path';
import { createPlatformRegistry, createSandboxResolver, parseTerminalConfig } from '@berth/core';
import { releaseDisksUnder } from '@berth/sandbox-runtime';
import { dockerApiEngine, testBackend } from '@berth/testkit';
import Dockerode from 'dockerode';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createPodmanBackend } from './index.js';
import { libpodRuntimeOf } from './to-libpod-spec.js';

/**
 * The whole backend conformance suite on rootful Podman under gVisor: a Podman API service
 * started with `--runtime runsc` (Podman 4.3's API makes every container under its service's
 * runtime, whatever the container asks: docs/gvisor.md), which the set-up starts on a socket of
 * its own, with `docker_runtime: runsc` so that Berth checks every sandbox it makes really is
 * under gVisor.
 */
const socketPath = process.env.BERTH_PODMAN_GVISOR_SOCKET ?? '/run/podman-gvisor/podman.sock';
const docker = new Dockerode({ socketPath });
const image = process.env.BERTH_TEST_IMAGE ?? 'localhost/berth-busybox:latest';
const RUNTIME = 'runsc';

beforeAll(async () => {
  try {
    await docker.ping();
  } catch (error) {
    throw new Error(
      `no Podman API under gVisor answers on ${socketPath} (${error instanceof Error ? error.message : String(error)}); ` +
        `start it with \`podman --runtime runsc --runtime-flag network=host system service --time=0 unix://${socketPath}\` (or run ` +
        'scripts/engines.sh), then run the tests again',
    );
  }
});

// The whole suite here, on demand: every run of `.ci/run` has the Docker one under gVisor, this
// file's checks of the kernel below, and the attack cases on both engines under gVisor; the whole
// suite a second time on Podman would cost the run some 100 s on two cores (measured: Podman's
// integration suites 159 s with it, 35 s without), for a path that differs from Docker's only by
// the service's runtime. It passed whole by hand and in two whole runs of `.ci/run` (docs/gvisor.md).
const WHOLE_SUITE = process.env.BERTH_PODMAN_GVISOR_SUITE === '1';

if (WHOLE_SUITE)
  testBackend({
    name: 'podman (gVisor)',
    image,
    create: (config) => createPodmanBackend({ settings: config, socketPath }),
    configOverrides: { docker_runtime: RUNTIME },
    // gVisor shows no cgroup files inside: the pids limit is read from the engine (docs/gvisor.md).
    engine: dockerApiEngine(docker, { pidsLimitFromEngine: true }),
  });

describe('podman (gVisor): the kernel between users', () => {
  let root: string;
  beforeAll(async () => {
    root = await mkdtemp(path.join(tmpdir(), 'berth-podman-gvisor-'));
  });
  afterAll(async () => {
    await releaseDisksUnder(root);
    await rm(root, { recursive: true, force: true });
  });

  it("runs each sandbox on gVisor's kernel, and says so in describe()", async () => {
    const config = parseTerminalConfig({ docker_image: image, sandbox_dir: root, docker_runtime: RUNTIME, docker_network: false });
    const backend = createPodmanBackend({ settings: config, socketPath });
    try {
      const request = createSandboxResolver({ config, registry: createPlatformRegistry() }).resolve({
        session: { platform: 'telegram', userId: String(randomInt(1_000_000_000, 2_000_000_000)) },
      });
      // gVisor's own boot log, and its own kernel release: the host's is not in there.
      const result = await backend.doExec(request, { command: 'dmesg | head -n 1; uname -r' });
      expect(result.exitCode).toBe(0);
      expect(result.stdout).toMatch(/Starting gVisor/);
      expect(result.stdout).not.toContain(release());
      const [sandbox] = (await backend.list()).filter((entry) => entry.scopeKey === request.scope.key);
      expect(await libpodRuntimeOf(docker, sandbox!.containerId)).toBe(RUNTIME);
      expect((await backend.describe()).runtime).toMatchObject({ name: RUNTIME, configured: true, gvisor: true });
      await backend.remove(request.scope.key);
    } finally {
      await backend.close();
    }
  });

  it('answers the next command within seconds when its sandbox is removed or killed under a live session (the engine leaves the exec open)', async () => {
    const config = parseTerminalConfig({ docker_image: image, sandbox_dir: root, docker_runtime: RUNTIME, docker_network: false });
    const backend = createPodmanBackend({ settings: config, socketPath });
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

  it('tells a busy sandbox from an idle one (listed from inside, as for every gVisor sandbox)', async () => {
    const config = parseTerminalConfig({ docker_image: image, sandbox_dir: root, docker_runtime: RUNTIME, docker_network: false });
    const backend = createPodmanBackend({ settings: config, socketPath });
    try {
      const resolver = createSandboxResolver({ config, registry: createPlatformRegistry() });
      const request = resolver.resolve({ session: { platform: 'telegram', userId: String(randomInt(1_000_000_000, 2_000_000_000)) } });
      const id = await backend.doAcquire(request);
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
