import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runSocketExecCommand } from '../cli/socket-exec-command.js';
import type { Berth } from '../create-berth.js';
import { MAX_SOCKET_PATH_BYTES } from './protocol.js';
import { findPerl, PERL_SOCKET_CLIENT } from './sandbox-command-argv.js';
import { serveSandboxes, type SandboxSocketServer } from './serve-sandboxes.js';

// The server's own rules, with a Berth that answers at once: deadlines and room for real requests.
const servers: SandboxSocketServer[] = [];
const folders: string[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await server.close({ graceMs: 0 });
  for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true });
});

// Whose sandbox a request names, as core would key it; commands answer at once unless held.
let hold: Promise<void> | undefined;
const quickBerth = {
  request: (target: { session?: { platform?: string; userId?: string } } = {}) => ({
    scope: { key: target.session?.platform ? `user:${target.session.platform}:${target.session.userId}` : 'task:default' },
  }),
  executeRequest: async (_request: unknown, command: string) => {
    if (command === 'held') await hold;
    return { exitCode: 0, stdout: `ran ${command}`, stderr: '', timedOut: false, truncated: false, durationMs: 1 };
  },
} as unknown as Berth;

async function start(
  options: {
    requestReadTimeoutMs?: number;
    maxPendingConnections?: number;
    pendingGraceMs?: number;
    maxConnections?: number;
    maxQueuedPerSandbox?: number;
  } = {},
): Promise<string> {
  const folder = mkdtempSync(path.join(os.tmpdir(), 'berth-serve-unit-'));
  folders.push(folder);
  const server = await serveSandboxes({ berth: quickBerth, socket: path.join(folder, 's.sock'), ...options });
  servers.push(server);
  return server.socket;
}

/** Connects, runs `talk` (which may write slowly), and resolves with the answer line and when it came. */
function converse(socket: string, talk: (connection: net.Socket) => void): Promise<{ answer: string; afterMs: number }> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const connection = net.connect(socket);
    let answer = '';
    connection.on('data', (chunk) => (answer += chunk.toString()));
    // Writing on after the server answered and closed is the slow client's problem, not a failure.
    connection.on('error', (error) => (answer ? undefined : reject(error)));
    connection.on('close', () => resolve({ answer, afterMs: performance.now() - started }));
    connection.on('connect', () => talk(connection));
  });
}

describe('berth serve', () => {
  it('gives a request a deadline from connecting, which a byte now and then does not extend', async () => {
    const socket = await start({ requestReadTimeoutMs: 600 });
    const { answer, afterMs } = await converse(socket, (connection) => {
      const drip = setInterval(() => (connection.destroyed ? clearInterval(drip) : connection.write(' ')), 100);
      connection.on('close', () => clearInterval(drip));
    });
    expect(JSON.parse(answer)).toMatchObject({ error: { code: 'REQUEST_TIMEOUT' } });
    expect(afterMs).toBeLessThan(3_000);
  });

  it('closes the oldest idle connection to make room, so idle ones cannot keep real requests out', async () => {
    const socket = await start({ maxPendingConnections: 5, pendingGraceMs: 500, requestReadTimeoutMs: 30_000 });
    const idle = Array.from({ length: 20 }, () => converse(socket, () => undefined));
    await new Promise((resolve) => setTimeout(resolve, 700));
    const real = await Promise.all(
      Array.from({ length: 10 }, (_unused, index) => converse(socket, (connection) => connection.write(`${JSON.stringify({ v: 1, command: `c${index}` })}\n`))),
    );
    for (const [index, { answer }] of real.entries()) expect(JSON.parse(answer)).toMatchObject({ exitCode: 0, stdout: `ran c${index}` });
    // The idle ones that lost their place were told why, in one line each: those that came
    // when the server was full (SERVER_BUSY), and the oldest ones pushed out for real requests.
    const answers: string[] = [];
    for (const pendingIdle of idle) void pendingIdle.then(({ answer }) => answers.push(answer));
    await new Promise((resolve) => setTimeout(resolve, 500));
    const codes = answers.map((answer) => (JSON.parse(answer) as { error: { code: string } }).error.code);
    expect(codes.filter((code) => code === 'SERVER_BUSY')).toHaveLength(15);
    expect(codes.filter((code) => code === 'REQUEST_TIMEOUT').length).toBeGreaterThanOrEqual(1);
    expect(codes.every((code) => code === 'SERVER_BUSY' || code === 'REQUEST_TIMEOUT')).toBe(true);
  });

  it('answers a newcomer SERVER_BUSY rather than push out a connection still within its grace', async () => {
    const socket = await start({ maxPendingConnections: 3, pendingGraceMs: 60_000, requestReadTimeoutMs: 30_000 });
    const held = Array.from({ length: 3 }, () => converse(socket, () => undefined));
    await new Promise((resolve) => setTimeout(resolve, 200));
    const { answer } = await converse(socket, (connection) => connection.write(`${JSON.stringify({ v: 1, command: 'late' })}\n`));
    expect(JSON.parse(answer)).toMatchObject({ error: { code: 'SERVER_BUSY', message: expect.stringMatching(/3 connections are sending requests/) } });
    void held;
  });

  it("bounds each sandbox's queue, and counts only running commands against the limit, so one user cannot lock everyone out", async () => {
    const socket = await start({ maxConnections: 4, maxQueuedPerSandbox: 3 });
    let release = (): void => undefined;
    hold = new Promise((resolve) => (release = resolve));
    const send = (userId: string) =>
      converse(socket, (connection) => connection.write(`${JSON.stringify({ v: 1, platform: 'telegram', userId, command: 'held' })}\n`)).then(
        ({ answer }) => JSON.parse(answer) as { exitCode?: number; error?: { code: string; message: string } },
      );
    // One user piles up ten requests: one runs, three wait, six are refused.
    const settled: Array<{ exitCode?: number; error?: { code: string; message: string } }> = [];
    const piled = Array.from({ length: 10 }, () =>
      send('1').then((answer) => {
        settled.push(answer);
        return answer;
      }),
    );
    for (let i = 0; i < 500 && settled.length < 6; i++) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(settled).toHaveLength(6);
    for (const answer of settled)
      expect(answer.error).toMatchObject({ code: 'SERVER_BUSY', message: expect.stringMatching(/this sandbox already has 3 commands waiting/) });
    // Everyone else still gets in, new users included, up to four sandboxes running.
    const others = ['2', '3', '4'].map((userId) => send(userId));
    await new Promise((resolve) => setTimeout(resolve, 100));
    const fifth = await send('5');
    expect(fifth.error).toMatchObject({ code: 'SERVER_BUSY', message: expect.stringMatching(/4 sandboxes are running commands/) });
    release();
    const all = await Promise.all(piled);
    expect(all.filter((answer) => answer.exitCode === 0)).toHaveLength(4);
    for (const answer of await Promise.all(others)) expect(answer).toMatchObject({ exitCode: 0 });
    // Room again once they are done.
    hold = undefined;
    expect(await send('5')).toMatchObject({ exitCode: 0 });
  });

  it('is reached by berth exec --socket and the Perl client at a socket path longer than a Unix socket address holds', async () => {
    const folder = mkdtempSync(path.join(os.tmpdir(), 'berth-serve-long-'));
    folders.push(folder);
    const deep = path.join(folder, 'a-folder-name-of-forty-characters-long-'.repeat(3));
    mkdirSync(deep, { recursive: true, mode: 0o700 });
    const socket = path.join(deep, 'berth.sock');
    expect(Buffer.byteLength(socket)).toBeGreaterThan(MAX_SOCKET_PATH_BYTES);
    const server = await serveSandboxes({ berth: quickBerth, socket });
    servers.push(server);
    let stdout = '';
    let stderr = '';
    const io = { stdout: { write: (text: string) => (stdout += text) }, stderr: { write: (text: string) => (stderr += text) }, environment: {}, cwd: folder };
    expect(await runSocketExecCommand(['exec', '--socket', socket, '--', 'echo', 'hi'], io)).toBe(0);
    expect({ stdout, stderr }).toEqual({ stdout: 'ran echo hi', stderr: '' });
    const perl = findPerl();
    const client = PERL_SOCKET_CLIENT;
    if (perl && client) {
      const requestFile = path.join(folder, 'request.json');
      writeFileSync(requestFile, JSON.stringify({ v: 1, command: 'from-perl', reply: 'framed' }), { mode: 0o600 });
      // Spawned, not run synchronously: the server answering it is in this process.
      const run = await new Promise<{ status: number; stdout: string; stderr: string }>((resolve) =>
        execFile(perl, [client, `--socket=${socket}`, `--request-file=${requestFile}`], (error, out, err) =>
          resolve({ status: error ? Number(error.code) : 0, stdout: out, stderr: err }),
        ),
      );
      expect(run).toEqual({ status: 0, stdout: 'ran from-perl', stderr: '' });
    }
  });
});
