import { mkdtempSync, readdirSync, readFileSync, utimesSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { SandboxRequest } from '@berth/core';
import type { Berth } from '../create-berth.js';
import { getSandboxFile, OUTBOX_MAX_AGE_MS } from './host-files.js';

/** A sandbox holding `files` (path → bytes), read as readSandboxFile reads: one chunk each. */
function sandboxOf(files: Record<string, Buffer>) {
  const berth = {
    config: { docker_file_limit: 1, docker_output_limit: 4 * 1024 * 1024 },
    executeRequest: async (_request: unknown, command: string) => {
      const named = Object.keys(files).find((name) => command.includes(`'${name}'`));
      const bytes = files[named!]!;
      return { exitCode: 0, stdout: `${bytes.length}\n${bytes.toString('base64')}`, stderr: '', timedOut: false, truncated: false, durationMs: 1 };
    },
  } as unknown as Berth;
  const request = (scope: string) => ({ scope: { key: scope }, environment: { secrets: [] } }) as unknown as SandboxRequest;
  return { berth, request };
}

const megabyte = (fill: number): Buffer => Buffer.alloc(1024 * 1024, fill);
const age = (folder: string, milliseconds: number): void => {
  const then = new Date(Date.now() - milliseconds);
  for (const name of readdirSync(folder)) utimesSync(path.join(folder, name), then, then);
  utimesSync(folder, then, then);
};

describe('getSandboxFile: copies waiting on the host', () => {
  it('gives the same copy for the same file asked again, not a second one', async () => {
    const target = mkdtempSync(path.join(os.tmpdir(), 'berth-outbox-'));
    const { berth, request } = sandboxOf({ '/workspace/a.txt': Buffer.from('same bytes') });
    const first = await getSandboxFile(berth, request('user:telegram:1'), '/workspace/a.txt', target);
    const again = await getSandboxFile(berth, request('user:telegram:1'), '/workspace/a.txt', target);
    expect(again.hostPath).toBe(first.hostPath);
    expect(readdirSync(target)).toHaveLength(1);
    expect(readFileSync(first.hostPath, 'utf8')).toBe('same bytes');
    // Another user's identical file is a copy of its own.
    const other = await getSandboxFile(berth, request('user:telegram:2'), '/workspace/a.txt', target);
    expect(other.hostPath).not.toBe(first.hostPath);
  });

  it('holds at most four files of the limit per user: older copies make room, a user at their share is refused in one line, others go on', async () => {
    const target = mkdtempSync(path.join(os.tmpdir(), 'berth-outbox-'));
    const files = Object.fromEntries([1, 2, 3, 4, 5].map((n) => [`/workspace/${n}.bin`, megabyte(n)]));
    const { berth, request } = sandboxOf(files);
    const copies = [];
    for (const n of [1, 2, 3, 4]) copies.push(await getSandboxFile(berth, request('user:telegram:1'), `/workspace/${n}.bin`, target));
    // All four may still be on their way to the chat: the fifth waits.
    await expect(getSandboxFile(berth, request('user:telegram:1'), '/workspace/5.bin', target)).rejects.toThrow(
      /4 MB of this user's files are still waiting to be sent, their share of the host \(4 × terminal\.docker_file_limit\); send \/workspace\/5\.bin again in a minute/,
    );
    // Another user is not held up by the first one's share.
    await expect(getSandboxFile(berth, request('user:telegram:2'), '/workspace/5.bin', target)).resolves.toMatchObject({ bytes: 1024 * 1024 });
    // Once the oldest was surely sent (over a minute), it makes room.
    age(path.dirname(copies[0]!.hostPath), 120_000);
    await expect(getSandboxFile(berth, request('user:telegram:1'), '/workspace/5.bin', target)).resolves.toMatchObject({ bytes: 1024 * 1024 });
    expect(readdirSync(target)).not.toContain(path.basename(path.dirname(copies[0]!.hostPath)));
  });

  it('removes a copy after an hour', async () => {
    const target = mkdtempSync(path.join(os.tmpdir(), 'berth-outbox-'));
    const { berth, request } = sandboxOf({ '/workspace/old.txt': Buffer.from('old'), '/workspace/new.txt': Buffer.from('new') });
    const old = await getSandboxFile(berth, request('user:telegram:1'), '/workspace/old.txt', target);
    age(path.dirname(old.hostPath), OUTBOX_MAX_AGE_MS + 1000);
    await getSandboxFile(berth, request('user:telegram:1'), '/workspace/new.txt', target);
    expect(readdirSync(target)).toHaveLength(1);
  });
});

describe('getSandboxFile: a sandbox that lies about a file', () => {
  it('writes nothing on the host when the size the sandbox prints is not the bytes it sends, or over the limit', async () => {
    const target = mkdtempSync(path.join(os.tmpdir(), 'berth-outbox-'));
    for (const stdout of [
      `5\n${Buffer.alloc(40).toString('base64')}`,
      `100\n${Buffer.from('short').toString('base64')}`,
      `${2 * 1024 * 1024}\n${megabyte(1).toString('base64')}`,
    ]) {
      const berth = {
        config: { docker_file_limit: 1, docker_output_limit: 4 * 1024 * 1024 },
        executeRequest: async () => ({ exitCode: 0, stdout, stderr: '', timedOut: false, truncated: false, durationMs: 1 }),
      } as unknown as Berth;
      const request = { scope: { key: 'user:telegram:1' }, environment: { secrets: [] } } as unknown as SandboxRequest;
      await expect(getSandboxFile(berth, request, '/workspace/a.txt', target)).rejects.toThrow(/^[^\n]+$/);
      expect(readdirSync(target)).toEqual([]);
    }
  });
});
