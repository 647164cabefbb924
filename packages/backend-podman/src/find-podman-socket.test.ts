import { createServer, type Server } from 'node:http';
import { mkdtemp, mkdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { EngineUnavailableError } from '@berth/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findPodmanSocket, parseContainerHost, podmanCandidates, podmanServiceCommand } from './find-podman-socket.js';

let folder = '';
const servers: Server[] = [];

/** A fake Podman API on a Unix socket that answers /_ping with `status`. */
async function fakeEngine(socketPath: string, status = 200): Promise<void> {
  await mkdir(path.dirname(socketPath), { recursive: true });
  const server = createServer((request, response) => {
    response.writeHead(request.url === '/_ping' ? status : 404);
    response.end(status === 200 ? 'OK' : 'no');
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(socketPath, resolve));
}

beforeAll(async () => {
  folder = await mkdtemp(path.join(tmpdir(), 'berth-podman-discovery-'));
});
afterAll(async () => {
  for (const server of servers) await new Promise((resolve) => server.close(resolve));
  await rm(folder, { recursive: true, force: true });
});

describe('podmanCandidates', () => {
  it('tries CONTAINER_HOST, then the rootless socket, then the rootful one', () => {
    const candidates = podmanCandidates({ CONTAINER_HOST: 'unix:///custom/podman.sock', XDG_RUNTIME_DIR: '/run/user/1234' }, 1234);
    expect(candidates.map((candidate) => [candidate.source, candidate.endpoint])).toEqual([
      ['CONTAINER_HOST', { socketPath: '/custom/podman.sock' }],
      ['rootless', { socketPath: '/run/user/1234/podman/podman.sock' }],
      ['rootful', { socketPath: '/run/podman/podman.sock' }],
    ]);
  });

  it('derives the rootless socket from the uid when XDG_RUNTIME_DIR is unset, and has none for root', () => {
    expect(podmanCandidates({}, 1500).map((candidate) => candidate.endpoint)).toEqual([
      { socketPath: '/run/user/1500/podman/podman.sock' },
      { socketPath: '/run/podman/podman.sock' },
    ]);
    expect(podmanCandidates({}, 0).map((candidate) => candidate.source)).toEqual(['rootful']);
  });

  it('reads tcp:// and refuses schemes it cannot speak, saying what to do', () => {
    expect(parseContainerHost('tcp://10.0.0.5:8888')).toEqual({ host: '10.0.0.5', port: 8888, protocol: 'http' });
    expect(() => parseContainerHost('ssh://core@host/run/podman/podman.sock')).toThrow(/scheme ssh.*ssh -L.*unix:\/\//);
    expect(() => parseContainerHost('unix://relative.sock')).toThrow(/absolute socket path/);
  });

  it('names the start command for the rootless socket of a user, and the rootful one for root', () => {
    expect(podmanServiceCommand({ XDG_RUNTIME_DIR: '/run/user/77' }, 77)).toBe('podman system service --time=0 unix:///run/user/77/podman/podman.sock');
    expect(podmanServiceCommand({}, 0)).toBe('podman system service --time=0 unix:///run/podman/podman.sock');
  });
});

describe('findPodmanSocket', () => {
  it('takes CONTAINER_HOST when it answers, even if the rootless socket answers too', async () => {
    const custom = path.join(folder, 'a', 'custom.sock');
    const runtime = path.join(folder, 'a', 'runtime');
    await fakeEngine(custom);
    await fakeEngine(path.join(runtime, 'podman', 'podman.sock'));
    const found = await findPodmanSocket({
      environment: { CONTAINER_HOST: `unix://${custom}`, XDG_RUNTIME_DIR: runtime },
      uid: 1000,
      rootfulSocketPath: path.join(folder, 'a', 'none.sock'),
    });
    expect(found).toMatchObject({ source: 'CONTAINER_HOST', label: custom });
  });

  it('falls through a dead CONTAINER_HOST and a socket answering an error to the next that answers', async () => {
    const runtime = path.join(folder, 'b', 'runtime');
    const rootful = path.join(folder, 'b', 'rootful.sock');
    await fakeEngine(path.join(runtime, 'podman', 'podman.sock'), 500);
    await fakeEngine(rootful);
    const found = await findPodmanSocket({
      environment: { CONTAINER_HOST: `unix://${path.join(folder, 'b', 'dead.sock')}`, XDG_RUNTIME_DIR: runtime },
      uid: 1000,
      rootfulSocketPath: rootful,
    });
    expect(found).toMatchObject({ source: 'rootful', label: rootful });
  });

  it('prefers the rootless socket over the rootful one', async () => {
    const runtime = path.join(folder, 'c', 'runtime');
    const rootful = path.join(folder, 'c', 'rootful.sock');
    await fakeEngine(path.join(runtime, 'podman', 'podman.sock'));
    await fakeEngine(rootful);
    expect(await findPodmanSocket({ environment: { XDG_RUNTIME_DIR: runtime }, uid: 1000, rootfulSocketPath: rootful })).toMatchObject({ source: 'rootless' });
  });

  it('when none answers, throws EngineUnavailableError naming every endpoint tried and the command that starts the service', async () => {
    const runtime = path.join(folder, 'd', 'runtime');
    const rootful = path.join(folder, 'd', 'rootful.sock');
    const custom = path.join(folder, 'd', 'custom.sock');
    const error = await findPodmanSocket({
      environment: { CONTAINER_HOST: `unix://${custom}`, XDG_RUNTIME_DIR: runtime },
      uid: 1000,
      rootfulSocketPath: rootful,
    }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(EngineUnavailableError);
    const message = (error as Error).message;
    for (const tried of [custom, `${runtime}/podman/podman.sock`, rootful]) expect(message).toContain(tried);
    expect(message).toContain(`podman system service --time=0 unix://${runtime}/podman/podman.sock`);
    expect(message).toContain('ENOENT');
    expect(message).not.toContain('\n');
    expect((error as EngineUnavailableError).endpoint).toBe([custom, `${runtime}/podman/podman.sock`, rootful].join(', '));
  });
});
