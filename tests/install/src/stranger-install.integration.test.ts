import { randomInt } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import Dockerode from 'dockerode';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { releaseDisksUnder } from '@berth/gateway-plugin';
import { installPacked, publishedPackages, type InstalledProject } from './support/install-packed.js';

// Every published package as a stranger gets it: packed, installed with npm into a fresh
// project outside the workspace, type-checked with skipLibCheck false, and run on the engine.
const IMAGE = process.env.BERTH_TEST_IMAGE ?? 'localhost/berth-busybox:latest';
const docker = new Dockerode();
let project: InstalledProject;
let sandboxDir: string;

/** A consumer that touches the public surface of every package, in strict TypeScript. */
const CONSUMER = `
import { createPlatformRegistry, createSandboxResolver, parseTerminalConfig, runWithSession, type SandboxBackendV1, type SandboxDriverV1, type SandboxRequest } from '@berth/core';
import { createSandboxRuntime, sandboxSettings, type SandboxRuntime } from '@berth/sandbox-runtime';
import { createDockerBackend, createDockerDriver, type DockerBackend } from '@berth/backend-docker';
import { createPodmanBackend, type PodmanBackend } from '@berth/backend-podman';
import { createTelegramAdapter } from '@berth/platform-telegram';
import { createWhatsAppAdapter } from '@berth/platform-whatsapp';
import { testBackend, testPlatformAdapter, type TestBackendOptions } from '@berth/testkit';
import berth, { createBerth, createInProcessTerminalRegistry, type Berth } from '@berth/gateway-plugin';
import { sandboxCommandArgv, serveSandboxes, type SandboxSocketRequest } from '@berth/gateway-plugin/socket';

const config = parseTerminalConfig({ docker_image: 'busybox' });
const registry = createPlatformRegistry({ adapters: [createTelegramAdapter(), createWhatsAppAdapter()] });
const request: SandboxRequest = createSandboxResolver({ config, registry, environment: {} }).resolve({ session: { platform: 'telegram', userId: 1 } });
const driver: SandboxDriverV1 = createDockerDriver({ environment: {} });
const runtime: SandboxRuntime = createSandboxRuntime({ driver, settings: sandboxSettings(config) });
const docker: DockerBackend = createDockerBackend({ settings: config });
const podman: PodmanBackend = createPodmanBackend({ settings: config });
const backends: SandboxBackendV1[] = [runtime, docker, podman];
const options: Pick<TestBackendOptions, 'name' | 'image'> = { name: 'docker', image: 'busybox' };
const suites: Array<typeof testBackend | typeof testPlatformAdapter> = [testBackend, testPlatformAdapter];
const socketRequest: SandboxSocketRequest = { v: 1, command: 'true' };
const argv: string[] = sandboxCommandArgv({ socket: '/run/b.sock', sessionKey: 'agent:main:telegram:direct:1', command: 'ls' });
const start = async (): Promise<Berth> => createBerth({ config });
void [request, backends, options, suites, socketRequest, argv, start, serveSandboxes, berth.register, createInProcessTerminalRegistry, runWithSession];
`;

const TSCONFIG = {
  compilerOptions: {
    strict: true,
    skipLibCheck: false,
    noEmit: true,
    module: 'NodeNext',
    moduleResolution: 'NodeNext',
    target: 'ES2024',
    lib: ['ES2024'],
    types: ['node'],
    verbatimModuleSyntax: true,
  },
  include: ['consumer.ts'],
};

const HOST = `
import berth, { createInProcessTerminalRegistry } from '@berth/gateway-plugin';
import { runWithSession } from '@berth/core';
const { SANDBOX_DIR, IMAGE, USER } = process.env;
const terminal = createInProcessTerminalRegistry();
await berth.register({ specificationVersion: 'v1', terminal, config: { sandbox_dir: SANDBOX_DIR, docker_image: IMAGE, docker_network: false, lifetime_seconds: 0, container_memory: 256 }, environment: { ['HERMES_USER_TELEGRAM_' + USER + '_GITHUB_TOKEN']: 'stranger-token-' + USER } });
const environment = await terminal.get('berth-docker').createEnvironment({ taskId: 'default' });
const result = await runWithSession({ platform: 'telegram', userId: USER }, () => environment.execute('echo "token=$GITHUB_TOKEN"; pwd'));
await berth.close();
console.log(JSON.stringify(result));
`;

beforeAll(async () => {
  await docker.ping().catch((error: unknown) => {
    throw new Error(`no Docker Engine answers (${(error as Error).message}); run scripts/engines.sh first`);
  });
  sandboxDir = await mkdtemp(path.join(os.tmpdir(), 'berth-stranger-'));
  const names = (await publishedPackages()).map((entry) => entry.name);
  const typescript = JSON.parse(await readFile(path.join(import.meta.dirname, '..', '..', '..', 'node_modules', 'typescript', 'package.json'), 'utf8')) as {
    version: string;
  };
  project = await installPacked(names, { typescript: typescript.version, '@types/node': '^24' });
  await writeFile(path.join(project.folder, 'consumer.ts'), CONSUMER);
  await writeFile(path.join(project.folder, 'tsconfig.json'), JSON.stringify(TSCONFIG));
  await writeFile(path.join(project.folder, 'host.mjs'), HOST);
});

afterAll(async () => {
  if (sandboxDir) {
    const containers = await docker.listContainers({ all: true, filters: { label: ['dev.berth.managed-by=berth'] } });
    for (const container of containers.filter((item) => (item.Labels['dev.berth.workspace'] ?? '').startsWith(sandboxDir + path.sep))) {
      await docker
        .getContainer(container.Id)
        .remove({ force: true })
        .catch(() => undefined);
    }
    await releaseDisksUnder(sandboxDir);
    await rm(sandboxDir, { recursive: true, force: true });
  }
  if (project) await rm(path.dirname(project.folder), { recursive: true, force: true });
});

describe('Berth installed from its packed packages into a fresh project', () => {
  it('each package has a README, a LICENSE, repository, homepage and bugs fields, and @berth/core only as a peer', async () => {
    for (const name of (await publishedPackages()).map((entry) => entry.name)) {
      const folder = path.join(project.folder, 'node_modules', ...name.split('/'));
      const manifest = JSON.parse(await readFile(path.join(folder, 'package.json'), 'utf8')) as Record<string, unknown> & {
        dependencies?: Record<string, string>;
        peerDependencies?: Record<string, string>;
        berth?: { inline?: string[] };
      };
      expect((await readFile(path.join(folder, 'README.md'), 'utf8')).length, `${name} README`).toBeGreaterThan(200);
      expect(await readFile(path.join(folder, 'LICENSE'), 'utf8'), `${name} LICENSE`).toMatch(/^MIT License/);
      expect(manifest, name).toMatchObject({ license: 'MIT', repository: expect.anything(), homepage: expect.any(String), bugs: expect.anything() });
      expect(manifest.dependencies?.['@berth/core'], `${name} must not pin its own copy of core`).toBeUndefined();
      if (name !== '@berth/core') expect(manifest.peerDependencies?.['@berth/core'], name).toBe('>=0.1.0 <1.0.0');
      for (const [dependency, range] of Object.entries(manifest.dependencies ?? {})) expect(range, `${name} → ${dependency}`).toMatch(/^\^/);
      // A dependency built into dist (core's yaml) travels with its licence, and is no dependency.
      for (const inlined of manifest.berth?.inline ?? []) {
        expect(manifest.dependencies?.[inlined], `${name} builds ${inlined} in`).toBeUndefined();
        expect((await readFile(path.join(folder, 'dist', `LICENSE.${inlined}`), 'utf8')).length, `${name} dist/LICENSE.${inlined}`).toBeGreaterThan(100);
      }
    }
    // npm deduplicated: one copy of core for everything.
    const { stdout } = await project.command('npm', ['ls', '@berth/core', '--all', '--parseable']).catch((error: { stdout: string }) => error);
    expect(
      new Set(
        stdout
          .trim()
          .split('\n')
          .filter((line) => line.endsWith(path.join('node_modules', '@berth', 'core'))),
      ),
    ).toEqual(new Set([path.join(project.folder, 'node_modules', '@berth', 'core')]));
  });

  it('type-checks a consumer of every package with skipLibCheck false', async () => {
    const result = await project.bin('tsc', ['-p', 'tsconfig.json']).catch((error: { stdout: string; stderr: string }) => error);
    expect(`${result.stdout}${result.stderr}`).toBe('');
  });

  it('runs the plugin on the engine, and the berth binary answers', async () => {
    const user = String(randomInt(100_000_000, 999_999_999));
    const { stdout } = await project.node('host.mjs', { SANDBOX_DIR: sandboxDir, IMAGE, USER: user });
    expect(JSON.parse(stdout.trim().split('\n').at(-1)!)).toEqual({ output: 'token=***\n/workspace\n', returncode: 0 });
    const listed = await project.bin('berth', ['ls', '--json'], { TERMINAL_SANDBOX_DIR: sandboxDir, HERMES_HOME: sandboxDir });
    expect(JSON.parse(listed.stdout)).toEqual(expect.arrayContaining([expect.objectContaining({ scope: `user:telegram:${user}` })]));
  });
});
