/*
 * Rootless promises, checked as the ordinary user who runs the gateway (started by
 * scripts/run-rootless-suite.sh): files a command writes belong to that user on the host, the
 * user can read and purge them without root, nothing in the sandbox can give a file away to
 * another id, and where the engine cannot apply a pids limit, the nproc ulimit holds a fork bomb.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm, stat, unlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { createPlatformRegistry, createSandboxResolver, parseTerminalConfig, type SandboxRequest, type TerminalConfigInput } from '@berth/core';
import { whileSaturating } from '@berth/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPodmanBackend, type PodmanBackend } from './index.js';

const image = process.env.BERTH_TEST_IMAGE ?? 'localhost/berth-busybox:latest';
const runId = Math.random().toString(16).slice(2, 10);
const uid = process.getuid!();
const gid = process.getgid!();
let sandboxDir = '';
const backends: PodmanBackend[] = [];
const requests: Array<{ backend: PodmanBackend; request: SandboxRequest }> = [];

const configOf = (overrides: TerminalConfigInput = {}) =>
  parseTerminalConfig({ docker_image: image, sandbox_dir: sandboxDir, docker_network: false, lifetime_seconds: 0, container_memory: 256, ...overrides });

function setUp(overrides: TerminalConfigInput = {}): PodmanBackend {
  const backend = createPodmanBackend({ settings: configOf(overrides), namePrefix: `berth-rl${runId}-` });
  backends.push(backend);
  return backend;
}

function requestOf(backend: PodmanBackend, userId: string, overrides: TerminalConfigInput = {}): SandboxRequest {
  const resolver = createSandboxResolver({ config: configOf(overrides), registry: createPlatformRegistry(), environment: {} });
  const request = resolver.resolve({ session: { platform: 'telegram', userId } });
  requests.push({ backend, request });
  return request;
}

beforeAll(async () => {
  expect(uid, 'the rootless tests run as an ordinary user (scripts/run-rootless-suite.sh), not as root').not.toBe(0);
  sandboxDir = await mkdtemp(path.join(tmpdir(), `berth-rootless-${runId}-`));
});

afterAll(async () => {
  for (const { backend, request } of requests) await backend.remove(request.scope.key, { purge: true, paths: request.paths }).catch(() => undefined);
  for (const backend of backends) await backend.close();
  if (sandboxDir) await rm(sandboxDir, { recursive: true, force: true });
});

describe('rootless Podman', () => {
  it("is found by discovery at this user's own socket and is rootless", async () => {
    const host = await setUp().podmanHost();
    expect(host.rootless).toBe(true);
    expect(host.endpoint).toBe(`${process.env.XDG_RUNTIME_DIR}/podman/podman.sock`);
  });

  it('says at start and in describe() (berth doctor) that neither container_disk nor the egress policy holds here, instead of pretending', async () => {
    const warnings: string[] = [];
    const backend = createPodmanBackend({
      settings: configOf({ docker_network: true }),
      namePrefix: `berth-rl${runId}-`,
      logger: { info: () => undefined, warn: (line) => warnings.push(line), error: () => undefined },
    });
    backends.push(backend);
    const described = await backend.describe();
    expect(described.warnings.some((line) => /terminal\.container_disk is not enforced: mounting a per-user disk needs root/.test(line))).toBe(true);
    expect(
      described.warnings.some((line) =>
        /the egress policy is not enforced: podman sandboxes here are not on networks of terminal\.docker_network_pool/.test(line),
      ),
    ).toBe(true);
    expect(warnings.some((line) => /container_disk is not enforced/.test(line))).toBe(true);
    expect(warnings.some((line) => /egress policy is not enforced/.test(line))).toBe(true);
  });

  it('files a command writes in /workspace and /root belong to the gateway user on the host, who reads and deletes them without root', async () => {
    const backend = setUp();
    const request = requestOf(backend, `9${runId.replace(/[a-f]/g, '1')}1`);
    const result = await backend.doExec(request, {
      command:
        'id -u; echo "$HOME"; echo work > /workspace/file.txt; mkdir -p /workspace/deep/er && ' +
        'echo deep > /workspace/deep/er/file.txt; chmod 500 /workspace/deep; echo home > "$HOME/file.txt"',
    });
    expect(result).toMatchObject({ exitCode: 0, stdout: `${uid}\n/root\n` });
    // Its session and kill shell came from its launcher: their FIFOs, named after this process's random mark, are in the channel folder.
    const fifos = (await readdir(path.join(request.paths.folder, '.berth-channels'))).filter((name) => /^[0-9a-f]{16}\.(in|out|err)$/.test(name));
    expect(fifos).toHaveLength(6);
    expect(new Set(fifos.map((name) => name.slice(0, 8))).size).toBe(1);
    for (const file of [
      path.join(request.paths.workspace, 'file.txt'),
      path.join(request.paths.workspace, 'deep/er/file.txt'),
      path.join(request.paths.home, 'file.txt'),
    ]) {
      const stats = await stat(file);
      expect({ file, uid: stats.uid, gid: stats.gid }).toEqual({ file, uid, gid });
    }
    expect(await readFile(path.join(request.paths.workspace, 'file.txt'), 'utf8')).toBe('work\n');
    // The operator deletes a file while the sandbox runs, as themself.
    await unlink(path.join(request.paths.workspace, 'file.txt'));
    expect((await backend.doExec(request, { command: 'ls /workspace' })).stdout).toBe('deep\n');

    await backend.remove(request.scope.key, { purge: true, paths: request.paths });
    expect(existsSync(request.paths.folder), `${request.paths.folder} was purged without root`).toBe(false);
    expect((await backend.list()).filter((entry) => entry.scopeKey === request.scope.key)).toEqual([]);
  });

  it('a command cannot hand a file to another id (which the operator could not delete)', async () => {
    const backend = setUp();
    const request = requestOf(backend, `9${runId.replace(/[a-f]/g, '2')}2`);
    const attempt = await backend.doExec(request, {
      command:
        'echo x > /workspace/given.txt; chown 0:0 /workspace/given.txt; echo "chown=$?"; ' +
        'chown 1:1 /workspace/given.txt; echo "chown=$?"; mkdir /workspace/d && chown 2 /workspace/d; echo "chown=$?"',
    });
    expect(attempt.stdout).toBe('chown=1\nchown=1\nchown=1\n');
    for (const file of ['given.txt', 'd']) expect((await stat(path.join(request.paths.workspace, file))).uid).toBe(uid);
  });

  // Under the machine-wide lock of saturating cases, which another suite's bomb may hold first.
  it('where the engine cannot limit pids, a fork bomb is held by the nproc ulimit while another user keeps being answered', { timeout: 300_000 }, () =>
    whileSaturating(async () => {
      const backend = setUp();
      const host = await backend.podmanHost();
      const config = configOf();
      const bomber = requestOf(backend, `9${runId.replace(/[a-f]/g, '3')}3`);
      const bystander = requestOf(backend, `9${runId.replace(/[a-f]/g, '4')}4`);
      const limit = (await backend.doExec(bomber, { command: 'ulimit -u' })).stdout.trim();
      expect(limit).toBe(String(host.resourceLimits ? config.docker_nproc : Math.min(config.docker_nproc, config.docker_pids_limit)));
      expect((await backend.doExec(bystander, { command: 'echo ready' })).stdout).toBe('ready\n');

      const bomb = backend.doExec(bomber, { command: 'b(){ while :; do b & done; }; b', timeout: 5 }).then(
        (result) => ({ result }),
        (error: unknown) => ({ error }),
      );
      await sleep(1_500);
      for (let round = 0; round < 5; round++) {
        const started = Date.now();
        const answer = await backend.doExec(bystander, { command: `echo alive-${round}`, timeout: 20 });
        expect(answer, `the other user's command ${round} during the fork bomb`).toMatchObject({ exitCode: 0, stdout: `alive-${round}\n` });
        expect(Date.now() - started, `the other user's command ${round} answered within 10 s`).toBeLessThan(10_000);
        await sleep(300);
      }
      const settled = await Promise.race([bomb, sleep(60_000).then(() => 'hung' as const)]);
      expect(settled, 'the fork bomb command returned within 60 s').not.toBe('hung');
      const deadline = Date.now() + 60_000;
      let recovered = await backend.doExec(bomber, { command: 'echo recovered', timeout: 10 }).catch((error: unknown) => ({ error }));
      while (!('exitCode' in recovered && recovered.exitCode === 0) && Date.now() < deadline) {
        await sleep(1_000);
        recovered = await backend.doExec(bomber, { command: 'echo recovered', timeout: 10 }).catch((error: unknown) => ({ error }));
      }
      expect(recovered).toMatchObject({ exitCode: 0, stdout: 'recovered\n' });
    }),
  );
});
