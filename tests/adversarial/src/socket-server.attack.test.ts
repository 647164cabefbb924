import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { releaseDisksUnder } from '@berth/gateway-plugin';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ATTACK_IMAGE, containersUnder, docker, randomTelegramUser, removeContainersUnder, temporarySandboxDir } from './support/attack-gateway.js';

// `berth serve` under a local attacker who can connect to its socket: a request sent one byte
// at a time, hundreds of idle connections, and the server killed in the middle of a command.
const CLI = path.resolve(import.meta.dirname, '..', '..', '..', 'apps', 'gateway-plugin', 'dist', 'cli.js');
const root = temporarySandboxDir('socket');
const home = path.join(root, 'hermes');
const sandboxes = path.join(root, 'sandboxes');
const socket = path.join(root, 'berth.sock');
const user = randomTelegramUser();
const others = [randomTelegramUser(), randomTelegramUser(), randomTelegramUser()];
const keyOf = (sender: { userId: string | number }) => `agent:main:telegram:direct:${sender.userId}`;

interface Server {
  child: ChildProcess;
  exited: Promise<number | null>;
}

function startServer(): Promise<Server> {
  const child = spawn(process.execPath, [CLI, 'serve', '--socket', socket], {
    env: { PATH: process.env.PATH ?? '', HOME: root, HERMES_HOME: home, TERMINAL_SANDBOX_DIR: sandboxes },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return new Promise((resolve, reject) => {
    let stdout = '';
    let stderr = '';
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.stdout!.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      if (stdout.includes('listening on')) resolve({ child, exited });
    });
    void exited.then((code) => reject(new Error(`berth serve exited ${code} before listening: ${stderr.trim()}`)));
  });
}

/** Sends `request` (a JSON object) as one line and resolves with the parsed answer line. */
function ask(request: Record<string, unknown>): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const connection = net.connect(socket, () => connection.write(`${JSON.stringify({ v: 1, ...request })}\n`));
    connection.on('data', (chunk: Buffer) => chunks.push(chunk));
    connection.on('error', reject);
    connection.on('close', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      try {
        resolve(JSON.parse(text) as Record<string, unknown>);
      } catch {
        reject(new Error(`not one JSON line: ${JSON.stringify(text.slice(0, 200))}`));
      }
    });
  });
}

let server: Server;

beforeAll(async () => {
  mkdirSync(home, { recursive: true });
  writeFileSync(path.join(home, 'config.yaml'), `terminal:\n  docker_image: ${ATTACK_IMAGE}\n  docker_network: false\n  timeout: 60\n`);
  server = await startServer();
  for (const sender of [user, ...others])
    expect(await ask({ sessionKey: keyOf(sender), command: 'echo warm' })).toMatchObject({ exitCode: 0, stdout: 'warm\n' });
});

afterAll(async () => {
  if (server?.child.exitCode === null) server.child.kill('SIGKILL');
  await removeContainersUnder(sandboxes);
  await releaseDisksUnder(sandboxes);
  rmSync(root, { recursive: true, force: true });
});

describe('socket server: the request deadline, idle connections, and a server that dies', () => {
  it('closes a connection that trickles its request a byte at a time, at the whole-request deadline (10 s), not an idle timer', async () => {
    const started = Date.now();
    const answer = await new Promise<string>((resolve) => {
      const chunks: Buffer[] = [];
      const connection = net.connect(socket);
      const line = `${JSON.stringify({ v: 1, sessionKey: keyOf(user), command: 'echo trickled' })}\n`;
      let index = 0;
      const timer = setInterval(() => {
        if (index < line.length && !connection.destroyed) connection.write(line[index++]!);
      }, 500);
      connection.on('data', (chunk: Buffer) => chunks.push(chunk));
      connection.on('error', () => undefined);
      connection.on('close', () => {
        clearInterval(timer);
        resolve(Buffer.concat(chunks).toString('utf8'));
      });
    });
    const elapsed = Date.now() - started;
    expect(JSON.parse(answer)).toMatchObject({ error: { code: 'REQUEST_TIMEOUT' } });
    // The line has ~80 bytes at two a second: an idle timer would have let it finish in ~40 s.
    expect(elapsed).toBeLessThan(20_000);
  });

  it('answers 200 real requests while 1100 idle connections (more than the 1024 it holds) are open', async () => {
    const idle: net.Socket[] = [];
    for (let index = 0; index < 1100; index++) {
      const connection = net.connect(socket);
      connection.on('error', () => undefined);
      idle.push(connection);
    }
    // Past their grace (1 s), the oldest idle ones make room for real requests.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    try {
      // Four users, fifty each: within what one sandbox may queue (64), so only the idle connections are in the way.
      const senders = [user, ...others];
      const answers = await Promise.all(
        Array.from({ length: 200 }, (_unused, index) =>
          ask({ sessionKey: keyOf(senders[index % 4]!), command: `echo real-${index}` }).catch(
            (error: Error): Record<string, unknown> => ({ error: error.message }),
          ),
        ),
      );
      const answered = answers.filter((answer, index) => answer.stdout === `real-${index}\n`);
      expect(answered).toHaveLength(200);
    } finally {
      for (const connection of idle) connection.destroy();
    }
  });

  it("one user's pile of waiting requests locks no one else out: each sandbox's queue is bounded, and only running commands count", async () => {
    const attacker = randomTelegramUser();
    expect(await ask({ sessionKey: keyOf(attacker), command: 'echo warm' })).toMatchObject({ exitCode: 0 });
    // 260 commands of one user at once (in OpenClaw each exec the agent starts is a connection).
    const piled = Array.from({ length: 260 }, () =>
      ask({ sessionKey: keyOf(attacker), command: 'sleep 3', timeout: 30 }).catch(
        (error: Error): Record<string, unknown> => ({ error: { code: error.message } }),
      ),
    );
    const refused: Array<Record<string, unknown>> = [];
    for (const pending of piled) void pending.then((answer) => (answer.error ? refused.push(answer) : undefined));
    for (let wait = 0; wait < 300 && refused.length < 260 - 65; wait++) await new Promise((resolve) => setTimeout(resolve, 100));
    // One runs, 64 wait behind it, the rest are told at once, in one line, why.
    expect(refused).toHaveLength(260 - 65);
    for (const answer of refused)
      expect(answer).toMatchObject({ error: { code: 'SERVER_BUSY', message: expect.stringMatching(/this sandbox already has 64 commands waiting/) } });
    // Everyone else is answered meanwhile, a new user included, as often as they ask.
    const newcomer = randomTelegramUser();
    for (let round = 0; round < 10; round++) {
      const answers = await Promise.all([user, ...others, newcomer].map((sender) => ask({ sessionKey: keyOf(sender), command: `echo round-${round}` })));
      for (const answer of answers) expect(answer).toMatchObject({ exitCode: 0, stdout: `round-${round}\n` });
    }
  });

  it('a command does not outlive a server killed in the middle of it: the kill happens inside the sandbox', async () => {
    const marker = `/workspace/outlived-${Date.now()}`;
    const pending = ask({ sessionKey: keyOf(user), command: `sleep 8; touch ${marker}`, timeout: 4 }).catch((error: Error) => error);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    server.child.kill('SIGKILL');
    await server.exited;
    expect(await pending).toBeInstanceOf(Error);
    // Seen from outside: the sleep is gone well before its own end and its timeout.
    const [container] = (await containersUnder(sandboxes)).filter((info) => info.Labels?.['dev.berth.scope'] === `user:telegram:${user.userId}`);
    expect(container).toBeDefined();
    await new Promise((resolve) => setTimeout(resolve, 2000));
    const top = await docker.getContainer(container!.Id).top({ ps_args: '-o pid,args' });
    expect((top.Processes ?? []).map((row: string[]) => row.join(' ')).filter((line: string) => /sleep 8/.test(line))).toEqual([]);
    await new Promise((resolve) => setTimeout(resolve, 7000));
    server = await startServer();
    const seen = await ask({ sessionKey: keyOf(user), command: `ls ${marker} 2>&1 || echo absent` });
    expect(String(seen.stdout)).toMatch(/absent|No such file/);
  });
});
