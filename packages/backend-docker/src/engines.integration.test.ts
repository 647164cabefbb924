/*
 * The set-up's promise, checked from Node through dockerode: both engines answer, the local
 * base image is there, and a container can be created, exec'd in and removed on each.
 */
import Docker from 'dockerode';
import { afterAll, describe, expect, it } from 'vitest';

const IMAGE = process.env.BERTH_TEST_IMAGE ?? 'localhost/berth-busybox:latest';
const ENGINES = [
  { name: 'Docker Engine', socketPath: process.env.BERTH_DOCKER_SOCKET ?? '/var/run/docker.sock' },
  { name: 'Podman', socketPath: process.env.BERTH_PODMAN_SOCKET ?? '/run/podman/podman.sock' },
];
const created: Array<{ docker: Docker; id: string }> = [];

afterAll(async () => {
  for (const { docker, id } of created)
    await docker
      .getContainer(id)
      .remove({ force: true })
      .catch(() => undefined);
});

describe.each(ENGINES)('$name through dockerode', ({ name, socketPath }) => {
  const docker = new Docker({ socketPath });

  it('answers a ping', async () => {
    await docker.ping().catch((error: unknown) => {
      throw new Error(`${name} does not answer on ${socketPath} (${(error as Error).message}); run "bash scripts/engines.sh" to start it`);
    });
  });

  it('creates a container from the local image, runs a command in it and removes it', async () => {
    const container = await docker.createContainer({
      Image: IMAGE,
      Cmd: ['sleep', '60'],
      Labels: { 'dev.berth.test': 'engine-smoke' },
      HostConfig: {
        NetworkMode: 'none',
        Ulimits: [
          { Name: 'nofile', Soft: 1024, Hard: 1024 },
          { Name: 'nproc', Soft: 1024, Hard: 1024 },
        ],
      },
    });
    created.push({ docker, id: container.id });
    await container.start();
    const exec = await container.exec({ Cmd: ['sh', '-c', 'echo hello-from-$(uname -s)'], AttachStdout: true, AttachStderr: true });
    const stream = await exec.start({ hijack: true, stdin: false });
    const chunks: Buffer[] = [];
    docker.modem.demuxStream(
      stream,
      { write: (chunk: Buffer) => chunks.push(chunk) } as unknown as NodeJS.WritableStream,
      { write: () => true } as unknown as NodeJS.WritableStream,
    );
    await new Promise((resolve) => stream.on('end', resolve));
    expect(Buffer.concat(chunks).toString()).toBe('hello-from-Linux\n');
    expect((await exec.inspect()).ExitCode).toBe(0);
    await container.remove({ force: true });
    await expect(container.inspect()).rejects.toMatchObject({ statusCode: 404 });
  });
});
