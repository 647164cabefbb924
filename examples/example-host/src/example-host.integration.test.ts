import { randomBytes, randomInt } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { INSTALLATION_KEY_FILE, LOCKS_FOLDER, parseTerminalConfig, PURGE_FOLDER } from '@berth/core';
import { BOUND_HOLDERS_FOLDER } from '@berth/core/driver';
import { createBerthResolver, releaseDisksUnder } from '@berth/gateway-plugin';
import { createExampleHost, type ExampleHost } from './example-host.js';

// The plugin end to end through a host, on the real Docker engine with the local base image.
const sandboxDir = mkdtempSync(path.join(os.tmpdir(), 'berth-example-host-'));
const telegramUser = String(randomInt(100_000_000, 2_000_000_000));
const whatsappUser = `+1555${randomInt(1_000_000, 9_999_999)}`;
// The exact variable prefix of a user, as `berth env` prints it for an operator.
const resolver = await createBerthResolver({ config: parseTerminalConfig({}), environment: {} });
const whatsappPrefix = resolver.index.prefixFor(resolver.registry.resolve('whatsapp', whatsappUser));
const tokens = { telegram: `ghp_tg_${randomBytes(8).toString('hex')}`, whatsapp: `ghp_wa_${randomBytes(8).toString('hex')}` };
const environment = {
  [`HERMES_USER_TELEGRAM_${telegramUser}_GITHUB_TOKEN`]: tokens.telegram,
  [`${whatsappPrefix}GITHUB_TOKEN`]: tokens.whatsapp,
  TEAM_NOTICE: 'team-notice-value',
};
let host: ExampleHost;

beforeAll(async () => {
  host = createExampleHost({
    config: { docker_image: 'localhost/berth-busybox:latest', sandbox_dir: sandboxDir, docker_forward_env: ['TEAM_NOTICE'], timeout: 60 },
    environment,
  });
  await host.start();
});

afterAll(async () => {
  try {
    const berth = host.plugin.instances[0];
    // Remove every sandbox this test made: those whose folders are under its sandbox root.
    for (const sandbox of (await berth?.backend.list()) ?? []) {
      if (sandbox.workspace.startsWith(sandboxDir + path.sep)) await berth!.backend.remove(sandbox.scopeKey);
    }
    await host.stop();
  } finally {
    await releaseDisksUnder(sandboxDir);
    rmSync(sandboxDir, { recursive: true, force: true });
  }
});

describe('the example host', () => {
  it('registers the plugin under its own name', () => {
    expect(host.terminal.reservedNames).toEqual(['docker', 'local']);
    expect(host.plugin.instances).toHaveLength(1);
  });

  it("runs two users' messages at once, each in their own sandbox with their own token", async () => {
    const write = (user: string) => `echo "written by ${user}" > /workspace/${user}.txt; echo "$GITHUB_TOKEN" > /root/token-copy; ls /workspace`;
    const [telegram, whatsapp] = await Promise.all([
      host.handle({ platform: 'telegram', senderId: Number(telegramUser), chatId: Number(telegramUser), command: write('tg') }),
      host.handle({ platform: 'whatsapp', senderId: whatsappUser, chatId: whatsappUser, command: write('wa') }),
    ]);
    expect(telegram).toEqual({ output: 'tg.txt\n', returncode: 0 });
    expect(whatsapp).toEqual({ output: 'wa.txt\n', returncode: 0 });

    const read = (own: string) =>
      `[ "$GITHUB_TOKEN" = "${own}" ] && echo own-token; echo "notice=$TEAM_NOTICE"; cat /workspace/tg.txt /workspace/wa.txt 2>&1; env`;
    const [telegramRead, whatsappRead] = await Promise.all([
      host.handle({ platform: 'telegram', senderId: telegramUser, chatId: 'group-1', command: read(tokens.telegram) }),
      host.handle({ platform: 'whatsapp', senderId: whatsappUser, chatId: 'group-1', command: read(tokens.whatsapp) }),
    ]);
    expect(telegramRead.output).toContain('own-token');
    expect(telegramRead.output).toContain('notice=***');
    expect(telegramRead.output).toContain('written by tg');
    expect(telegramRead.output).not.toContain('written by wa');
    expect(telegramRead.output).not.toContain(tokens.whatsapp);
    expect(telegramRead.output).not.toContain(tokens.telegram);
    expect(whatsappRead.output).toContain('own-token');
    expect(whatsappRead.output).toContain('written by wa');
    expect(whatsappRead.output).not.toContain('written by tg');
    expect(whatsappRead.output).not.toContain(tokens.telegram);

    // On the host: each user's files in their own folder, named after the canonical id.
    const telegramFolder = path.join(sandboxDir, 'docker', `telegram@${telegramUser}`);
    expect(readFileSync(path.join(telegramFolder, 'workspace', 'tg.txt'), 'utf8')).toBe('written by tg\n');
    expect(readFileSync(path.join(telegramFolder, 'home', 'token-copy'), 'utf8')).toBe(`${tokens.telegram}\n`);
    expect(existsSync(path.join(telegramFolder, 'workspace', 'wa.txt'))).toBe(false);
  });

  it("keeps a user's files between messages, and cd and export too with a persistent shell", async () => {
    const first = await host.handle({ platform: 'telegram', senderId: telegramUser, chatId: telegramUser, command: 'cd /tmp && export STEP=one && echo ok' });
    const second = await host.handle({
      platform: 'telegram',
      senderId: telegramUser,
      chatId: telegramUser,
      command: 'echo "$STEP $(pwd)"; cat /workspace/tg.txt',
    });
    expect(first.output).toBe('ok\n');
    expect(second.output).toContain('written by tg');
    if (host.plugin.instances[0]!.backend.capabilities.persistentSession) expect(second.output).toMatch(/^one \/tmp\n/);
  });

  it('runs commands with no user in the legacy task layout, without user variables', async () => {
    const result = await host.runWithoutUser('echo "task [$GITHUB_TOKEN]" > /workspace/task.txt; cat /workspace/task.txt; ls /workspace');
    expect(result).toEqual({ output: 'task []\ntask.txt\n', returncode: 0 });
    expect(existsSync(path.join(sandboxDir, 'docker', 'example', 'workspace', 'task.txt'))).toBe(true);
  });

  it('returns the exit code, stderr after stdout, and 124 after a timeout', async () => {
    const failed = await host.handle({ platform: 'whatsapp', senderId: whatsappUser, chatId: whatsappUser, command: 'echo out; echo err >&2; exit 3' });
    expect(failed).toEqual({ output: 'out\nerr\n', returncode: 3 });
    const provider = host.plugin.instances[0]!;
    const timed = await provider.execute('sleep 30', { session: { platform: 'whatsapp', userId: whatsappUser }, timeout: 1 });
    expect(timed.exitCode).toBe(124);
    expect(timed.timedOut).toBe(true);
  });

  it('refuses a malicious sender id without touching the sandbox root', async () => {
    await expect(host.handle({ platform: 'telegram', senderId: '../../etc', chatId: 1, command: 'id' })).rejects.toThrow(/telegram/);
    await expect(host.handle({ platform: 'whatsapp', senderId: 'a/b', chatId: 1, command: 'id' })).rejects.toThrow(/whatsapp/);
    // The scope folders; beside them only the gateway's own bookkeeping: the installation key
    // that names the sandboxes, the scope locks, the purge tombstones and the shared bound's holders.
    const entries = readdirSync(path.join(sandboxDir, 'docker'));
    for (const name of entries.filter((entry) => entry.startsWith('.'))) {
      expect([INSTALLATION_KEY_FILE, LOCKS_FOLDER, PURGE_FOLDER, BOUND_HOLDERS_FOLDER]).toContain(name);
    }
    const folders = entries.filter((name) => !name.startsWith('.')).sort();
    expect(folders).toHaveLength(3);
    expect(folders).toEqual(expect.arrayContaining(['example', `telegram@${telegramUser}`]));
    expect(folders.filter((folder) => folder.startsWith('whatsapp@'))).toHaveLength(1);
    // No lock was taken for the refused ids either: every lock belongs to one of those folders.
    const locks = path.join(sandboxDir, 'docker', LOCKS_FOLDER);
    const lockFiles = existsSync(locks) ? readdirSync(locks) : [];
    for (const lock of lockFiles) expect(folders).toContain(lock.replace(/\.lock$/, ''));
  });
});
