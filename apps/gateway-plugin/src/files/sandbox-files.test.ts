import { describe, expect, it } from 'vitest';
import { SandboxFileError, type SandboxRequest } from '@berth/core';
import type { Berth } from '../create-berth.js';
import { readSandboxFile, sandboxPathOf } from './sandbox-files.js';

const refusal = (named: string): SandboxFileError => {
  try {
    sandboxPathOf(named);
  } catch (error) {
    if (error instanceof SandboxFileError) return error;
    throw error;
  }
  throw new Error(`${JSON.stringify(named)} was accepted`);
};

describe('sandboxPathOf', () => {
  it('reads every path an agent writes as a path in the sandbox', () => {
    expect(sandboxPathOf('/workspace/out.txt')).toBe('/workspace/out.txt');
    expect(sandboxPathOf('out.txt')).toBe('/workspace/out.txt');
    expect(sandboxPathOf('./reports//q3.pdf')).toBe('/workspace/reports/q3.pdf');
    expect(sandboxPathOf('~/notes.md')).toBe('/root/notes.md');
    expect(sandboxPathOf('/root/.hermes/cache/documents/doc_1_a.txt')).toBe('/root/.hermes/cache/documents/doc_1_a.txt');
    expect(sandboxPathOf('/tmp/plot.png')).toBe('/tmp/plot.png');
    expect(sandboxPathOf('  /workspace/a b.txt  ')).toBe('/workspace/a b.txt');
  });

  it('refuses in one line what is not a file of the sandbox: .., host paths, folders, NUL', () => {
    for (const named of ['../etc/passwd', '/workspace/../root/x', 'a/../../b', '..']) {
      const error = refusal(named);
      expect(error.code).toBe('FILE_REFUSED');
      expect(error.message).toContain('".."');
    }
    for (const named of ['/etc/passwd', '/proc/1/environ', '/var/lib/berth/sandboxes/docker/telegram@1/workspace/x', '/home/x', '/workspacex/y']) {
      expect(refusal(named).message).toMatch(/is not in the sandbox's \/workspace, \/root or \/tmp/);
    }
    expect(refusal('/workspace/').message).toContain('is a folder');
    expect(refusal('~').message).toContain('is a folder');
    expect(refusal('').code).toBe('FILE_REFUSED');
    expect(refusal('/workspace/a\u0000b').code).toBe('FILE_REFUSED');
    for (const named of ['../x', '/etc/passwd', '']) expect(refusal(named).message).not.toContain('\n');
  });
});

/** A sandbox whose shell says whatever the test wants: a planted `sh` that claims any size and streams zeros. */
function lyingSandbox(answer: (call: number) => { exitCode?: number; stdout: string }, secrets: string[] = []) {
  let calls = 0;
  const berth = {
    config: { docker_file_limit: 1, docker_output_limit: 64 * 1024 },
    executeRequest: async () => {
      const { exitCode = 0, stdout } = answer(calls++);
      return { exitCode, stdout, stderr: '', timedOut: false, truncated: false, durationMs: 1 };
    },
  } as unknown as Berth;
  const request = { environment: { secrets } } as unknown as SandboxRequest;
  return { berth, request, calls: () => calls };
}

const zeros = (bytes: number): string => Buffer.alloc(bytes).toString('base64');
/** The bytes one read carries with a 64 KiB output limit: 11 blocks of 4 KiB (their base64 within 70 % of it). */
const CHUNK = 11 * 4096;

describe('readSandboxFile against a sandbox that lies', () => {
  it("refuses on the host a size over the limit, whatever the sandbox's own check said", async () => {
    const sandbox = lyingSandbox(() => ({ stdout: `999999999999\n${zeros(40_000)}` }));
    await expect(readSandboxFile(sandbox.berth, sandbox.request, '/workspace/a')).rejects.toMatchObject({ code: 'FILE_TOO_LARGE' });
    expect(sandbox.calls()).toBe(1);
  });

  it('holds exactly the limit at most, in the chunks the limit needs, when the sandbox claims the limit', async () => {
    // Its last chunk carries what the size leaves: the limit exactly.
    const last = Math.ceil((1024 * 1024) / CHUNK) - 1;
    const sandbox = lyingSandbox((call) => ({ stdout: `${1024 * 1024}\n${zeros(call < last ? CHUNK : 1024 * 1024 - last * CHUNK)}` }));
    const file = await readSandboxFile(sandbox.berth, sandbox.request, '/workspace/a');
    expect(file.bytes.length).toBe(1024 * 1024);
    expect(sandbox.calls()).toBe(Math.ceil((1024 * 1024) / CHUNK));
    // A last chunk as full as the others would be more bytes than the limit: refused, not cut.
    const over = lyingSandbox(() => ({ stdout: `${1024 * 1024}\n${zeros(CHUNK)}` }));
    await expect(readSandboxFile(over.berth, over.request, '/workspace/a')).rejects.toThrow(
      /^\/workspace\/a could not be read exactly from the sandbox \(it said 1048576 bytes and sent more\); it was not sent$/,
    );
    expect(over.calls()).toBe(Math.ceil((1024 * 1024) / CHUNK));
  });

  it('never keeps more than the size said, however many bytes a chunk carries: a size smaller than the bytes sent is refused', async () => {
    const sandbox = lyingSandbox(() => ({ stdout: `5\n${zeros(40_000)}` }));
    await expect(readSandboxFile(sandbox.berth, sandbox.request, '/workspace/a')).rejects.toMatchObject({
      code: 'FILE_REFUSED',
      message: expect.stringMatching(/^[^\n]*it said 5 bytes and sent more[^\n]*$/),
    });
  });

  it('refuses a size larger than the bytes sent', async () => {
    const sandbox = lyingSandbox(() => ({ stdout: `100\n${Buffer.from('short').toString('base64')}` }));
    await expect(readSandboxFile(sandbox.berth, sandbox.request, '/workspace/a')).rejects.toMatchObject({
      code: 'FILE_CHANGED',
      message: expect.stringMatching(/^[^\n]*changed while it was read \(100 then 5 bytes\)[^\n]*$/),
    });
  });

  it('stops reading once the client that asked for the file has left', async () => {
    const left = new AbortController();
    const sandbox = lyingSandbox((call) => {
      if (call === 2) left.abort();
      return { stdout: `${1024 * 1024}\n${zeros(CHUNK)}` };
    });
    await expect(readSandboxFile(sandbox.berth, sandbox.request, '/workspace/a', { signal: left.signal })).rejects.toThrow(/client that asked for it left/);
    expect(sandbox.calls()).toBe(3);
  });

  it('does not believe an exit status or a size that is not a number', async () => {
    const sandbox = lyingSandbox(() => ({ stdout: `-5\n` }));
    await expect(readSandboxFile(sandbox.berth, sandbox.request, '/workspace/a')).rejects.toThrow(/could not be read exactly/);
  });

  it("refuses a file holding a credential as it is, shell-quoted (Berth's own state in /tmp) or in base64", async () => {
    const token = `ghp_it's"a$secret_${'x'.repeat(20)}`;
    const files = [
      `my token: ${token}\n`,
      `export GITHUB_TOKEN='ghp_it'\\''s"a$secret_${'x'.repeat(20)}'\n`,
      `${Buffer.from(`prefix ${token} suffix`).toString('base64')}\n`,
    ];
    for (const content of files) {
      const sandbox = lyingSandbox(() => ({ stdout: `${content.length}\n${Buffer.from(content).toString('base64')}` }), [token]);
      await expect(readSandboxFile(sandbox.berth, sandbox.request, '/workspace/a'), content).rejects.toThrow(
        /holds the value of one of the sandbox's credentials/,
      );
    }
    const clean = lyingSandbox(() => ({ stdout: `5\n${Buffer.from('hello').toString('base64')}` }), [token]);
    expect((await readSandboxFile(clean.berth, clean.request, '/workspace/a')).bytes.toString()).toBe('hello');
  });

  it("asks the image's own /bin/sh, without the session's PATH, preload or start-up variables", async () => {
    const commands: string[] = [];
    const berth = {
      config: { docker_file_limit: 1, docker_output_limit: 64 * 1024 },
      executeRequest: async (_request: unknown, command: string) => {
        commands.push(command);
        return { exitCode: 0, stdout: `2\n${Buffer.from('ok').toString('base64')}`, stderr: '', timedOut: false, truncated: false, durationMs: 1 };
      },
    } as unknown as Berth;
    await readSandboxFile(berth, { environment: { secrets: [] } } as unknown as SandboxRequest, '/workspace/a');
    expect(commands[0]).toMatch(/^LD_PRELOAD= LD_LIBRARY_PATH= LD_AUDIT= BASH_ENV= ENV= \/bin\/sh -c 'PATH=\/usr\/sbin:\/usr\/bin:\/sbin:\/bin\n/);
  });
});
