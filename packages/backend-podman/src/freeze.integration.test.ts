/*
 * Freezing idle sandboxes on Podman (rootful, its compatible API's pause and unpause): the
 * sandbox idle for lifetime_seconds is frozen, the next command thaws it and runs in the same
 * shell, and it is stopped once frozen for docker_freeze_seconds (docs/sandbox-runtime.md).
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
  sandboxDir = await mkdtemp(path.join(tmpdir(), 'berth-podman-freeze-'));
});
afterAll(async () => {
  await rm(sandboxDir, { recursive: true, force: true });
});

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('podman: idle sandboxes frozen, then stopped', () => {
  it('freezes an idle sandbox, thaws it for the next command (same shell), then stops it', async () => {
    const config = parseTerminalConfig({ docker_image: image, sandbox_dir: sandboxDir, lifetime_seconds: 1, docker_freeze_seconds: 3, container_disk: 0 });
    const backend = createPodmanBackend({ settings: config, socketPath, reapIntervalMs: 0 });
    const request = createSandboxResolver({ config, registry: createPlatformRegistry(), environment: {} }).resolve({
      session: { platform: 'telegram', userId: String(randomInt(1e9)) },
    });
    const state = async () => {
      const [found] = await docker.listContainers({ all: true, filters: { label: [`dev.berth.scope=${request.scope.key}`] } });
      return found?.State;
    };
    try {
      expect((await backend.doExec(request, { command: 'cd /tmp && export KEPT=yes' })).exitCode).toBe(0);
      await pause(1300);
      expect(await backend.reap()).not.toContain(request.scope.key);
      expect(await state()).toBe('paused');
      expect(await backend.doExec(request, { command: 'echo "$KEPT $PWD"', timeout: 20 })).toMatchObject({ exitCode: 0, stdout: 'yes /tmp\n' });
      expect(await state()).toBe('running');
      await pause(1300);
      expect(await backend.reap()).not.toContain(request.scope.key);
      await pause(3200);
      expect(await backend.reap()).toContain(request.scope.key);
      expect(await state()).toBe('exited');
    } finally {
      await backend.remove(request.scope.key, { purge: true }).catch(() => undefined);
      await backend.close();
    }
  });
});
