import { spawnSync } from 'node:child_process';
import { linkSync, mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { FILE_EXIT, fileExitName } from './file-exit-codes.js';
import { FILE_PROGRAMS, READ_CHUNK } from './file-programs.js';
import { ChunkedReadError, type FileProgramResult, readInChunks } from './read-in-chunks.js';

const answer = (stdout: string, exitCode = 0): FileProgramResult => ({ exitCode, stdout, stderr: '', timedOut: false, truncated: false });
const base64 = (bytes: Buffer | string): string => Buffer.from(bytes).toString('base64');
/** One chunk's bytes with a 64 KiB output limit: 11 blocks of 4 KiB. */
const CHUNK = 11 * 4096;

async function refusalOf(promise: Promise<unknown>): Promise<ChunkedReadError['refusal']> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof ChunkedReadError) {
      expect(error.message).not.toContain('\n');
      return error.refusal;
    }
    throw error;
  }
  throw new Error('the read was not refused');
}

/** A sandbox that prints whatever the test says, whatever it was asked. */
function lying(stdout: (call: number) => string) {
  let calls = 0;
  const read = (limit = 1024 * 1024) =>
    readInChunks({ path: '/workspace/a', roots: ['/workspace'], limit, outputLimit: 64 * 1024, run: async () => answer(stdout(calls++)) });
  return { read, calls: () => calls };
}

describe('readInChunks against a sandbox that lies', () => {
  it('refuses a size smaller than the bytes sent, keeping none of them', async () => {
    expect(await refusalOf(lying(() => `5\n${base64(Buffer.alloc(40))}`).read())).toEqual({ reason: 'more-than-claimed', size: 5, received: 40 });
  });

  it('refuses a size larger than the bytes sent', async () => {
    expect(await refusalOf(lying(() => `100\n${base64('short')}`).read())).toEqual({ reason: 'changed', before: 100, now: 5 });
  });

  it('refuses a size over the limit on the host, and more chunks than the limit needs', async () => {
    const huge = lying(() => `999999999999\n${base64(Buffer.alloc(CHUNK))}`);
    expect(await refusalOf(huge.read())).toEqual({ reason: 'too-large', size: 999999999999 });
    expect(huge.calls()).toBe(1);
    // A last chunk that carries a full chunk where the size leaves less: more bytes than the limit.
    const over = lying(() => `${1024 * 1024}\n${base64(Buffer.alloc(CHUNK))}`);
    expect(await refusalOf(over.read())).toMatchObject({ reason: 'more-than-claimed', size: 1024 * 1024 });
    expect(over.calls()).toBe(Math.ceil((1024 * 1024) / CHUNK));
  });

  it('refuses output that is no size, not base64, or longer than a chunk can be', async () => {
    for (const stdout of ['-5\n', 'five\n', '5', `5\n***`, `07\n${base64('1234567')}`]) {
      expect(await refusalOf(lying(() => stdout).read()), stdout).toMatchObject({ reason: 'malformed' });
    }
    expect(await refusalOf(lying(() => `5\n${'A'.repeat(200_000)}`).read())).toEqual({ reason: 'malformed', truncated: true });
  });

  it('reads an honest file of exactly the limit', async () => {
    const limit = 2 * CHUNK + 10;
    const honest = lying((call) => `${limit}\n${base64(Buffer.alloc(call < 2 ? CHUNK : 10, call))}`);
    const bytes = await honest.read(limit);
    expect(bytes.length).toBe(limit);
    expect(bytes[limit - 1]).toBe(2);
  });
});

// read-chunk.sh itself, run by this host's sh, with a temporary folder as the only root.
describe('read-chunk.sh', () => {
  const folder = realpathSync(mkdtempSync(path.join(tmpdir(), 'berth-read-chunk-')));
  const root = path.join(folder, 'root');
  mkdirSync(root);
  afterAll(() => rmSync(folder, { recursive: true, force: true }));
  const run = async (program: string, args: readonly string[]): Promise<FileProgramResult> => {
    const result = spawnSync('sh', ['-c', program, 'berth-file', ...args], { timeout: 20_000 });
    return {
      exitCode: result.status ?? 124,
      stdout: result.stdout.toString(),
      stderr: result.stderr.toString(),
      timedOut: result.status === null,
      truncated: false,
    };
  };
  const read = (name: string, limit = 1000) => readInChunks({ path: path.join(root, name), roots: [root], limit, outputLimit: 64 * 1024, run });
  const statusOf = async (name: string) => {
    const refusal = await refusalOf(read(name));
    return refusal.reason === 'exit' ? fileExitName(refusal.result.exitCode) : refusal.reason;
  };

  it('reads a regular file of the roots exactly', async () => {
    writeFileSync(path.join(root, 'plain'), 'hello\n');
    expect((await read('plain')).toString()).toBe('hello\n');
  });

  it('decides on the descriptor: links out, hard links, FIFOs, folders, sizes', async () => {
    writeFileSync(path.join(folder, 'outside'), 'secret');
    symlinkSync(path.join(folder, 'outside'), path.join(root, 'link-out'));
    writeFileSync(path.join(root, 'twice'), 'x');
    linkSync(path.join(root, 'twice'), path.join(root, 'twice-again'));
    spawnSync('mkfifo', [path.join(root, 'pipe')]);
    mkdirSync(path.join(root, 'folder'));
    writeFileSync(path.join(root, 'big'), Buffer.alloc(1001));
    expect(await statusOf('link-out')).toBe('OUTSIDE');
    expect(await statusOf('twice')).toBe('LINKED');
    expect(await statusOf('pipe')).toBe('NOT_REGULAR');
    expect(await statusOf('folder')).toBe('IS_FOLDER');
    expect(await statusOf('missing')).toBe('NOT_FOUND');
    expect(await statusOf('big')).toBe('TOO_LARGE');
  });

  it('hands over no more than the size it printed when the file grows after its stat', async () => {
    // A `stat` that appends to the file once it has answered: the growth lands between the
    // size line and the read, on the last chunk, where nothing later would notice it.
    const bin = path.join(folder, 'bin');
    mkdirSync(bin);
    const real = spawnSync('sh', ['-c', 'command -v stat']).stdout.toString().trim();
    writeFileSync(path.join(bin, 'stat'), `#!/bin/sh\n"${real}" "$@"\nstatus=$?\nprintf 'more' >> "${path.join(root, 'growing')}"\nexit $status\n`, {
      mode: 0o755,
    });
    const bytes = Buffer.alloc(CHUNK + 10, 7);
    writeFileSync(path.join(root, 'growing'), bytes);
    const grown = async (program: string, args: readonly string[]): Promise<FileProgramResult> => {
      const result = spawnSync('sh', ['-c', program, 'berth-file', ...args], { timeout: 20_000, env: { ...process.env, PATH: `${bin}:${process.env.PATH}` } });
      return { exitCode: result.status ?? 124, stdout: result.stdout.toString(), stderr: result.stderr.toString(), timedOut: false, truncated: false };
    };
    const single = () => readInChunks({ path: path.join(root, 'growing'), roots: [root], limit: 1_000_000, outputLimit: 64 * 1024, run: grown });
    // Two chunks: the first stat's growth shows as a new size at the second, which is refused.
    expect(await refusalOf(single())).toMatchObject({ reason: 'changed' });
    // One chunk (a file that fits one): what was there at the stat, exactly, not a lie refused.
    writeFileSync(path.join(root, 'growing'), 'hello\n');
    expect((await single()).toString()).toBe('hello\n');
  });

  it('sets every name of the exit-code table in front of every program, which exits by name only', () => {
    for (const [program, text] of Object.entries(FILE_PROGRAMS)) {
      for (const [name, status] of Object.entries(FILE_EXIT)) expect(text, program).toContain(`${name}=${status}\n`);
      expect(text, program).not.toMatch(/exit [2-9][0-9]/);
    }
    expect(FILE_PROGRAMS.readChunk).toBe(READ_CHUNK);
  });
});
