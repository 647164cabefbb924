import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Berth } from '../create-berth.js';
import { serveSandboxes, type SandboxSocketServer } from './serve-sandboxes.js';

// The server's own rules, with a Berth that answers at once: deadlines and room for real requests.
const servers: SandboxSocketServer[] = [];
const folders: string[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await server.close({ graceMs: 0 });
  for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true });
});

const quickBerth = {
  execute: async (command: string) => ({ exitCode: 0, stdout: `ran ${command}`, stderr: '', timedOut: false, truncated: false, durationMs: 1, scopeKey: 'task:default' }),
} as unknown as Berth;

async function start(options: { requestReadTimeoutMs?: number; maxPendingConnections?: number } = {}): Promise<string> {
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
    const socket = await start({ maxPendingConnections: 5, requestReadTimeoutMs: 30_000 });
    const idle = Array.from({ length: 20 }, () => converse(socket, () => undefined));
    await new Promise((resolve) => setTimeout(resolve, 200));
    const real = await Promise.all(Array.from({ length: 10 }, (_unused, index) => converse(socket, (connection) => connection.write(`${JSON.stringify({ v: 1, command: `c${index}` })}\n`))));
    for (const [index, { answer }] of real.entries()) expect(JSON.parse(answer)).toMatchObject({ exitCode: 0, stdout: `ran c${index}` });
    // The idle ones were told why, in one line each, instead of being left hanging.
    const evicted = await Promise.race([Promise.all(idle.slice(0, 15)), new Promise((resolve) => setTimeout(() => resolve('hung'), 5_000))]);
    expect(evicted).not.toBe('hung');
    for (const { answer } of evicted as Array<{ answer: string }>) expect(JSON.parse(answer)).toMatchObject({ error: { code: 'REQUEST_TIMEOUT' } });
  });
});
