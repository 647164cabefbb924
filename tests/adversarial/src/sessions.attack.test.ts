import { randomInt } from 'node:crypto';
import net from 'node:net';
import path from 'node:path';
import { runWithSession } from '@berth/core';
import { serveSandboxes, type SandboxSocketServer } from '@berth/gateway-plugin/socket';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomTelegramUser, startAttackGateway, type AttackGateway } from './support/attack-gateway.js';

// Sessions that name a chat but no user (a cron job, a group without a key), a user id without
// a platform, a platform spelled by its alias, and a gateway command with no session at all:
// through the plugin's terminal tool and through berth serve's socket, as a host or the Hermes
// bridge sends them. Each chat gets its own sandbox, whatever alias names its platform; what names
// nobody Berth can attribute is refused; nothing runs in the one shared task sandbox.
let gateway: AttackGateway;
let server: SandboxSocketServer;
let socket: string;

beforeAll(async () => {
  gateway = await startAttackGateway({ config: { docker_network: false } });
  socket = path.join(gateway.sandboxDir, 'berth.sock');
  server = await serveSandboxes({ berth: gateway.berth, socket });
});

afterAll(async () => {
  await server?.close();
  await gateway?.cleanup();
});

/** One request line over the socket, as the Hermes bridge sends it; the parsed answer. */
function ask(request: Record<string, unknown>): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const connection = net.connect(socket, () => connection.write(`${JSON.stringify({ v: 1, taskId: 'default', ...request })}\n`));
    connection.on('data', (chunk: Buffer) => chunks.push(chunk));
    connection.on('error', reject);
    connection.on('close', () => {
      try {
        resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>);
      } catch (error) {
        reject(error);
      }
    });
  });
}

const group = (): string => `-100${randomInt(1_000_000_000, 9_999_999_999)}`;
const tasks = async (): Promise<string[]> =>
  (await gateway.containers()).map((container) => container.Labels?.['dev.berth.task'] ?? container.Labels?.['dev.berth.scope'] ?? '').sort();

describe('sessions without a user: a chat gets its own sandbox, what names nobody is refused', () => {
  it("over the socket: two cron chats and a group without a key each get their own sandbox; none reads another's file", async () => {
    const [chatA, chatB, chatC] = [randomTelegramUser().userId, randomTelegramUser().userId, group()];
    const wrote = await ask({
      platform: 'telegram',
      chatId: String(chatA),
      sessionRequired: true,
      command: 'echo secret-of-A > /workspace/a-cron.txt; echo ok',
    });
    expect(wrote).toMatchObject({ exitCode: 0, stdout: 'ok\n', scope: `task:chat:telegram:${chatA}` });
    for (const chat of [chatB, chatC]) {
      const read = await ask({ platform: 'telegram', chatId: String(chat), sessionRequired: true, command: 'cat /workspace/a-cron.txt 2>&1; echo done' });
      expect(read.scope).toBe(`task:chat:telegram:${chat}`);
      expect(String(read.stdout)).not.toContain('secret-of-A');
    }
    expect(await ask({ platform: 'telegram', chatId: String(chatA), command: 'cat /workspace/a-cron.txt' })).toMatchObject({ stdout: 'secret-of-A\n' });
    expect(await tasks()).not.toContain('default');
  });

  it('a platform alias names the same chat: tg and telegram share one sandbox, never two', async () => {
    const chat = group();
    const first = await runWithSession({ platform: 'tg', chatId: chat }, () => gateway.berth.execute('echo from-tg > /workspace/who; echo ok'));
    const second = await runWithSession({ platform: 'Telegram', chatId: chat }, () => gateway.berth.execute('cat /workspace/who'));
    expect([first.scopeKey, second.scopeKey]).toEqual([`task:chat:telegram:${chat}`, `task:chat:telegram:${chat}`]);
    expect(second.stdout).toBe('from-tg\n');
    expect((await tasks()).filter((task) => task.endsWith(`:${chat}`))).toEqual([`chat:telegram:${chat}`]);
  });

  it('a user id without a platform, a chat id without a platform, a platform alone, and a gateway request that names nobody are refused, with nothing created', async () => {
    const before = await tasks();
    const refusals = [
      await ask({ userId: String(randomTelegramUser().userId), command: 'echo ran' }),
      await ask({ chatId: group(), command: 'echo ran' }),
      await ask({ platform: 'telegram', command: 'echo ran' }),
      await ask({ sessionRequired: true, command: 'echo ran' }),
    ];
    for (const answer of refusals) {
      expect(answer).toMatchObject({ error: { code: 'SESSION_UNATTRIBUTABLE' } });
      expect(String((answer as { error: { message: string } }).error.message).split('\n')).toHaveLength(1);
    }
    expect(refusals[3]).toMatchObject({ error: { message: expect.stringMatching(/names no platform, user, chat or session key/) } });
    expect(await tasks()).toEqual(before);
    expect(before).not.toContain('default');
  });

  it('a single-user caller (no sessionRequired) with no session keeps the task layout', async () => {
    expect(await ask({ taskId: 'legacy-task', command: 'echo legacy' })).toMatchObject({ exitCode: 0, stdout: 'legacy\n', scope: 'task:legacy-task' });
  });
});
