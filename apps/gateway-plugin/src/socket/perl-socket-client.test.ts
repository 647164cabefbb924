import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { BERTH_FAILURE_EXIT_CODE, SANDBOX_SOCKET_PROTOCOL_VERSION } from '@berth/core';
import { afterEach, describe, expect, it } from 'vitest';
import { encodeFramedResult } from './protocol.js';
import { findPerl, PERL_SOCKET_CLIENT } from './sandbox-command-argv.js';

// The Perl client against a stand-in server that answers one line: what it makes of a framed
// result and of a refusal of core's protocol version, or of another version.
const perl = findPerl();
const folders: string[] = [];
afterEach(() => {
  for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true });
});

async function runClient(answer: Buffer): Promise<{ status: number | null; stdout: string; stderr: string; request: string }> {
  const folder = mkdtempSync(path.join(tmpdir(), 'berth-perl-client-'));
  folders.push(folder);
  const socket = path.join(folder, 'berth.sock');
  const requestFile = path.join(folder, 'request.json');
  writeFileSync(requestFile, JSON.stringify({ v: SANDBOX_SOCKET_PROTOCOL_VERSION, command: 'true', reply: 'framed' }), { mode: 0o600 });
  let request = '';
  const server = net.createServer((connection) => {
    connection.on('data', (chunk) => {
      request += chunk.toString('utf8');
      if (request.endsWith('\n')) connection.end(answer);
    });
  });
  await new Promise<void>((resolve) => server.listen(socket, resolve));
  try {
    const child = spawn(perl!, [PERL_SOCKET_CLIENT!, `--socket=${socket}`, `--request-file=${requestFile}`], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    const status = await new Promise<number | null>((resolve) => child.on('close', resolve));
    return { status, stdout, stderr, request };
  } finally {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

describe.skipIf(!perl || !PERL_SOCKET_CLIENT)('the Perl socket client', () => {
  it('writes a framed result as the command gave it', async () => {
    const result = await runClient(encodeFramedResult({ exitCode: 3, timedOut: false, truncated: false, stdout: 'out\n', stderr: 'err\n' }));
    expect(result).toMatchObject({ status: 3, stdout: 'out\n', stderr: 'err\n' });
    expect(JSON.parse(result.request)).toMatchObject({ v: SANDBOX_SOCKET_PROTOCOL_VERSION, command: 'true' });
  });

  it("says a refusal of core's protocol version in one line, and exits with Berth's failure status", async () => {
    const refusal = JSON.stringify({ v: SANDBOX_SOCKET_PROTOCOL_VERSION, error: { code: 'SCOPE_BUSY', message: 'the sandbox is busy "now"' } });
    expect(await runClient(Buffer.from(`${refusal}\n`))).toMatchObject({
      status: BERTH_FAILURE_EXIT_CODE,
      stdout: '',
      stderr: 'berth: the sandbox is busy "now"\n',
    });
  });

  it('does not read a refusal of another protocol version as one', async () => {
    const refusal = JSON.stringify({ v: SANDBOX_SOCKET_PROTOCOL_VERSION + 1, error: { code: 'SCOPE_BUSY', message: 'busy' } });
    const result = await runClient(Buffer.from(`${refusal}\n`));
    expect(result.status).toBe(BERTH_FAILURE_EXIT_CODE);
    expect(result.stderr).toMatch(
      /^berth: the server on .* answered something that is neither a framed result nor a refusal; is it berth serve of this release\?\n$/,
    );
  });
});
