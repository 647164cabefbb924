import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createPlatformRegistry, createSandboxResolver, parseTerminalConfig, sandboxRootOf, type SandboxRequest, type TerminalConfigInput } from '@berth/core';
import Dockerode from 'dockerode';
import { createDockerBackend, type DockerBackend, type DockerBackendOptions } from '../create-docker-backend.js';
import { releaseDisksUnder } from '@berth/sandbox-runtime';

/** The local image the set-up builds; no registry is needed. */
export const TEST_IMAGE = process.env.BERTH_TEST_IMAGE ?? 'localhost/berth-busybox:latest';

/** Label on everything a test run creates, so cleanup finds it and nothing else. */
export const TEST_LABEL = 'dev.berth.test';

/** One test run's world: its own sandbox root, name prefix, label value and network. */
export interface Harness {
  readonly docker: Dockerode;
  readonly runId: string;
  readonly sandboxDir: string;
  /** A backend whose containers carry this run's label and prefix. */
  backend(config?: TerminalConfigInput, options?: Partial<DockerBackendOptions>): DockerBackend;
  /** The request of `platform:id` (or a task) with the given gateway environment. */
  request(
    target: { platform: string; userId: string } | { taskId: string },
    environment?: Record<string, string>,
    config?: TerminalConfigInput,
  ): SandboxRequest;
  /** Removes every container and network of this run, and the sandbox root. */
  cleanup(): Promise<void>;
}

/** Fails with a message saying how to start the engine, instead of skipping. */
export async function assertEngine(docker: Dockerode): Promise<void> {
  try {
    await docker.ping();
  } catch (error) {
    throw new Error(`no Docker Engine answers (${(error as Error).message}); start dockerd or run scripts/engines.sh, then run the tests again`);
  }
  try {
    await docker.getImage(TEST_IMAGE).inspect();
  } catch {
    throw new Error(`image ${TEST_IMAGE} is missing; build it with the set-up script or set BERTH_TEST_IMAGE`);
  }
}

/** Creates a harness; call `cleanup()` in `afterAll`. */
export async function createHarness(): Promise<Harness> {
  const docker = new Dockerode();
  await assertEngine(docker);
  const runId = randomBytes(4).toString('hex');
  const sandboxDir = await mkdtemp(path.join(tmpdir(), 'berth-docker-test-'));
  const backends: DockerBackend[] = [];
  const baseConfig = (config: TerminalConfigInput = {}): TerminalConfigInput => ({
    docker_image: TEST_IMAGE,
    sandbox_dir: sandboxDir,
    docker_network: false,
    container_memory: 256,
    lifetime_seconds: 0,
    ...config,
  });
  return {
    docker,
    runId,
    sandboxDir,
    backend(config, options) {
      const settings = parseTerminalConfig(baseConfig(config));
      const backend = createDockerBackend({
        settings,
        docker,
        // As the plugin makes it: this installation's sandboxes, known before its first request.
        sandboxRoot: sandboxRootOf(settings.sandbox_dir!),
        namePrefix: `berth-t${runId}-`,
        labels: { [TEST_LABEL]: runId },
        ...options,
      });
      backends.push(backend);
      return backend;
    },
    request(target, environment = {}, config) {
      const resolver = createSandboxResolver({ config: parseTerminalConfig(baseConfig(config)), registry: createPlatformRegistry(), environment });
      return 'taskId' in target
        ? resolver.resolve({ taskId: target.taskId })
        : resolver.resolve({ session: { platform: target.platform, userId: target.userId } });
    },
    async cleanup() {
      for (const backend of backends) await backend.close().catch(() => undefined);
      const containers = await docker.listContainers({ all: true, filters: { label: [`${TEST_LABEL}=${runId}`] } });
      await Promise.all(
        containers.map((container) =>
          docker
            .getContainer(container.Id)
            .remove({ force: true })
            .catch(() => undefined),
        ),
      );
      const networks = await docker.listNetworks({ filters: { label: [`${TEST_LABEL}=${runId}`] } });
      await Promise.all(
        networks.map((network) =>
          docker
            .getNetwork(network.Id)
            .remove()
            .catch(() => undefined),
        ),
      );
      await releaseDisksUnder(sandboxDir);
      await rm(sandboxDir, { recursive: true, force: true });
    },
  };
}

/** Runs `command` in a container through a plain engine exec (the test's independent view). */
export async function engineExec(docker: Dockerode, containerId: string, command: string): Promise<{ exitCode: number; output: string }> {
  const exec = await docker.getContainer(containerId).exec({ Cmd: ['/bin/sh', '-c', command], AttachStdout: true, AttachStderr: true });
  const stream = await exec.start({ hijack: true, stdin: false });
  const chunks: Buffer[] = [];
  const { PassThrough } = await import('node:stream');
  const sink = new PassThrough();
  sink.on('data', (chunk: Buffer) => chunks.push(chunk));
  docker.modem.demuxStream(stream, sink, sink);
  await new Promise((resolve) => stream.on('end', resolve));
  return { exitCode: (await exec.inspect()).ExitCode ?? -1, output: Buffer.concat(chunks).toString() };
}
