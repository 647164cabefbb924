/*
 * A runtime the engine takes and ignores: Podman 4.3's API accepts a container's OCI runtime
 * (`oci_runtime`, the compatible API's `HostConfig.Runtime`) and makes the container under its
 * service's own runtime anyway. A sandbox asked for under gVisor must never run under runc, so
 * Berth refuses, in one line naming the key, with nothing left behind (docs/backend-podman.md).
 */
import { randomInt } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createPlatformRegistry, createSandboxResolver, parseTerminalConfig } from '@berth/core';
import Dockerode from 'dockerode';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPodmanBackend } from './index.js';

const socketPath = process.env.BERTH_PODMAN_SOCKET ?? '/run/podman/podman.sock';
const docker = new Dockerode({ socketPath });
const image = process.env.BERTH_TEST_IMAGE ?? 'localhost/berth-busybox:latest';
let sandboxDir = '';

beforeAll(async () => {
  sandboxDir = await mkdtemp(path.join(tmpdir(), 'berth-podman-runtime-'));
});
afterAll(async () => {
  await rm(sandboxDir, { recursive: true, force: true });
});

describe('podman: a runtime the engine ignores', () => {
  it('refuses the sandbox in one line naming docker_runtime, never runs it under another runtime, and leaves no container', async () => {
    const config = parseTerminalConfig({ docker_image: image, sandbox_dir: sandboxDir, docker_runtime: 'runsc', docker_network: false, container_disk: 0 });
    const backend = createPodmanBackend({ settings: config, socketPath });
    try {
      const request = createSandboxResolver({ config, registry: createPlatformRegistry() }).resolve({
        session: { platform: 'telegram', userId: String(randomInt(1_000_000_000, 2_000_000_000)) },
      });
      const marker = path.join(request.paths.workspace, 'ran');
      const outcome = await backend.doExec(request, { command: `touch /workspace/ran; uname -r` }).then(
        (result) => ({ result }),
        (error: unknown) => ({ error: error as Error & { code?: string } }),
      );
      // Podman releases that honour the runtime run the sandbox under gVisor instead: that is fine too.
      if ('result' in outcome) {
        expect(outcome.result.stdout).not.toContain((await import('node:os')).release());
        return;
      }
      expect(outcome.error.code).toBe('RUNTIME_IGNORED');
      expect(outcome.error.message.split('\n')).toHaveLength(1);
      expect(outcome.error.message).toMatch(/under runc, not runsc \(terminal\.docker_runtime\).*--runtime runsc/);
      await expect(import('node:fs/promises').then((fs) => fs.access(marker))).rejects.toThrow();
      const left = await docker.listContainers({ all: true, filters: { label: [`dev.berth.scope=${request.scope.key}`] } });
      expect(left).toEqual([]);
    } finally {
      await backend.close();
    }
  });
});
