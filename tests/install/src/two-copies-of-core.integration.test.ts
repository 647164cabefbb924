import { execFile } from 'node:child_process';
import { randomInt } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import Dockerode from 'dockerode';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { releaseDisksUnder } from '@berth/gateway-plugin';
import { installPacked, type InstalledProject } from './support/install-packed.js';

// Installed from packed tarballs as a user installs them, with a second copy of @berth/core
// nested under the plugin (what an older npm layout, a bundler or a mismatched range gives):
// the host's runWithSession and the plugin's reader come from different copies.
const run = promisify(execFile);
const IMAGE = process.env.BERTH_TEST_IMAGE ?? 'localhost/berth-busybox:latest';
const docker = new Dockerode();
let project: InstalledProject;
let sandboxRoot: string;

const HOST = `
import { BerthError, runWithSession } from '@berth/core';
import { createBerthPlugin, createInProcessTerminalRegistry } from '@berth/gateway-plugin';
const { SANDBOX_DIR, IMAGE, ALICE, BOB } = process.env;
const report = { copies: globalThis[Symbol.for('dev.berth.core.copies')] };
const terminal = createInProcessTerminalRegistry();
const plugin = createBerthPlugin();
try {
  await plugin.register({
    specificationVersion: 'v1',
    terminal,
    config: { sandbox_dir: SANDBOX_DIR, docker_image: IMAGE, docker_network: false, lifetime_seconds: 0, container_memory: 256 },
    environment: { ['HERMES_USER_TELEGRAM_' + ALICE + '_GITHUB_TOKEN']: 'token-of-alice-' + ALICE, ['HERMES_USER_TELEGRAM_' + BOB + '_GITHUB_TOKEN']: 'token-of-bob-' + BOB },
  });
} catch (error) {
  report.registerError = { code: error.code, message: error.message, isBerthError: error instanceof BerthError };
  console.log(JSON.stringify(report));
  process.exit(0);
}
const environment = await terminal.get('berth-docker').createEnvironment({ taskId: 'default' });
const message = (userId, name) => runWithSession({ platform: 'telegram', userId }, () => environment.execute('touch /workspace/' + name + ' && ls /workspace && echo "token=$GITHUB_TOKEN"'));
const [alice, bob] = await Promise.all([message(ALICE, 'alice.txt'), message(BOB, 'bob.txt')]);
report.alice = alice.output;
report.bob = bob.output;
try {
  await runWithSession({ sessionKey: 'agent:main:main' }, () => environment.execute('true'));
} catch (error) {
  report.refusal = { code: error.code, isBerthError: error instanceof BerthError };
}
await plugin.close();
console.log(JSON.stringify(report));
`;

async function nestSecondCore(sharedStateVersion?: number): Promise<void> {
  const nested = path.join(project.folder, 'node_modules', '@berth', 'gateway-plugin', 'node_modules', '@berth', 'core');
  await rm(nested, { recursive: true, force: true });
  await mkdir(nested, { recursive: true });
  await run('tar', ['-xzf', project.tarballs['@berth/core']!, '-C', nested, '--strip-components=1']);
  if (sharedStateVersion !== undefined) {
    // A copy of core built with another layout of the shared session store.
    const file = path.join(nested, 'dist', 'index.js');
    const code = await readFile(file, 'utf8');
    expect(code, 'the built core declares its shared state version').toMatch(/SHARED_STATE_VERSION = 1;/);
    await writeFile(file, code.replace(/SHARED_STATE_VERSION = 1;/, `SHARED_STATE_VERSION = ${sharedStateVersion};`));
  }
}

async function runHost(): Promise<Record<string, unknown> & { copies: unknown[] }> {
  const sandboxDir = await mkdtemp(path.join(sandboxRoot, 'run-'));
  const { stdout } = await project.node('host.mjs', {
    SANDBOX_DIR: sandboxDir,
    IMAGE,
    ALICE: String(randomInt(100_000_000, 999_999_999)),
    BOB: String(randomInt(100_000_000, 999_999_999)),
  });
  return { ...JSON.parse(stdout.trim().split('\n').at(-1)!), sandboxDir };
}

async function containersUnder(folder: string): Promise<Dockerode.ContainerInfo[]> {
  const all = await docker.listContainers({ all: true, filters: { label: ['dev.berth.managed-by=berth'] } });
  return all.filter((container) => (container.Labels['dev.berth.workspace'] ?? '').startsWith(folder + path.sep));
}

beforeAll(async () => {
  await docker.ping().catch((error: unknown) => {
    throw new Error(`no Docker Engine answers (${(error as Error).message}); run scripts/engines.sh first`);
  });
  sandboxRoot = await mkdtemp(path.join(os.tmpdir(), 'berth-install-sandboxes-'));
  project = await installPacked(['@berth/core', '@berth/gateway-plugin']);
  await writeFile(path.join(project.folder, 'host.mjs'), HOST);
});

afterAll(async () => {
  if (sandboxRoot) {
    for (const container of await containersUnder(sandboxRoot))
      await docker
        .getContainer(container.Id)
        .remove({ force: true })
        .catch(() => undefined);
    await releaseDisksUnder(sandboxRoot);
    await rm(sandboxRoot, { recursive: true, force: true });
  }
  if (project) await rm(path.dirname(project.folder), { recursive: true, force: true });
});

describe('two copies of @berth/core in one process, installed from the packed packages', () => {
  it('still give two users two sandboxes, each with only their own files and token; errors keep their identity', async () => {
    await nestSecondCore();
    const report = await runHost();
    expect(report.copies, 'the plugin loaded its own copy of core').toHaveLength(2);
    expect(report.registerError).toBeUndefined();
    const sandboxDir = report.sandboxDir as string;
    const containers = await containersUnder(sandboxDir);
    expect(containers.map((container) => container.Labels['dev.berth.scope']).sort()).toEqual(
      [...new Set(containers.map((container) => container.Labels['dev.berth.scope']))].sort(),
    );
    expect(containers).toHaveLength(2);
    expect(containers.every((container) => container.Labels['dev.berth.kind'] === 'user')).toBe(true);
    expect(report.alice).toMatch(/^alice\.txt\ntoken=\*\*\*\n$/);
    expect(report.bob).toMatch(/^bob\.txt\ntoken=\*\*\*\n$/);
    expect(existsSync(path.join(sandboxDir, 'docker', 'default'))).toBe(false);
    // An error made by the plugin's copy is a BerthError for the host's copy too.
    expect(report.refusal).toEqual({ code: 'SESSION_UNATTRIBUTABLE', isBerthError: true });
  });

  it('are refused at register() with one line when they cannot share one session store', async () => {
    await nestSecondCore(2);
    const report = await runHost();
    expect(report.registerError).toMatchObject({ code: 'CORE_VERSION_CONFLICT', isBerthError: true });
    const message = (report.registerError as { message: string }).message;
    expect(message).toMatch(/copies of @berth\/core that cannot share one session store .*npm ls @berth\/core/);
    expect(message).not.toMatch(/[\r\n]/);
    expect(await containersUnder(report.sandboxDir as string)).toHaveLength(0);
  });
});
