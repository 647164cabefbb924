import { spawn } from 'node:child_process';
import { randomBytes, randomInt } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Dockerode from 'dockerode';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createBerthSandboxBackend, type BerthSandboxBackend } from './create-berth-sandbox-backend.js';
import type { OpenClawSandboxBackendHandle, OpenClawSandboxFsBridge } from './openclaw-sdk-types.js';
import { releaseDisksUnder } from '@berth/gateway-plugin';

// The backend exactly as OpenClaw drives it (factory, spawned buildExecSpec argv, runShellCommand,
// the fs bridge, the manager), against the real Docker engine, without the gateway around it.
// The whole path through a real OpenClaw gateway is tests/openclaw-e2e.
const IMAGE = 'localhost/berth-busybox:latest';
const docker = new Dockerode({ socketPath: process.env.DOCKER_HOST?.replace(/^unix:\/\//, '') || '/var/run/docker.sock' });
const root = mkdtempSync(path.join(os.tmpdir(), 'berth-openclaw-it-'));
const sandboxDir = path.join(root, 'sandboxes');
const uid = () => String(randomInt(100_000_000, 2_000_000_000));
const alice = uid();
const bob = uid();
const tokens = { alice: `tok-alice-${randomBytes(12).toString('hex')}`, bob: `tok-bob-${randomBytes(12).toString('hex')}` };
const keyOf = (user: string) => `agent:main:telegram:direct:${user}`;
const workspaceOf = (user: string) => path.join(sandboxDir, 'docker', `telegram@${user}`, 'workspace');
vi.setConfig({ testTimeout: 120_000, hookTimeout: 180_000 });

const environment: Record<string, string> = {
  PATH: process.env.PATH ?? '',
  HOME: root,
  HERMES_HOME: path.join(root, 'hermes'),
  [`HERMES_USER_TELEGRAM_${alice}_GITHUB_TOKEN`]: tokens.alice,
  [`HERMES_USER_TELEGRAM_${bob}_GITHUB_TOKEN`]: tokens.bob,
};
const pluginConfig = {
  terminal: { docker_image: IMAGE, sandbox_dir: sandboxDir, docker_network: false, lifetime_seconds: 0 },
  socket: path.join(root, 'run', 'berth.sock'),
};

let backend: BerthSandboxBackend;
const handles: Record<string, OpenClawSandboxBackendHandle> = {};
let bridge: OpenClawSandboxFsBridge;
const hostWorkspace = path.join(root, 'openclaw-workspace-alice');

async function containersUnderRoot(): Promise<Dockerode.ContainerInfo[]> {
  const all = await docker.listContainers({ all: true, filters: { label: ['dev.berth.managed-by=berth'] } });
  return all.filter((container) => container.Mounts.some((mount) => mount.Source?.startsWith(root)));
}

/** Spawns a handle's exec spec the way OpenClaw's process supervisor does: argv, exact env, cwd, stdin closed. */
async function spawnExec(
  handle: OpenClawSandboxBackendHandle,
  command: string,
  workdir = '/workspace',
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const spec = await handle.buildExecSpec({ command, workdir, env: { PATH: '/usr/bin:/bin', HOME: '/workspace' }, usePty: false });
  return new Promise((resolve, reject) => {
    const child = spawn(spec.argv[0]!, spec.argv.slice(1), { env: spec.env as NodeJS.ProcessEnv, cwd: spec.cwd, stdio: ['pipe', 'pipe', 'pipe'] });
    if (spec.stdinMode === 'pipe-closed') child.stdin.end();
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

const factoryParams = (sessionKey: string, workspaceDir: string) => ({
  sessionKey,
  scopeKey: `${sessionKey}:workspace:test`,
  workspaceDir,
  agentWorkspaceDir: path.join(root, 'agent-workspace'),
  cfg: { scope: 'session', workspaceAccess: 'none' as const, backend: 'berth' },
});

beforeAll(async () => {
  mkdirSync(hostWorkspace, { recursive: true });
  backend = createBerthSandboxBackend({ pluginConfig, environment });
  await backend.start();
  handles.alice = await backend.registration.factory(factoryParams(keyOf(alice), hostWorkspace));
  handles.bob = await backend.registration.factory(factoryParams(keyOf(bob), path.join(root, 'openclaw-workspace-bob')));
  bridge = handles.alice.createFsBridge!({
    sandbox: {
      workspaceDir: hostWorkspace,
      agentWorkspaceDir: path.join(root, 'agent-workspace'),
      workspaceAccess: 'none',
      containerName: handles.alice.runtimeId,
      containerWorkdir: '/workspace',
    },
  });
});

afterAll(async () => {
  await backend?.close();
  for (const container of await containersUnderRoot())
    await docker
      .getContainer(container.Id)
      .remove({ force: true, v: true })
      .catch(() => {});
  // Each user's disk (container_disk) is mounted under the root: unmounted first.
  await releaseDisksUnder(root);
  rmSync(root, { recursive: true, force: true });
});

describe('the berth sandbox backend, as OpenClaw drives it', () => {
  it("runs a spawned command in the session user's own sandbox with their own variables, masked", async () => {
    const run = await spawnExec(handles.alice!, 'printf alice > /workspace/own.txt; echo "token=[$GITHUB_TOKEN]"; pwd; id -u');
    expect(run).toMatchObject({ code: 0, stderr: '' });
    expect(run.stdout).toBe('token=[***]\n/workspace\n0\n');
    expect(readFileSync(path.join(workspaceOf(alice), 'own.txt'), 'utf8')).toBe('alice');
    expect(handles.alice!.workdir).toBe('/workspace');
  });

  it('keeps two users apart: folders, containers, tokens', async () => {
    const run = await spawnExec(
      handles.bob!,
      `printf "$GITHUB_TOKEN" > /workspace/token.txt; cat ${workspaceOf(alice)}/own.txt /workspace/../telegram@${alice}/workspace/own.txt 2>&1; ls /workspace`,
    );
    expect(run.stdout).not.toContain('alice');
    expect(run.stdout).toContain('No such file');
    expect(readFileSync(path.join(workspaceOf(bob), 'token.txt'), 'utf8')).toBe(tokens.bob);
    expect(existsSync(path.join(workspaceOf(alice), 'token.txt'))).toBe(false);
    const containers = await containersUnderRoot();
    expect(containers).toHaveLength(2);
    expect(new Set(containers.map((container) => container.Mounts.find((mount) => mount.Destination === '/workspace')?.Source))).toEqual(
      new Set([workspaceOf(alice), workspaceOf(bob)]),
    );
    expect(handles.alice!.runtimeId).not.toBe(handles.bob!.runtimeId);
    for (const handle of [handles.alice!, handles.bob!]) expect(handle.runtimeId).not.toMatch(new RegExp(`${alice}|${bob}|telegram`));
    for (const container of containers) {
      const inspected = JSON.stringify(await docker.getContainer(container.Id).inspect());
      expect(inspected).not.toContain(tokens.alice);
      expect(inspected).not.toContain(tokens.bob);
    }
  });

  it('reaches the warm session from every spawned process: export persists, the working folder is the one asked for', async () => {
    expect((await spawnExec(handles.alice!, 'export BERTH_IT=kept; mkdir -p /workspace/sub')).code).toBe(0);
    const run = await spawnExec(handles.alice!, 'echo "$BERTH_IT"; pwd', '/workspace/sub');
    expect(run.stdout).toBe('kept\n/workspace/sub\n');
    expect(await handles.alice!.validateWorkdir!('/workspace/sub')).toBe('/workspace/sub');
    expect(await handles.alice!.validateWorkdir!('/workspace/missing')).toBeNull();
  });

  it("passes the command's exit status through", async () => {
    expect((await spawnExec(handles.alice!, 'exit 7')).code).toBe(7);
  });

  it("runs OpenClaw's own scripts in the sandbox with arguments and input", async () => {
    const result = await handles.alice!.runShellCommand({ script: 'printf "%s|" "$1" "$2"; cat', args: ['one word', "it's"], stdin: 'from stdin' });
    expect(result).toMatchObject({ code: 0 });
    expect(result.stdout.toString()).toBe("one word|it's|from stdin");
    await expect(handles.alice!.runShellCommand({ script: 'echo broken >&2; exit 3' })).rejects.toThrow(/exit 3\): broken/);
    expect((await handles.alice!.runShellCommand({ script: 'exit 3', allowFailure: true })).code).toBe(3);
  });

  it("writes and reads files through the fs bridge in the user's workspace, bytes exact", async () => {
    const bytes = Buffer.from(Array.from({ length: 256 }, (_, index) => index));
    await bridge.writeFile({ filePath: '/workspace/notes/binary.bin', data: bytes });
    expect(readFileSync(path.join(workspaceOf(alice), 'notes', 'binary.bin')).equals(bytes)).toBe(true);
    expect((await bridge.readFile({ filePath: 'notes/binary.bin' })).equals(bytes)).toBe(true);
    // The token in a file reads back as it is: the edit tool writes back what it reads.
    await bridge.writeFile({ filePath: 'secret.txt', data: `token ${tokens.alice}` });
    expect((await bridge.readFile({ filePath: 'secret.txt' })).toString()).toBe(`token ${tokens.alice}`);
    // Larger than one chunk under the 1 MiB output limit.
    const big = randomBytes(3 * 1024 * 1024 + 17);
    await bridge.writeFile({ filePath: 'big.bin', data: big });
    expect((await bridge.readFile({ filePath: 'big.bin' })).equals(big)).toBe(true);
    await expect(bridge.readFile({ filePath: 'big.bin', maxBytes: 1024 })).rejects.toMatchObject({ code: 'EFBIG' });
  });

  it('answers stat, listing, folders, exclusive creation, renames and removal in the sandbox', async () => {
    expect(await bridge.stat({ filePath: '/workspace/own.txt' })).toMatchObject({ type: 'file', size: 5 });
    expect(await bridge.stat({ filePath: '/workspace/notes' })).toMatchObject({ type: 'directory' });
    expect(await bridge.stat({ filePath: '/workspace/none' })).toBeNull();
    await bridge.mkdirp({ filePath: '/workspace/a/b/c' });
    expect(await bridge.createFileExclusive!({ filePath: '/workspace/a/b/c/once.txt', data: 'first' })).toBe('created');
    expect(await bridge.createFileExclusive!({ filePath: '/workspace/a/b/c/once.txt', data: 'second' })).toBe('exists');
    expect(readFileSync(path.join(workspaceOf(alice), 'a/b/c/once.txt'), 'utf8')).toBe('first');
    await bridge.rename({ from: '/workspace/a/b/c/once.txt', to: '/workspace/moved/once.txt' });
    await bridge.copyFile!({ sourcePath: '/workspace/moved/once.txt', destinationPath: '/workspace/copied/once.txt' });
    expect(await bridge.readDirectory!({ filePath: '/workspace' })).toEqual(
      expect.arrayContaining([
        { name: 'moved', isDirectory: true },
        { name: 'own.txt', isDirectory: false },
      ]),
    );
    await bridge.remove({ filePath: '/workspace/a', recursive: true });
    expect(existsSync(path.join(workspaceOf(alice), 'a'))).toBe(false);
    await expect(bridge.remove({ filePath: '/workspace/none' })).rejects.toMatchObject({ code: 'ENOENT' });
    await bridge.remove({ filePath: '/workspace/none', force: true });
    await expect(bridge.readFile({ filePath: '/workspace/none' })).rejects.toMatchObject({ code: 'ENOENT' });
    await expect(bridge.readFile({ filePath: '/workspace/notes' })).rejects.toMatchObject({ code: 'EISDIR' });
  });

  it("reads with the file kit's rules: no link out of /workspace, no hard link, a link within /workspace followed", async () => {
    const made = await handles.alice!.runShellCommand({
      script:
        'printf mine > /workspace/kit-plain.txt; ln -sf /proc/1/environ /workspace/kit-environ; printf home > /root/kit-home.txt; ' +
        'ln -sf /root/kit-home.txt /workspace/kit-home; ln -f /workspace/kit-plain.txt /workspace/kit-twice; ln -sf kit-own.txt /workspace/kit-in; printf own > /workspace/kit-own.txt',
    });
    expect(made).toMatchObject({ code: 0 });
    for (const filePath of ['/workspace/kit-environ', '/workspace/kit-home']) {
      await expect(bridge.readFile({ filePath })).rejects.toMatchObject({
        code: 'EACCES',
        message: expect.stringMatching(/leads outside the sandbox's \/workspace/),
      });
    }
    await expect(bridge.readFile({ filePath: '/workspace/kit-twice' })).rejects.toMatchObject({
      code: 'EACCES',
      message: expect.stringMatching(/more than one hard link/),
    });
    expect((await bridge.readFile({ filePath: '/workspace/kit-in' })).toString()).toBe('own');
  });

  it("maps OpenClaw's host workspace paths onto /workspace and refuses paths outside it", async () => {
    expect(bridge.resolvePath({ filePath: path.join(hostWorkspace, 'x', 'y.txt') })).toEqual({ containerPath: '/workspace/x/y.txt', relativePath: 'x/y.txt' });
    expect(bridge.resolvePath({ filePath: 'y.txt', cwd: path.join(hostWorkspace, 'x') })).toEqual({
      containerPath: '/workspace/x/y.txt',
      relativePath: 'x/y.txt',
    });
    await bridge.writeFile({ filePath: path.join(hostWorkspace, 'mapped.txt'), data: 'mapped' });
    expect(readFileSync(path.join(workspaceOf(alice), 'mapped.txt'), 'utf8')).toBe('mapped');
    expect(existsSync(path.join(hostWorkspace, 'mapped.txt'))).toBe(false);
    expect(() => bridge.resolvePath({ filePath: `/workspace/../telegram@${bob}/workspace/token.txt` })).toThrow(/outside the sandbox's \/workspace/);
    expect(() => bridge.resolvePath({ filePath: '/etc/passwd' })).toThrow(/outside the sandbox's \/workspace/);
    await expect(bridge.remove({ filePath: '/workspace', recursive: true })).rejects.toThrow(/refusing to remove \/workspace/);
  });

  it('refuses a session key that names no single user, before any container exists', async () => {
    const before = (await containersUnderRoot()).length;
    for (const sessionKey of [`agent:main:direct:${uid()}`, 'agent:main:main']) {
      const refusal = backend.registration.factory(factoryParams(sessionKey, path.join(root, 'openclaw-workspace-x')));
      await expect(refusal).rejects.toMatchObject({ code: 'SESSION_UNATTRIBUTABLE' });
      await expect(refusal).rejects.toThrow(/session\.dmScope: per-channel-peer/);
    }
    expect(await containersUnderRoot()).toHaveLength(before);
    expect(existsSync(path.join(sandboxDir, 'docker', 'default'))).toBe(false);
  });

  it('reports and removes a sandbox through the manager, keeping the files', async () => {
    const entry = { containerName: handles.alice!.runtimeId };
    expect(await backend.registration.manager!.describeRuntime({ entry, config: {} })).toMatchObject({ running: true, configLabelMatch: true });
    await backend.registration.manager!.removeRuntime({ entry, config: {} });
    expect(await backend.registration.manager!.describeRuntime({ entry, config: {} })).toMatchObject({ running: false });
    expect(readFileSync(path.join(workspaceOf(alice), 'own.txt'), 'utf8')).toBe('alice');
    // The next command brings the sandbox back, files intact.
    expect((await spawnExec(handles.alice!, 'cat /workspace/own.txt')).stdout).toBe('alice');
  });

  it('answers the manager without serving a socket (openclaw sandbox list may run in a CLI process)', async () => {
    const cliSocket = path.join(root, 'cli-run', 'berth.sock');
    const cli = createBerthSandboxBackend({ pluginConfig: { ...pluginConfig, socket: cliSocket }, environment });
    try {
      expect(await cli.registration.manager!.describeRuntime({ entry: { containerName: handles.alice!.runtimeId }, config: {} })).toMatchObject({
        running: true,
      });
      expect(existsSync(cliSocket)).toBe(false);
    } finally {
      await cli.close();
    }
  });

  it("puts an attachment OpenClaw staged into the session user's sandbox at the path the agent is told, and nowhere else", async () => {
    const staged = 'media/inbound/openclaw-staged-0b9c4f7e-1d2a-4c3b-8e4f-5a6b7c8d9e0f';
    const bytes = Buffer.concat([Buffer.from('alice-attachment\n'), randomBytes(3000)]);
    mkdirSync(path.join(hostWorkspace, staged), { recursive: true });
    writeFileSync(path.join(hostWorkspace, staged, 'input-photo.jpg'), bytes);
    handles.alice = await backend.registration.factory(factoryParams(keyOf(alice), hostWorkspace));
    expect(readFileSync(path.join(workspaceOf(alice), staged, 'input-photo.jpg'))).toEqual(bytes);
    expect(existsSync(path.join(hostWorkspace, staged))).toBe(false);
    expect((await spawnExec(handles.alice!, `head -n 1 ${staged}/input-photo.jpg`)).stdout).toBe('alice-attachment\n');
    expect((await spawnExec(handles.bob!, 'ls /workspace/media 2>&1; true')).stdout).toMatch(/No such file/);
  });

  it("sends a MEDIA: file from the session user's own sandbox, and nothing of anyone else's", async () => {
    const bobHost = path.join(root, 'openclaw-workspace-bob');
    mkdirSync(bobHost, { recursive: true });
    await spawnExec(handles.alice!, 'mkdir -p /workspace/out && printf "alice\\000\\377bytes" > /workspace/out/a.bin');
    await backend.hooks.beforeAgentFinalize({ lastAssistantMessage: 'Here.\nMEDIA:/workspace/out/a.bin' }, { sessionKey: keyOf(alice) });
    expect(readFileSync(path.join(hostWorkspace, 'out', 'a.bin'))).toEqual(readFileSync(path.join(workspaceOf(alice), 'out', 'a.bin')));

    // Bob's links to Alice's host folders and to his sandbox's environment; his token file (an
    // earlier test wrote it); and his own file, which goes.
    await spawnExec(
      handles.bob!,
      `ln -sf ${workspaceOf(alice)}/out/a.bin /workspace/to-alice.bin; ln -sf ${hostWorkspace}/out/a.bin /workspace/to-openclaw.bin; ` +
        'ln -sf /proc/1/environ /workspace/environ.txt; printf bob > /workspace/mine.txt',
    );
    await backend.hooks.beforeAgentFinalize(
      {
        lastAssistantMessage: [
          `MEDIA:${workspaceOf(alice)}/out/a.bin`,
          'MEDIA:../openclaw-workspace-alice/out/a.bin',
          'MEDIA:/workspace/to-alice.bin',
          'MEDIA:/workspace/to-openclaw.bin',
          'MEDIA:/workspace/environ.txt',
          'MEDIA:/workspace/token.txt',
          'MEDIA:mine.txt',
        ].join('\n'),
      },
      { sessionKey: keyOf(bob) },
    );
    const placed = readdirSync(bobHost, { recursive: true, withFileTypes: true })
      .filter((entry) => entry.isFile())
      .map((entry) => path.relative(bobHost, path.join(entry.parentPath, entry.name)));
    expect(placed).toEqual(['mine.txt']);
    expect(readFileSync(path.join(bobHost, 'mine.txt'), 'utf8')).toBe('bob');
    // Alice's copy was never touched by Bob's reply.
    expect(readFileSync(path.join(hostWorkspace, 'out', 'a.bin'))).toEqual(readFileSync(path.join(workspaceOf(alice), 'out', 'a.bin')));
  });

  it("reads a file the message tool sends with the delivery checks, and the file tools' reads as before", async () => {
    const bobBridge = handles.bob!.createFsBridge!({
      sandbox: {
        workspaceDir: path.join(root, 'openclaw-workspace-bob'),
        agentWorkspaceDir: path.join(root, 'agent-workspace'),
        workspaceAccess: 'none',
        containerName: handles.bob!.runtimeId,
        containerWorkdir: '/workspace',
      },
    });
    await expect(bobBridge.readFile({ filePath: '/workspace/environ.txt', maxBytes: 1024 * 1024 })).rejects.toMatchObject({
      code: 'EACCES',
      message: expect.stringMatching(/leads outside the sandbox's \/workspace, \/root and \/tmp \(to \/proc\/1\/environ\)/),
    });
    await expect(bobBridge.readFile({ filePath: 'token.txt', maxBytes: 1024 * 1024 })).rejects.toMatchObject({
      code: 'EACCES',
      message: expect.stringMatching(/holds the value of one of the sandbox's credentials/),
    });
    await expect(bobBridge.readFile({ filePath: '/workspace/to-alice.bin', maxBytes: 1024 * 1024 })).rejects.toMatchObject({ code: 'ENOENT' });
    expect((await bobBridge.readFile({ filePath: 'mine.txt', maxBytes: 1024 * 1024 })).toString()).toBe('bob');
    // The read and edit tools (no maxBytes) keep reading the user's own files, credentials included.
    expect((await bobBridge.readFile({ filePath: 'token.txt' })).toString()).toBe(tokens.bob);
  });

  it('removes its socket when closed', async () => {
    await backend.close();
    expect(existsSync(pluginConfig.socket)).toBe(false);
    await expect(backend.start()).rejects.toThrow(/closed/);
  });
});
