import { execFile } from 'node:child_process';
import { randomInt } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { taskFolderName } from '@berth/core';
import { BERTH_CLI as CLI } from '../testing/run-berth-cli.js';
import { type ClientRun as Run, keyOf, spawnArgv, useServeHarness } from '../testing/serve-harness.js';
import { sandboxCommandArgv } from './sandbox-command-argv.js';
import { errorAnswerSchema, execResultSchema, fileResultSchema } from './socket-schemas.js';

// `berth serve` and spawned `berth exec --socket` clients as a host runs them: the built
// dist/cli.js in subprocesses, against the real engine (testing/serve-harness.ts). The Perl
// client against the Node one: perl-client.integration.test.ts.
const DIST = path.dirname(CLI);
const { root, sandboxes, socket, alice, bob, tokens, environment, berth, exec, startServer } = useServeHarness();

/** One raw request line over the socket, as any local program could send it. */
function rawRequest(socketPath: string, payload: string | Buffer): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const connection = net.connect(socketPath, () => connection.write(payload));
    connection.on('data', (chunk: Buffer) => chunks.push(chunk));
    // The server stops reading after a refusal; the rest of a large write may fail with EPIPE.
    connection.on('error', (error: NodeJS.ErrnoException) => (error.code === 'EPIPE' || error.code === 'ECONNRESET' ? undefined : reject(error)));
    connection.on('close', () => resolve(Buffer.concat(chunks).toString('utf8')));
  });
}

describe('berth serve and berth exec --socket', () => {
  it('creates the socket with mode 0600 in a folder it made with mode 0700', () => {
    expect(statSync(socket).isSocket()).toBe(true);
    expect(statSync(socket).mode & 0o777).toBe(0o600);
    expect(statSync(path.dirname(socket)).mode & 0o777).toBe(0o700);
  });

  it('keeps one persistent session across separately spawned clients of one user', async () => {
    const first = await exec(keyOf(alice), 'cd /tmp; export X=1');
    expect(first).toMatchObject({ status: 0, stderr: '' });
    const second = await exec(keyOf(alice), 'pwd; echo $X');
    expect(second).toMatchObject({ status: 0, stdout: '/tmp\n1\n', stderr: '' });
    expect(existsSync(path.join(sandboxes, 'docker', `telegram@${alice}`, 'workspace'))).toBe(true);
  });

  it('passes stdout, stderr and the exit status on, with the user token masked', async () => {
    const run = await exec(keyOf(alice), 'echo out; echo "token=$GITHUB_TOKEN"; echo err >&2; exit 7');
    expect(run).toEqual({ status: 7, stdout: 'out\ntoken=***\n', stderr: 'err\n' });
  });

  it('gives two session keys two sandboxes: files, variables and tokens apart', async () => {
    await exec(keyOf(alice), 'echo alice-note > /workspace/note.txt; export ONLY_ALICE=a1');
    const run = await exec(keyOf(bob), `cat /workspace/note.txt; echo "[$ONLY_ALICE] [$X]"; [ "$GITHUB_TOKEN" = "${tokens.bob}" ] && echo own-token; env`);
    expect(run.stdout).toContain('[] []');
    expect(run.stdout).toContain('own-token');
    expect(run.stdout).not.toContain('alice-note');
    expect(run.stdout).not.toContain(tokens.alice);
    expect(run.stderr).toMatch(/No such file/);
    expect(readFileSync(path.join(sandboxes, 'docker', `telegram@${alice}`, 'workspace', 'note.txt'), 'utf8')).toBe('alice-note\n');
    expect(existsSync(path.join(sandboxes, 'docker', `telegram@${bob}`, 'workspace', 'note.txt'))).toBe(false);
  });

  it('maps a session key to the same sandbox without the server (berth exec --session-key)', async () => {
    const run = await new Promise<Run>((resolve) => {
      execFile(process.execPath, [CLI, 'exec', '--session-key', keyOf(alice), '--', 'cat /workspace/note.txt'], { env: environment }, (error, stdout, stderr) =>
        resolve({ status: error ? (typeof error.code === 'number' ? error.code : -1) : 0, stdout, stderr }),
      );
    });
    expect(run).toMatchObject({ status: 0, stdout: 'alice-note\n' });
  });

  it("runs a group session key in the group's own sandbox: not a user's, not the shared task sandbox", async () => {
    const task = `sock-it-${randomInt(1e9)}`;
    const group = `agent:main:telegram:group:-${alice}`;
    const run = await exec(group, 'echo group > /workspace/group.txt; echo "[$GITHUB_TOKEN]"', ['--task', task]);
    expect(run).toMatchObject({ status: 0, stdout: '[]\n' });
    expect(readFileSync(path.join(sandboxes, 'docker', taskFolderName(group), 'workspace', 'group.txt'), 'utf8')).toBe('group\n');
    expect(existsSync(path.join(sandboxes, 'docker', task))).toBe(false);
    expect(existsSync(path.join(sandboxes, 'docker', `telegram@${alice}`, 'workspace', 'group.txt'))).toBe(false);
  });

  it('refuses a per-peer session key with the line that names the fix, and runs nothing', async () => {
    const run = await exec(`agent:main:direct:${alice}`, 'touch /workspace/per-peer.txt');
    expect(run.status).toBe(125);
    expect(run.stderr).toMatch(/^berth: session key agent:<agent>:direct:<peer> .*session\.dmScope: per-channel-peer.*\n$/);
    expect(run.stderr).not.toContain(alice);
    expect(existsSync(path.join(sandboxes, 'docker', `telegram@${alice}`, 'workspace', 'per-peer.txt'))).toBe(false);
  });

  it('forwards stdin with --stdin, and exits 124 after a timeout with the session still usable', async () => {
    const piped = await berth(['exec', '--socket', socket, '--session-key', keyOf(alice), '--stdin', '--', 'tr a-z A-Z'], 'hello\n');
    expect(piped).toMatchObject({ status: 0, stdout: 'HELLO\n' });
    const slow = await exec(keyOf(alice), 'echo started; sleep 30', ['--timeout', '1']);
    expect(slow.status).toBe(124);
    expect(slow.stdout).toContain('started');
    expect(await exec(keyOf(alice), 'pwd; echo $X')).toMatchObject({ status: 0, stdout: '/tmp\n1\n' });
  });

  it('does not interleave the output of 10 concurrent clients of one user', async () => {
    const runs = await Promise.all(
      Array.from({ length: 10 }, (_, client) =>
        exec(keyOf(bob), `for i in 1 2 3 4 5; do echo "c${client}-$i"; sleep 0.01; echo "c${client}-err-$i" >&2; done`),
      ),
    );
    runs.forEach((run, client) => {
      expect(run.status).toBe(0);
      expect(run.stdout).toBe([1, 2, 3, 4, 5].map((i) => `c${client}-${i}\n`).join(''));
      expect(run.stderr).toBe([1, 2, 3, 4, 5].map((i) => `c${client}-err-${i}\n`).join(''));
    });
  });

  it.each([
    ['malformed JSON', '{"v":1,"command":\n', 'REQUEST_MALFORMED', /not valid JSON/],
    [
      'an unknown field',
      `${JSON.stringify({ v: 1, command: 'touch /workspace/pwned', sessionKey: keyOf(alice), runAs: 'root' })}\n`,
      'REQUEST_INVALID',
      /unknown field "runAs"/,
    ],
    ['an oversized request', Buffer.alloc(3 * 1024 * 1024, 'a'), 'REQUEST_TOO_LARGE', /larger than 1048576 bytes/],
  ])('answers %s with a one-line error and keeps serving', async (_label, payload, code, message) => {
    const answer = await rawRequest(socket, payload);
    expect(answer.endsWith('\n')).toBe(true);
    expect(answer.trimEnd().split('\n')).toHaveLength(1);
    const parsed = JSON.parse(answer) as { error: { code: string; message: string } };
    expect(parsed.error.code).toBe(code);
    expect(parsed.error.message).toMatch(message);
    expect(existsSync(path.join(sandboxes, 'docker', `telegram@${alice}`, 'workspace', 'pwned'))).toBe(false);
    expect(await exec(keyOf(alice), 'echo still-here')).toMatchObject({ status: 0, stdout: 'still-here\n' });
  });

  it("answers in the wire contract's shapes: a command's result, a file's, a refusal", async () => {
    const answer = async (request: object): Promise<unknown> =>
      JSON.parse(await rawRequest(socket, `${JSON.stringify({ v: 1, sessionKey: keyOf(alice), ...request })}\n`));
    expect(execResultSchema.parse(await answer({ command: 'echo contract' }))).toMatchObject({ exitCode: 0, stdout: 'contract\n', timedOut: false });
    const source = path.join(root, 'contract-note.txt');
    writeFileSync(source, 'note\n');
    expect(fileResultSchema.parse(await answer({ op: 'put-file', source, path: '/workspace/contract-note.txt' }))).toMatchObject({ bytes: 5 });
    expect(errorAnswerSchema.parse(await answer({ command: 'true', timeout: 0 }))).toMatchObject({ error: { code: 'REQUEST_INVALID' } });
  });

  it('exits 125 with one line for a bad id, creating nothing', async () => {
    const scopes = () => (existsSync(path.join(sandboxes, 'docker')) ? readdirSync(path.join(sandboxes, 'docker')).sort() : []);
    const before = scopes();
    const run = await berth(['exec', '--socket', socket, '--platform', 'telegram', '--user', '../etc', '--', 'true']);
    expect(run.status).toBe(125);
    expect(run.stderr).toMatch(/^berth: telegram sender "\.\.\/etc" is not a user id/);
    expect(run.stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(scopes()).toEqual(before);
  });

  it('exits 125 naming the socket and how to start the server when none is there', async () => {
    const missing = path.join(root, 'run', 'missing.sock');
    const run = await berth(['exec', '--socket', missing, '--session-key', keyOf(alice), '--', 'true']);
    expect(run.status).toBe(125);
    expect(run.stderr).toBe(`berth: no berth server at ${missing}: the socket does not exist; start the server with "berth serve --socket ${missing}"\n`);
  });

  it('loads neither @berth/core, zod nor dockerode on the client path', () => {
    // Follows the static imports of dist/cli.js and of the client's dynamic chunk.
    const entry = readFileSync(CLI, 'utf8');
    const clientChunk = /import\("\.\/(socket-exec-command-[^"]+\.js)"\)/.exec(entry)?.[1];
    expect(clientChunk).toBeDefined();
    const seen = new Set<string>();
    const visit = (file: string): void => {
      if (seen.has(file)) return;
      seen.add(file);
      const text = readFileSync(path.join(DIST, file), 'utf8');
      for (const match of text.matchAll(/^(?:import|export)\b[^;]*?from\s+"([^"]+)"|^import\s+"([^"]+)"/gm)) {
        const specifier = (match[1] ?? match[2])!;
        expect(specifier, `${file} imports ${specifier}`).not.toMatch(/^@berth\/|^zod$|^dockerode$|^yaml$/);
        if (specifier.startsWith('./')) visit(specifier.slice(2));
      }
    };
    visit('cli.js');
    visit(clientChunk!);
    expect(seen.size).toBeGreaterThan(2);
  });

  it('runs the argv sandboxCommandArgv gives, with either client', async () => {
    for (const client of ['perl', 'node'] as const) {
      const argv = sandboxCommandArgv({ socket, sessionKey: keyOf(alice), command: 'pwd; echo $X', cli: CLI, client });
      expect(argv[0]).toMatch(client === 'perl' ? /perl$/ : /node$/);
      const run = await new Promise<Run>((resolve) => {
        execFile(argv[0]!, argv.slice(1), { env: {} }, (error, stdout, stderr) =>
          resolve({ status: error ? (typeof error.code === 'number' ? error.code : -1) : 0, stdout, stderr }),
        );
      });
      expect(run).toEqual({ status: 0, stdout: '/tmp\n1\n', stderr: '' });
    }
  });
});

// Switching to another local user needs root and runuser; elsewhere (an ordinary user's machine)
// this attack cannot be tried from inside the test, so it is skipped there, not faked.
const canSwitchUser = process.getuid?.() === 0 && existsSync('/usr/sbin/runuser');

describe('another local user', () => {
  it.skipIf(!canSwitchUser)('cannot connect, even when every folder on the way is opened', async () => {
    const run = path.dirname(socket);
    chmodSync(root, 0o755);
    chmodSync(run, 0o755);
    try {
      const script =
        `require('net').connect(${JSON.stringify(socket)}).on('connect', () => { console.log('CONNECTED'); ` +
        "process.exit(0); }).on('error', (e) => { console.log(e.code); process.exit(0); })";
      const attempt = await new Promise<string>((resolve) =>
        execFile('/usr/sbin/runuser', ['-u', 'nobody', '--', process.execPath, '-e', script], { timeout: 30_000 }, (_error, stdout) => resolve(stdout.trim())),
      );
      expect(attempt).toBe('EACCES');
    } finally {
      chmodSync(run, 0o700);
      chmodSync(root, 0o700);
    }
  });
});

describe('the socket path', () => {
  it('refuses a path that is not a socket, and leaves the file alone', async () => {
    const file = path.join(root, 'run', 'not-a-socket');
    writeFileSync(file, 'keep me');
    const run = await berth(['serve', '--socket', file]);
    expect(run.status).toBe(125);
    expect(run.stderr).toMatch(/not-a-socket exists and is not a socket/);
    expect(readFileSync(file, 'utf8')).toBe('keep me');
  });

  it('refuses a socket another server listens on', async () => {
    const run = await berth(['serve', '--socket', socket]);
    expect(run.status).toBe(125);
    expect(run.stderr).toMatch(/another server already listens on/);
    expect(await exec(keyOf(alice), 'echo ok')).toMatchObject({ status: 0, stdout: 'ok\n' });
  });

  it('refuses a folder other users can write to', async () => {
    const open = path.join(root, 'open');
    mkdirSync(open);
    chmodSync(open, 0o777);
    const run = await berth(['serve', '--socket', path.join(open, 'b.sock')]);
    expect(run.status).toBe(125);
    expect(run.stderr).toMatch(/is writable by other users/);
  });

  it('replaces a stale socket, and SIGTERM removes the socket', async () => {
    const other = path.join(root, 'run2', 'b.sock');
    const killed = await startServer(other);
    killed.child.kill('SIGKILL');
    await killed.exited;
    expect(statSync(other).isSocket()).toBe(true);
    const stale = await berth(['exec', '--socket', other, '--', 'true']);
    expect(stale.status).toBe(125);
    expect(stale.stderr).toMatch(/nothing listens on .*b\.sock/);
    const perl = await spawnArgv(sandboxCommandArgv({ socket: other, command: 'true', client: 'perl' }));
    expect({ status: perl.status, stderr: perl.stderr.toString() }).toEqual({ status: 125, stderr: stale.stderr });

    const fresh = await startServer(other);
    expect(statSync(other).mode & 0o777).toBe(0o600);
    fresh.child.kill('SIGTERM');
    const code = await fresh.exited;
    expect(code).toBe(0);
    expect(existsSync(other)).toBe(false);
  });
});
