import { chownSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { BERTH_CLI as CLI } from '../testing/run-berth-cli.js';
import { keyOf, spawnArgv, useServeHarness } from '../testing/serve-harness.js';
import { sandboxCommandArgv } from './sandbox-command-argv.js';

// The Perl client (client/berth-socket-client.pl) against the Node one, byte for byte, on the
// same server: the built dist/cli.js as `berth serve`, the real engine (testing/serve-harness.ts).
const { root, socket, alice } = useServeHarness();

describe('the Perl client', () => {
  type Case = {
    command: string;
    sessionKey?: string;
    platform?: string;
    userId?: string;
    cwd?: string;
    timeout?: number;
    input?: Buffer;
    socketPath?: string;
    expect: { status: number; stdout?: string | RegExp; stderr?: string | RegExp };
  };
  const mixedInput = Buffer.concat([Buffer.from('a "quoted" \\ back\tslash }\n\u0001 é 🙂\r\n'), Buffer.from([0xff, 0xfe, 0x0a])]);
  const cases: Array<[string, Case]> = [
    [
      'tabs, quotes, backslashes, UTF-8 and astral characters, stderr and a status',
      {
        command: `printf 'tab\\there \\\\ "quoted" \\303\\251\\360\\237\\231\\202\\n'; echo to-stderr >&2; exit 3`,
        expect: { status: 3, stdout: 'tab\there \\ "quoted" é🙂\n', stderr: 'to-stderr\n' },
      },
    ],
    ['output that is not UTF-8', { command: `printf '\\377\\376 ok\\n'`, expect: { status: 0, stdout: '\ufffd\ufffd ok\n' } }],
    ['nothing at all', { command: 'true', expect: { status: 0, stdout: '', stderr: '' } }],
    ['the user token, masked', { command: 'echo "token=$GITHUB_TOKEN"', expect: { status: 0, stdout: 'token=***\n' } }],
    ['a status of 255, and one from a signal', { command: 'sh -c "kill -9 \\$\\$"; exit 255', expect: { status: 255 } }],
    ['output past the limit, cut alike', { command: 'seq 1 400000', expect: { status: 0, stdout: /^1\n2\n[\s\S]*\n400000\n$/ } }],
    ['a directory of its own', { command: 'pwd', cwd: '/tmp', expect: { status: 0, stdout: '/tmp\n' } }],
    [
      'input with quotes, braces, control bytes and bytes that are not UTF-8',
      { command: 'od -An -c', input: mixedInput, expect: { status: 0, stdout: /"\s+q\s+u[\s\S]*\}/ } },
    ],
    [
      'a timeout (124, the session kept)',
      { command: 'echo started; sleep 30', timeout: 1, expect: { status: 124, stdout: 'started\n', stderr: /killed at its timeout of 1 s\n$/ } },
    ],
    [
      'a per-peer session key (refused)',
      {
        command: 'touch /workspace/per-peer.txt',
        sessionKey: `agent:main:direct:${alice}`,
        expect: { status: 125, stderr: /^berth: session key agent:<agent>:direct:<peer> .*\n$/ },
      },
    ],
    [
      'a bad user id (refused)',
      { command: 'true', platform: 'telegram', userId: '../etc', expect: { status: 125, stderr: /^berth: telegram sender "\.\.\/etc" is not a user id/ } },
    ],
    [
      'no socket at the path',
      {
        command: 'true',
        socketPath: path.join(root, 'run', 'missing.sock'),
        expect: { status: 125, stderr: /^berth: no berth server at .*missing\.sock: the socket does not exist; start the server with/ },
      },
    ],
    [
      'a file that is not a socket',
      { command: 'true', socketPath: path.join(root, 'plain-file'), expect: { status: 125, stderr: /plain-file is not a socket; start the server with/ } },
    ],
  ];

  it.each(cases)('answers as the Node client does: %s', async (_label, testCase) => {
    writeFileSync(path.join(root, 'plain-file'), 'not a socket');
    const options = {
      socket: testCase.socketPath ?? socket,
      command: testCase.command,
      ...(testCase.platform !== undefined ? { platform: testCase.platform, userId: testCase.userId! } : { sessionKey: testCase.sessionKey ?? keyOf(alice) }),
      ...(testCase.cwd !== undefined ? { cwd: testCase.cwd } : {}),
      ...(testCase.timeout !== undefined ? { timeout: testCase.timeout } : {}),
      ...(testCase.input !== undefined ? { forwardStdin: true } : {}),
      cli: CLI,
    };
    const perl = await spawnArgv(sandboxCommandArgv({ ...options, client: 'perl' }), testCase.input);
    const node = await spawnArgv(sandboxCommandArgv({ ...options, client: 'node' }), testCase.input);
    expect(perl.status).toBe(testCase.expect.status);
    for (const stream of ['stdout', 'stderr'] as const) {
      const wanted = testCase.expect[stream];
      if (typeof wanted === 'string') expect(perl[stream].toString('utf8')).toBe(wanted);
      else if (wanted) expect(perl[stream].toString('utf8')).toMatch(wanted);
    }
    expect({ status: perl.status, stdout: perl.stdout.toString('base64'), stderr: perl.stderr.toString('base64') }).toEqual({
      status: node.status,
      stdout: node.stdout.toString('base64'),
      stderr: node.stderr.toString('base64'),
    });
  });

  it('sends nothing to a socket another user owns', async () => {
    const foreign = path.join(root, 'run', 'foreign.sock');
    let connections = 0;
    const decoy = net.createServer(() => connections++);
    await new Promise<void>((resolve) => decoy.listen(foreign, resolve));
    try {
      chownSync(foreign, 65534, 65534);
      for (const client of ['perl', 'node'] as const) {
        const run = await spawnArgv(sandboxCommandArgv({ socket: foreign, sessionKey: keyOf(alice), command: 'echo secret-command', cli: CLI, client }));
        expect(run.status).toBe(125);
        expect(run.stderr.toString()).toBe(
          `berth: ${foreign} belongs to uid 65534, not to you (uid ${process.getuid!()}); refusing to send a command to another user's server\n`,
        );
      }
      expect(connections).toBe(0);
    } finally {
      await new Promise((resolve) => decoy.close(resolve));
    }
  });

  it('says so when the server is not berth serve, or cuts its answer short', async () => {
    const fake = path.join(root, 'run', 'fake.sock');
    const answers = ['HTTP/1.1 400 Bad Request\r\n\r\n', 'BERTH1 0 0 0 10 0\nshort', ''];
    let next = 0;
    const decoy = net.createServer((connection) => connection.once('data', () => connection.end(answers[next++] ?? '')));
    await new Promise<void>((resolve) => decoy.listen(fake, resolve));
    try {
      // A request file is read once: an argv for each spawn, as a host builds them.
      const perl = () => sandboxCommandArgv({ socket: fake, sessionKey: keyOf(alice), command: 'true', client: 'perl' });
      expect((await spawnArgv(perl())).stderr.toString()).toMatch(
        /^berth: the server on .*fake\.sock answered something that is neither a framed result nor a refusal/,
      );
      expect((await spawnArgv(perl())).stderr.toString()).toMatch(/^berth: the server on .*fake\.sock answered a cut or padded result/);
      const closed = await spawnArgv(perl());
      expect(closed.status).toBe(125);
      expect(closed.stderr.toString()).toMatch(/closed the connection without answering/);
    } finally {
      await new Promise((resolve) => decoy.close(resolve));
    }
  });
});
