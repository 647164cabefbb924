import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { SandboxFileError } from '@berth/core';
import type { Berth } from '@berth/gateway-plugin';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';

// The wiring of the file transfers, without an engine: which session's sandbox a staged or
// named file goes to or comes from, and when nothing may move. The transfers themselves
// (putHostFile, readSandboxFile) run against real sandboxes in @berth/gateway-plugin's
// files.integration.test.ts and in the end-to-end test.
const transfers = vi.hoisted(() => ({
  puts: [] as Array<{ scope: string; hostPath: string; sandboxPath: string; bytes: string }>,
  sandboxFiles: new Map<string, Map<string, string>>(),
}));
vi.mock('@berth/gateway-plugin', async (original) => ({
  ...(await original<typeof import('@berth/gateway-plugin')>()),
  putHostFile: async (_berth: unknown, request: { scope: { key: string } }, hostPath: string, sandboxPath: string) => {
    transfers.puts.push({ scope: request.scope.key, hostPath, sandboxPath, bytes: readFileSync(hostPath, 'utf8') });
    return { path: sandboxPath, bytes: 0 };
  },
  readSandboxFile: async (_berth: unknown, request: { scope: { key: string } }, sandboxPath: string) => {
    const bytes = transfers.sandboxFiles.get(request.scope.key)?.get(sandboxPath);
    if (bytes === undefined) throw new SandboxFileError('FILE_NOT_FOUND', sandboxPath, `${sandboxPath} does not exist in the sandbox`);
    return { path: sandboxPath, bytes: Buffer.from(bytes) };
  },
}));
vi.mock('@berth/gateway-plugin/socket', async (original) => ({
  ...(await original<typeof import('@berth/gateway-plugin/socket')>()),
  serveSandboxes: async ({ socket }: { socket: string }) => ({ socket, close: async () => undefined }),
}));
const { createBerthSandboxBackend } = await import('./create-berth-sandbox-backend.js');

const STAGED = 'openclaw-staged-0b9c4f7e-1d2a-4c3b-8e4f-5a6b7c8d9e0f';
const ALICE = 'agent:main:telegram:direct:111';
const BOB = 'agent:main:telegram:direct:222';
let root: string;
let warnings: string[];

// A Berth whose scope is the session key itself: enough to see whose sandbox a transfer names.
const fakeBerth = {
  request: ({ session }: { session: { sessionKey: string } }) => ({ scope: { key: `scope-of:${session.sessionKey}` }, environment: { secrets: [] } }),
  config: { docker_image: 'busybox', docker_output_limit: 1024 * 1024, docker_file_limit: 50 },
  close: async () => undefined,
} as unknown as Berth;

function backend() {
  return createBerthSandboxBackend({
    pluginConfig: { terminal: {}, socket: path.join(root, 'berth.sock') },
    environment: {},
    logger: { info: () => undefined, warn: (message) => warnings.push(message), error: () => undefined },
    createBerth: async () => fakeBerth,
  });
}
function workspace(name: string): string {
  const folder = path.join(root, 'openclaw', name);
  mkdirSync(folder, { recursive: true });
  return folder;
}
function stage(folder: string, name: string, content: string): string {
  mkdirSync(path.join(folder, 'media', 'inbound', STAGED), { recursive: true });
  writeFileSync(path.join(folder, 'media', 'inbound', STAGED, name), content);
  return `/workspace/media/inbound/${STAGED}/${name}`;
}
const params = (sessionKey: string, workspaceDir: string, cfg: Record<string, unknown> = { scope: 'session', workspaceAccess: 'none' }) => ({
  sessionKey,
  scopeKey: sessionKey,
  workspaceDir,
  agentWorkspaceDir: path.join(root, 'agent'),
  cfg,
});

beforeEach(() => {
  root = mkdtempSync(path.join(tmpdir(), 'berth-oc-files-'));
  warnings = [];
  transfers.puts.length = 0;
  transfers.sandboxFiles.clear();
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

describe("the backend's file transfers", () => {
  it("puts what OpenClaw staged for a session into that session's sandbox before the run, and nothing of anyone else's", async () => {
    const berth = backend();
    const alice = workspace('alice');
    const bob = workspace('bob');
    const staged = stage(alice, 'input-report.pdf', 'alice’s report');
    await berth.registration.factory(params(BOB, bob));
    expect(transfers.puts).toEqual([]);
    await berth.registration.factory(params(ALICE, alice));
    expect(transfers.puts).toEqual([
      { scope: `scope-of:${ALICE}`, hostPath: path.join(alice, 'media', 'inbound', STAGED, 'input-report.pdf'), sandboxPath: staged, bytes: 'alice’s report' },
    ]);
    expect(existsSync(path.join(alice, 'media', 'inbound', STAGED))).toBe(false);

    // A message steered into the running turn: staged after the factory, put before the next tool runs.
    stage(alice, 'input-photo.jpg', 'a photo');
    await berth.hooks.beforeToolCall({ sessionKey: BOB });
    expect(transfers.puts).toHaveLength(1);
    await berth.hooks.beforeToolCall({ sessionKey: ALICE });
    expect(transfers.puts.map((put) => [put.scope, path.posix.basename(put.sandboxPath)])).toEqual([
      [`scope-of:${ALICE}`, 'input-report.pdf'],
      [`scope-of:${ALICE}`, 'input-photo.jpg'],
    ]);
    await berth.close();
  });

  it("places a MEDIA: file from the session's own sandbox where OpenClaw reads it, and removes it after the next reply", async () => {
    const berth = backend();
    const alice = workspace('alice');
    const bob = workspace('bob');
    await berth.registration.factory(params(ALICE, alice));
    await berth.registration.factory(params(BOB, bob));
    transfers.sandboxFiles.set(`scope-of:${ALICE}`, new Map([['/workspace/out/a.txt', 'alice’s bytes']]));
    transfers.sandboxFiles.set(`scope-of:${BOB}`, new Map([['/workspace/b.txt', 'bob’s bytes']]));

    await berth.hooks.beforeAgentFinalize({ lastAssistantMessage: 'Done.\nMEDIA:/workspace/out/a.txt' }, { sessionKey: ALICE });
    expect(readFileSync(path.join(alice, 'out', 'a.txt'), 'utf8')).toBe('alice’s bytes');
    // Bob names Alice's path: read in his own sandbox, where it is not; nothing is placed.
    await berth.hooks.beforeAgentFinalize({ lastAssistantMessage: 'MEDIA:/workspace/out/a.txt\nMEDIA:b.txt' }, { sessionKey: BOB });
    expect(existsSync(path.join(bob, 'out', 'a.txt'))).toBe(false);
    expect(readFileSync(path.join(bob, 'b.txt'), 'utf8')).toBe('bob’s bytes');
    expect(warnings).toContain('berth: a MEDIA: file was not sent: /workspace/out/a.txt does not exist in the sandbox');

    // Her next reply, with or without a file, removes the copy the previous one sent.
    await berth.hooks.beforeAgentFinalize({ lastAssistantMessage: 'No file this time.' }, { sessionKey: ALICE });
    expect(existsSync(path.join(alice, 'out', 'a.txt'))).toBe(false);
    // Text without MEDIA: reads nothing; an unknown session does nothing.
    await berth.hooks.beforeAgentFinalize({ lastAssistantMessage: 'MEDIA:/workspace/out/a.txt' }, { sessionKey: 'agent:main:telegram:direct:999' });
    expect(existsSync(path.join(workspace('unknown'), 'out'))).toBe(false);
    await berth.close();
  });

  it('moves nothing when OpenClaw keeps one host folder for several sessions, and says which setting fixes it', async () => {
    const berth = backend();
    const shared = workspace('shared');
    await berth.registration.factory(params(ALICE, shared));
    stage(shared, 'input-x.txt', 'whose?');
    await berth.registration.factory(params(BOB, shared));
    await berth.hooks.beforeToolCall({ sessionKey: ALICE });
    transfers.sandboxFiles.set(`scope-of:${ALICE}`, new Map([['/workspace/a.txt', 'alice’s bytes']]));
    await berth.hooks.beforeAgentFinalize({ lastAssistantMessage: 'MEDIA:/workspace/a.txt' }, { sessionKey: ALICE });
    expect(transfers.puts).toEqual([]);
    expect(existsSync(path.join(shared, 'a.txt'))).toBe(false);
    expect(warnings.some((line) => line.includes('set agents.defaults.sandbox.scope: "session"'))).toBe(true);

    const agentScope = workspace('agent-scope');
    stage(agentScope, 'input-y.txt', 'whose?');
    await berth.registration.factory(params(ALICE, agentScope, { scope: 'agent', workspaceAccess: 'none' }));
    await berth.registration.factory(params(ALICE, workspace('rw'), { scope: 'session', workspaceAccess: 'rw' }));
    expect(transfers.puts).toEqual([]);
    await berth.close();
  });
});

describe('the keys it accepts and does not use', () => {
  it('names a Hermes key, another provider and an unknown key in one warning line, with their full path and no value', () => {
    createBerthSandboxBackend({
      pluginConfig: {
        terminal: { docker_shm_size: '1g', backends: { e2b: { api_key: 'e2b_SECRET' } }, team_notes: 'x' },
        socket: path.join(root, 'berth.sock'),
      },
      environment: {},
      logger: { info: () => undefined, warn: (message) => warnings.push(message), error: () => undefined },
      createBerth: async () => fakeBerth,
    });
    expect(warnings).toEqual([
      'berth: ignoring plugins.entries.berth.config.terminal.docker_shm_size: Hermes settings with no meaning for a Berth sandbox; ' +
        "plugins.entries.berth.config.terminal.backends.e2b: other terminal providers' settings; " +
        'plugins.entries.berth.config.terminal.team_notes: unknown to Berth, so check the spelling of any meant for Berth (see docs/configuration.md)',
    ]);
  });

  it('says nothing when every key is Berth own', () => {
    backend();
    expect(warnings).toEqual([]);
  });
});
