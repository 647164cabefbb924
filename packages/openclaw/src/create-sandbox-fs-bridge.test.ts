import { execFileSync, spawnSync } from 'node:child_process';
import { appendFileSync, linkSync, mkdtempSync, rmSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createSandboxFsBridge, DEFAULT_FS_READ_LIMIT } from './create-sandbox-fs-bridge.js';
import type { SandboxShell } from './create-sandbox-shell.js';

// Path resolution only: it decides what a file tool may touch before anything runs. The
// operations themselves run in a real sandbox in create-berth-sandbox-backend.integration.test.ts.
const unused: SandboxShell = {
  run: () => Promise.reject(new Error('path resolution must not run anything in the sandbox')),
  outputLimit: 1024 * 1024,
};
const bridge = createSandboxFsBridge({ shell: unused, hostWorkspaceDir: '/srv/openclaw/sandboxes/workspace-1' });

describe("the fs bridge's paths", () => {
  it('keeps sandbox paths inside /workspace and reads relative ones from the working folder', () => {
    expect(bridge.resolvePath({ filePath: '/workspace/a/../b.txt' })).toEqual({ containerPath: '/workspace/b.txt', relativePath: 'b.txt' });
    expect(bridge.resolvePath({ filePath: 'notes/c.txt' })).toEqual({ containerPath: '/workspace/notes/c.txt', relativePath: 'notes/c.txt' });
    expect(bridge.resolvePath({ filePath: 'c.txt', cwd: '/workspace/notes' })).toEqual({
      containerPath: '/workspace/notes/c.txt',
      relativePath: 'notes/c.txt',
    });
    expect(bridge.resolvePath({ filePath: '/workspace/' })).toEqual({ containerPath: '/workspace', relativePath: '' });
  });

  it("reads a path in OpenClaw's own host workspace as the same place in the sandbox", () => {
    expect(bridge.resolvePath({ filePath: '/srv/openclaw/sandboxes/workspace-1/src/x.ts' })).toEqual({
      containerPath: '/workspace/src/x.ts',
      relativePath: 'src/x.ts',
    });
    expect(bridge.resolvePath({ filePath: 'x.ts', cwd: '/srv/openclaw/sandboxes/workspace-1/src' })).toEqual({
      containerPath: '/workspace/src/x.ts',
      relativePath: 'src/x.ts',
    });
    expect(bridge.pathMappings).toEqual([{ hostRoot: '/srv/openclaw/sandboxes/workspace-1', containerRoot: '/workspace' }]);
  });

  it('refuses every way out of /workspace, with a line naming the path', () => {
    for (const filePath of ['/etc/passwd', '/workspace/../root/.ssh/id_rsa', '../x', '/workspacex/y', '/srv/openclaw/sandboxes/workspace-10/x', '/']) {
      expect(() => bridge.resolvePath({ filePath })).toThrow(
        /is outside the sandbox's \/workspace; the file tools work in \/workspace \(use exec for other folders\)$/,
      );
    }
    expect(() => bridge.resolvePath({ filePath: 'x', cwd: '/tmp' })).toThrow(/\/tmp\/x is outside/);
    expect(() => bridge.resolvePath({ filePath: '  ' })).toThrow(/empty path/);
  });
});

// The scripts run on this host instead of a sandbox, with /workspace mapped to a temporary
// folder: what the bridge does with the answers (bounds, sizes) is decided here, not in there.
describe("the fs bridge's bounds", () => {
  const folder = mkdtempSync(path.join(tmpdir(), 'berth-fs-bridge-'));
  afterAll(() => rmSync(folder, { recursive: true, force: true }));
  const toHost = (value: string) => value.replace(/^\/workspace(?=\/|$)/, folder);
  let runs = 0;
  let afterEachRun: () => void = () => undefined;
  const hostShell = (outputLimit: number): SandboxShell => ({
    outputLimit,
    run: async (script, options = {}) => {
      runs++;
      const result = spawnSync('sh', ['-c', script, 'berth-openclaw', ...(options.args ?? []).map(toHost)], { input: options.stdin ?? '', timeout: 20_000 });
      afterEachRun();
      const stdout = result.stdout.toString('utf8');
      return {
        exitCode: result.status ?? 124,
        stdout,
        stderr: result.stderr.toString('utf8'),
        timedOut: result.status === null,
        truncated: stdout.length > outputLimit,
      };
    },
  });

  it('refuses a file larger than its bound before reading it, whatever maxBytes a caller gives', async () => {
    const bridge = createSandboxFsBridge({ shell: hostShell(1024 * 1024), hostWorkspaceDir: '/srv/w', maxReadBytes: 10_000 });
    writeFileSync(path.join(folder, 'big'), Buffer.alloc(20_000));
    writeFileSync(path.join(folder, 'huge'), '');
    truncateSync(path.join(folder, 'huge'), 2 ** 40);
    for (const name of ['big', 'huge']) {
      runs = 0;
      await expect(bridge.readFile({ filePath: `/workspace/${name}` })).rejects.toMatchObject({
        code: 'EFBIG',
        message: expect.stringMatching(/^File exceeds 10000 bytes/),
      });
      await expect(bridge.readFile({ filePath: `/workspace/${name}`, maxBytes: 2 ** 50 })).rejects.toMatchObject({ code: 'EFBIG' });
      expect(runs).toBe(2);
    }
    writeFileSync(path.join(folder, 'small'), 'fits');
    expect((await bridge.readFile({ filePath: '/workspace/small' })).toString()).toBe('fits');
    expect(DEFAULT_FS_READ_LIMIT).toBe(16 * 1024 * 1024);
  });

  it('reads a file in chunks, and refuses one that grows or shrinks between them', async () => {
    // Small chunks: one 4 KiB block each.
    const bridge = createSandboxFsBridge({ shell: hostShell(8000), hostWorkspaceDir: '/srv/w' });
    const bytes = Buffer.from(Array.from({ length: 20_000 }, (_, index) => index % 251));
    writeFileSync(path.join(folder, 'steady'), bytes);
    expect(await bridge.readFile({ filePath: '/workspace/steady' })).toEqual(bytes);
    writeFileSync(path.join(folder, 'growing'), bytes);
    afterEachRun = () => appendFileSync(path.join(folder, 'growing'), 'more');
    await expect(bridge.readFile({ filePath: '/workspace/growing' })).rejects.toMatchObject({
      code: 'EAGAIN',
      message: expect.stringMatching(/changed size while it was read/),
    });
    writeFileSync(path.join(folder, 'shrinking'), bytes);
    afterEachRun = () => truncateSync(path.join(folder, 'shrinking'), 5000);
    await expect(bridge.readFile({ filePath: '/workspace/shrinking' })).rejects.toMatchObject({ code: 'EAGAIN' });
    afterEachRun = () => undefined;
  });

  it('refuses to copy from or write into a FIFO, rather than block', async () => {
    const bridge = createSandboxFsBridge({ shell: hostShell(1024 * 1024), hostWorkspaceDir: '/srv/w' });
    execFileSync('mkfifo', [path.join(folder, 'pipe')]);
    writeFileSync(path.join(folder, 'plain'), 'x');
    await expect(bridge.copyFile!({ sourcePath: '/workspace/pipe', destinationPath: '/workspace/copy' })).rejects.toThrow(/not a regular file/);
    await expect(bridge.copyFile!({ sourcePath: '/workspace/plain', destinationPath: '/workspace/pipe' })).rejects.toThrow(/not a regular file/);
    await expect(bridge.writeFile({ filePath: '/workspace/pipe', data: 'x' })).rejects.toThrow(/not a regular file/);
    await expect(bridge.readFile({ filePath: '/workspace/pipe' })).rejects.toThrow(/not a regular file/);
  });
});

describe("the fs bridge's reads: the file kit's rules", () => {
  const folder = mkdtempSync(path.join(tmpdir(), 'berth-fs-bridge-kit-'));
  const outside = mkdtempSync(path.join(tmpdir(), 'berth-fs-bridge-outside-'));
  afterAll(() => {
    rmSync(folder, { recursive: true, force: true });
    rmSync(outside, { recursive: true, force: true });
  });
  const toHost = (value: string) => value.replace(/^\/workspace(?=\/|$)/, folder);
  const hostShell: SandboxShell = {
    outputLimit: 1024 * 1024,
    run: async (script, options = {}) => {
      const result = spawnSync('sh', ['-c', script, 'berth-openclaw', ...(options.args ?? []).map(toHost)], { input: options.stdin ?? '', timeout: 20_000 });
      return {
        exitCode: result.status ?? 124,
        stdout: result.stdout.toString('utf8'),
        stderr: result.stderr.toString('utf8'),
        timedOut: false,
        truncated: false,
      };
    },
  };

  it('refuses a link that leads out of /workspace and a file with more than one hard link, on the descriptor', async () => {
    const bridge = createSandboxFsBridge({ shell: hostShell, hostWorkspaceDir: '/srv/w' });
    writeFileSync(path.join(outside, 'secret'), 'not yours');
    symlinkSync(path.join(outside, 'secret'), path.join(folder, 'link-out'));
    writeFileSync(path.join(folder, 'twice'), 'x');
    linkSync(path.join(folder, 'twice'), path.join(folder, 'twice-again'));
    await expect(bridge.readFile({ filePath: '/workspace/link-out' })).rejects.toMatchObject({
      code: 'EACCES',
      message: expect.stringMatching(/leads outside the sandbox's \/workspace/),
    });
    await expect(bridge.readFile({ filePath: '/workspace/twice' })).rejects.toMatchObject({
      code: 'EACCES',
      message: expect.stringMatching(/more than one hard link/),
    });
    writeFileSync(path.join(folder, 'plain'), 'mine');
    symlinkSync(path.join(folder, 'plain'), path.join(folder, 'link-in'));
    expect((await bridge.readFile({ filePath: '/workspace/link-in' })).toString()).toBe('mine');
  });

  it('refuses, in one line, a sandbox whose printed size is not the bytes it sends', async () => {
    for (const [stdout, pattern] of [
      [`5\n${Buffer.alloc(40).toString('base64')}`, /was not its size and exactly that many bytes/],
      [`100\n${Buffer.from('short').toString('base64')}`, /changed size while it was read \(100 then 5 bytes\)/],
      [`${2 ** 30}\n`, /^File exceeds/],
    ] as const) {
      const lying: SandboxShell = { outputLimit: 1024 * 1024, run: async () => ({ exitCode: 0, stdout, stderr: '', timedOut: false, truncated: false }) };
      const bridge = createSandboxFsBridge({ shell: lying, hostWorkspaceDir: '/srv/w' });
      await expect(bridge.readFile({ filePath: '/workspace/a' })).rejects.toThrow(pattern);
      await expect(bridge.readFile({ filePath: '/workspace/a' })).rejects.toThrow(/^[^\n]+$/);
    }
  });
});

describe("the fs bridge's reads for a chat", () => {
  it("reads a bounded read (OpenClaw's outbound media, the message tool) with the delivery checks, and the file tools' reads without them", async () => {
    const delivered: Array<[string, number]> = [];
    const bridge = createSandboxFsBridge({
      shell: unused,
      hostWorkspaceDir: '/srv/openclaw/sandboxes/workspace-1',
      maxReadBytes: 1000,
      readForDelivery: async (containerPath, maxBytes) => {
        delivered.push([containerPath, maxBytes]);
        return Buffer.from('checked');
      },
    });
    expect((await bridge.readFile({ filePath: 'out/report.pdf', cwd: '/srv/openclaw/sandboxes/workspace-1', maxBytes: 5 * 1024 * 1024 })).toString()).toBe(
      'checked',
    );
    expect((await bridge.readFile({ filePath: '/workspace/a.png', maxBytes: 10 })).toString()).toBe('checked');
    // The bridge's own bound still caps the caller's; the path rules apply before anything is read.
    expect(delivered).toEqual([
      ['/workspace/out/report.pdf', 1000],
      ['/workspace/a.png', 10],
    ]);
    await expect(bridge.readFile({ filePath: '/etc/passwd', maxBytes: 10 })).rejects.toThrow(/is outside the sandbox's \/workspace/);
    // Unbounded (the read, edit and apply_patch tools): the bridge's own script, not the delivery read.
    await expect(bridge.readFile({ filePath: '/workspace/a.png' })).rejects.toThrow(/must not run anything/);
    expect(delivered).toHaveLength(2);
  });
});
