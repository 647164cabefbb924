import { spawn } from 'node:child_process';
import { randomInt } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Dockerode from 'dockerode';
import { releaseDisksUnder } from '@berth/gateway-plugin';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createBerthSandboxBackend, type BerthSandboxBackend } from './create-berth-sandbox-backend.js';
import type { OpenClawSandboxBackendHandle, OpenClawSandboxFsBridge } from './openclaw-sdk-types.js';

// What a user of an OpenClaw gateway can make the gateway process do on the host through
// Berth's backend, on Docker and on rootful Podman: its fs bridge made to read a 1 TB sparse
// file without a bound (OpenClaw's edit and apply_patch tools give none), or to copy a FIFO; and
// what any local user learns from the argv of the clients it spawns.
const IMAGE = process.env.BERTH_TEST_IMAGE ?? 'localhost/berth-busybox:latest';
vi.setConfig({ testTimeout: 180_000, hookTimeout: 240_000 });

describe.each(['docker', 'podman'] as const)('the OpenClaw bridge on %s, attacked by its user', (engine) => {
  const client = new Dockerode({ socketPath: engine === 'podman' ? '/run/podman/podman.sock' : '/var/run/docker.sock' });
  const root = mkdtempSync(path.join(os.tmpdir(), `berth-openclaw-attack-${engine}-`));
  const sandboxDir = path.join(root, 'sandboxes');
  const user = String(randomInt(100_000_000, 2_000_000_000));
  const sessionKey = `agent:main:telegram:direct:${user}`;
  const hostWorkspace = path.join(root, 'openclaw-workspace');
  let backend: BerthSandboxBackend;
  let handle: OpenClawSandboxBackendHandle;
  let bridge: OpenClawSandboxFsBridge;

  beforeAll(async () => {
    mkdirSync(hostWorkspace, { recursive: true });
    backend = createBerthSandboxBackend({
      pluginConfig: {
        terminal: { backend: engine, docker_image: IMAGE, sandbox_dir: sandboxDir, docker_network: false, lifetime_seconds: 0, container_disk: 0, timeout: 60 },
        socket: path.join(root, 'run', 'berth.sock'),
      },
      environment: { PATH: process.env.PATH ?? '', HOME: root, HERMES_HOME: path.join(root, 'hermes') },
    });
    await backend.start();
    handle = await backend.registration.factory({
      sessionKey,
      scopeKey: `${sessionKey}:workspace:attack`,
      workspaceDir: hostWorkspace,
      agentWorkspaceDir: path.join(root, 'agent'),
      cfg: { scope: 'session', workspaceAccess: 'none', backend: 'berth' },
    });
    bridge = handle.createFsBridge!({
      sandbox: {
        workspaceDir: hostWorkspace,
        agentWorkspaceDir: path.join(root, 'agent'),
        workspaceAccess: 'none',
        containerName: handle.runtimeId,
        containerWorkdir: '/workspace',
      },
    });
    expect((await handle.runShellCommand({ script: 'echo ready' })).stdout.toString()).toBe('ready\n');
  });

  afterAll(async () => {
    await backend?.close();
    const all = await client.listContainers({ all: true, filters: { label: ['dev.berth.managed-by=berth'] } });
    for (const container of all.filter((info) => (info.Labels?.['dev.berth.workspace'] ?? '').startsWith(sandboxDir))) {
      await client
        .getContainer(container.Id)
        .remove({ force: true })
        .catch(() => undefined);
    }
    await releaseDisksUnder(sandboxDir);
    rmSync(root, { recursive: true, force: true });
  });

  it("refuses at once to read a 1 TB sparse file for a tool that gives no maxBytes, and the gateway's memory stays put", async () => {
    const made = await handle.runShellCommand({
      script:
        'dd if=/dev/zero of=/workspace/huge bs=1 count=0 seek=1099511627776 2>/dev/null || ' +
        'truncate -s 1099511627776 /workspace/huge; stat -c %s /workspace/huge',
    });
    expect(made.stdout.toString()).toBe('1099511627776\n');
    const before = process.memoryUsage().rss;
    const started = performance.now();
    // As OpenClaw's edit and apply_patch tools call it: no maxBytes.
    const read = await bridge.readFile({ filePath: '/workspace/huge' }).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(read).toMatchObject({ code: 'EFBIG', message: expect.stringMatching(/^File exceeds 16777216 bytes: \/workspace\/huge/) });
    // Refused from the file's size, not after reading it: well within terminal.timeout (60 s).
    expect(performance.now() - started).toBeLessThan(20_000);
    expect(process.memoryUsage().rss - before).toBeLessThan(64 * 1024 * 1024);
    // A caller's larger maxBytes does not lift the bound either.
    await expect(bridge.readFile({ filePath: '/workspace/huge', maxBytes: 2 ** 50 })).rejects.toMatchObject({ code: 'EFBIG' });
  });

  it('refuses a file that grows while it is read in chunks, rather than read on and on', async () => {
    // A writer appending in the sandbox while the bridge reads (each chunk is one command).
    await handle.runShellCommand({
      script:
        'head -c 4000000 /dev/zero > /workspace/growing; (i=0; while [ $i -lt 600 ]; ' +
        'do head -c 100000 /dev/zero >> /workspace/growing; sleep 0.05; i=$((i+1)); done) >/dev/null 2>&1 &',
    });
    // The writer is under way before the read: a second append seen (once, on a busy machine, the
    // read began after the first and met no other, and read the file whole).
    const sizeNow = async (): Promise<number> => Number((await handle.runShellCommand({ script: 'stat -c %s /workspace/growing' })).stdout.toString().trim());
    await expect.poll(sizeNow, { timeout: 10_000, interval: 50 }).toBeGreaterThan(4_100_000);
    const read = await bridge.readFile({ filePath: '/workspace/growing' }).then(
      (bytes) => bytes.length,
      (error: unknown) => error,
    );
    // Either it was read whole between two appends (it cannot be, at 2 MB a second), or refused.
    expect(read).toMatchObject({ code: 'EAGAIN', message: expect.stringMatching(/changed (size )?while it was read/) });
    await handle.runShellCommand({ script: 'pkill -f "head -c 100000" ; rm -f /workspace/growing', allowFailure: true });
  });

  it("copying or overwriting a FIFO is refused at once, and the user's next command is not stuck behind it", async () => {
    await handle.runShellCommand({ script: 'mkfifo /workspace/pipe' });
    const started = performance.now();
    await expect(bridge.copyFile!({ sourcePath: '/workspace/pipe', destinationPath: '/workspace/copy' })).rejects.toMatchObject({
      message: expect.stringMatching(/not a regular file/),
    });
    await expect(bridge.writeFile({ filePath: '/workspace/pipe', data: 'x' })).rejects.toMatchObject({ message: expect.stringMatching(/not a regular file/) });
    await handle.runShellCommand({ script: 'echo hello > /workspace/plain' });
    await expect(bridge.copyFile!({ sourcePath: '/workspace/plain', destinationPath: '/workspace/pipe' })).rejects.toMatchObject({
      message: expect.stringMatching(/not a regular file/),
    });
    expect((await handle.runShellCommand({ script: 'echo next' })).stdout.toString()).toBe('next\n');
    // Well before terminal.timeout (60 s), which is where a blocked copy would have ended.
    expect(performance.now() - started).toBeLessThan(20_000);
  });

  it("the spawned client's argv, which every local user can read, names neither the user nor the command", async () => {
    const command = `echo argv-secret-${user}; sleep 3`;
    const spec = await handle.buildExecSpec({ command, workdir: '/workspace', env: {}, usePty: false });
    const child = spawn(spec.argv[0]!, spec.argv.slice(1), { env: spec.env as NodeJS.ProcessEnv, cwd: spec.cwd, stdio: ['pipe', 'pipe', 'pipe'] });
    child.stdin.end();
    let stdout = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
    // What `ps` or /proc/<pid>/cmdline shows while it runs.
    await new Promise((resolve) => setTimeout(resolve, 500));
    const cmdline = readFileSync(`/proc/${child.pid}/cmdline`, 'utf8').split('\0').join(' ');
    expect(cmdline).not.toContain(user);
    expect(cmdline).not.toContain('argv-secret');
    expect(cmdline).not.toContain('telegram');
    expect(await exited).toBe(0);
    expect(stdout).toBe(`argv-secret-${user}\n`);
    // Its request file was read once and is gone; the folder it was in is the gateway user's alone.
    const file = spec.argv.find((word) => word.startsWith('--request-file='))!.slice('--request-file='.length);
    expect(existsSync(file)).toBe(false);
    await handle.finalizeExec?.({ status: 'completed', exitCode: 0, timedOut: false, token: spec.finalizeToken });
  });
});
