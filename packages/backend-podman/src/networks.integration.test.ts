/*
 * The per-sandbox networks on rootful Podman: each sandbox gets a /29 of docker_network_pool,
 * removing the sandbox removes its network (Podman reports "bridge" as a container's network mode,
 * so the network is found by the container's label), and a subnet already routed on the host (another engine's bridge)
 * is skipped instead of failing the user's command.
 */
import { execFileSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import Dockerode from 'dockerode';
import { createPlatformRegistry, createSandboxResolver, parseTerminalConfig, type SandboxRequest, type TerminalConfigInput } from '@berth/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPodmanBackend, type PodmanBackend } from './index.js';

const socketPath = process.env.BERTH_PODMAN_SOCKET ?? '/run/podman/podman.sock';
const docker = new Dockerode({ socketPath });
const image = process.env.BERTH_TEST_IMAGE ?? 'localhost/berth-busybox:latest';
const runId = Math.random().toString(16).slice(2, 10);
// A /28 of 10.216.0.0/16, a range no other suite allocates from, so that this file's two /29s are known
// and no other sandbox can hold one: inside the default pool (10.217.0.0/16) every sandbox's search
// starts at a hash of its name anywhere in the /16, and once a concurrent suite's sandbox took the
// /29 this test expects ("no free /29 is left", seen in a full run).
const pool = `10.216.${Math.floor(Math.random() * 256)}.${16 * Math.floor(Math.random() * 16)}/28`;
const dummy = `berthd${runId.slice(0, 6)}`;
let sandboxDir = '';
const cleanups: Array<() => Promise<unknown>> = [];

const configOf = (overrides: TerminalConfigInput = {}) =>
  parseTerminalConfig({
    docker_image: image,
    sandbox_dir: sandboxDir,
    docker_network: true,
    docker_network_pool: pool,
    container_disk: 0,
    lifetime_seconds: 0,
    container_memory: 256,
    ...overrides,
  });

function setUp(): PodmanBackend {
  const backend = createPodmanBackend({ settings: configOf(), socketPath, namePrefix: `berth-pn${runId}-` });
  cleanups.push(() => backend.close());
  return backend;
}

function requestOf(backend: PodmanBackend, userId: string): SandboxRequest {
  const resolver = createSandboxResolver({ config: configOf(), registry: createPlatformRegistry(), environment: {} });
  const request = resolver.resolve({ session: { platform: 'telegram', userId } });
  cleanups.unshift(() => backend.remove(request.scope.key, { purge: true, paths: request.paths }));
  return request;
}

const subnetOf = async (name: string) =>
  ((await docker.getNetwork(name).inspect()) as { IPAM?: { Config?: Array<{ Subnet?: string }> } }).IPAM?.Config?.[0]?.Subnet;

beforeAll(async () => {
  sandboxDir = await mkdtemp(path.join(tmpdir(), `berth-podman-networks-${runId}-`));
});

afterAll(async () => {
  for (const cleanup of cleanups) await cleanup().catch(() => undefined);
  try {
    execFileSync('ip', ['link', 'del', dummy], { stdio: 'ignore' });
  } catch {
    // Never made: the test failed before it.
  }
  if (sandboxDir) await rm(sandboxDir, { recursive: true, force: true });
});

describe('podman sandbox networks', () => {
  it('skips a subnet routed on the host, and removing the sandbox removes its network', { timeout: 120_000 }, async () => {
    const [base, prefix] = pool.split('/');
    expect(prefix).toBe('28');
    const octets = base!.split('.').map(Number);
    const at = (offset: number) => `${octets.slice(0, 3).join('.')}.${octets[3]! + offset}`;
    // Another engine's bridge on the pool's first /29, as Docker's would be (a bridge of its own): a route on the host
    // that Podman's network list does not show.
    execFileSync('ip', ['link', 'add', dummy, 'type', 'bridge']);
    execFileSync('ip', ['addr', 'add', `${at(1)}/29`, 'dev', dummy]);
    execFileSync('ip', ['link', 'set', dummy, 'up']);

    const backend = setUp();
    // The only other /29 of the pool is the one the sandbox can get (wherever its search starts:
    // the order is unit-tested in sandbox-networks.test.ts).
    const request = requestOf(backend, `7${runId.replace(/[a-f]/g, '1')}0`);
    const result = await backend.doExec(request, { command: 'ls /sys/class/net | grep -vx lo | wc -l' });
    expect(result, 'the sandbox has one interface besides loopback').toMatchObject({ exitCode: 0, stdout: '1\n' });
    const [container] = await docker.listContainers({ all: true, filters: { name: [backend.containerName(request)] } });
    // Its session and kill shell came from its launcher, not from Podman's exec.
    expect((await docker.getContainer(container!.Id).inspect()).ExecIDs ?? []).toEqual([]);
    const name = container!.Labels['dev.berth.network']!;
    expect(await subnetOf(name), 'the sandbox got the /29 that nothing on the host routes').toBe(`${at(8)}/29`);

    await backend.remove(request.scope.key, { paths: request.paths });
    await expect(docker.getNetwork(name).inspect(), 'the removed sandbox left its network behind').rejects.toMatchObject({ statusCode: 404 });
  });
});
