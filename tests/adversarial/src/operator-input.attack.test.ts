import { execFile } from 'node:child_process';
import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { ConfigError } from '@berth/core';
import { releaseDisksUnder } from '@berth/gateway-plugin';
import { afterAll, describe, expect, it } from 'vitest';
import { ATTACK_IMAGE, randomSecret, randomTelegramUser, startAttackGateway, temporarySandboxDir, type AttackGateway } from './support/attack-gateway.js';

// What an operator types, and what the gateway's environment holds, aimed at other people's
// sandboxes or at every command: a WhatsApp number without its +, read as a stranger's
// international number; user variables named after Berth's own shell variables or the sandbox's
// PATH and HOME; a docker_env value with a NUL byte.
const CLI = path.resolve(import.meta.dirname, '..', '..', '..', 'apps', 'gateway-plugin', 'dist', 'cli.js');
const home = temporarySandboxDir('operator-input');
const gateways: AttackGateway[] = [];

afterAll(async () => {
  for (const gateway of gateways) await gateway.cleanup();
  await releaseDisksUnder(home);
  rmSync(home, { recursive: true, force: true });
});

function cli(args: readonly string[], config: string): Promise<{ status: number; stdout: string; stderr: string; folder: string }> {
  const folder = path.join(home, `hermes-${Math.random().toString(36).slice(2)}`);
  mkdirSync(folder, { recursive: true });
  writeFileSync(path.join(folder, 'config.yaml'), config);
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [CLI, ...args],
      { env: { PATH: process.env.PATH ?? '', HOME: folder, HERMES_HOME: folder, TERMINAL_SANDBOX_DIR: path.join(folder, 'sandboxes') }, timeout: 60_000 },
      (error, stdout, stderr) => resolve({ status: error ? (typeof error.code === 'number' ? error.code : -1) : 0, stdout, stderr, folder }),
    );
  });
}

describe('identities an operator types are canonical or refused', () => {
  it("a link to a WhatsApp number without + is refused at register(), naming the entry and the form to type; no stranger gets the Telegram user's sandbox", async () => {
    const telegram = randomTelegramUser();
    const outcome = await startAttackGateway({
      config: { docker_network: false, docker_identity_links: [[`telegram:${telegram.userId}`, 'whatsapp:2025550123']] },
      environment: { [`HERMES_USER_TELEGRAM_${telegram.userId}_GITHUB_TOKEN`]: randomSecret('linked') },
    }).catch((error: unknown) => error as Error);
    if (!(outcome instanceof Error)) {
      gateways.push(outcome);
      // What today's main does: the stranger at +20 2 5550123 writes into the Telegram user's sandbox.
      const stranger = await outcome.run({ platform: 'whatsapp', userId: '2025550123@s.whatsapp.net' }, 'echo "$GITHUB_TOKEN" | wc -c');
      expect.fail(`the link was accepted; the stranger at +2025550123 got ${JSON.stringify(stranger.output.trim())} characters of the Telegram user's token`);
    }
    expect(outcome).toBeInstanceOf(ConfigError);
    expect((outcome as ConfigError).key).toBe('terminal.docker_identity_links.0.1');
    expect((outcome as Error).message).toMatch(
      /whatsapp:2025550123 is not written the way Berth writes that identity: it would be read as whatsapp:\+2025550123; type exactly that/,
    );
    expect((outcome as Error).message.split('\n')).toHaveLength(1);
  });

  it('berth exec --platform whatsapp --user 2025550123 exits 125 with one line showing the canonical form, and makes nothing', async () => {
    const run = await cli(
      ['exec', '--platform', 'whatsapp', '--user', '2025550123', '--', 'echo', 'ran'],
      `terminal:\n  docker_image: ${ATTACK_IMAGE}\n  docker_network: false\n`,
    );
    expect(run.status).toBe(125);
    expect(run.stdout).toBe('');
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
    expect(run.stderr).toMatch(
      /--platform whatsapp --user 2025550123 is not written the way Berth writes that identity: it would be read as --platform whatsapp --user \+2025550123/,
    );
    // Made nothing: the Hermes home (also the sandbox folder's parent) holds only its config.
    expect(readdirSync(run.folder)).toEqual(['config.yaml']);
  });
});

describe('variables that would break a sandbox', () => {
  it("user variables named __berth_dir, __berth_kept, __BERTH_CWD, PATH or HOME are refused by name; that user's commands keep working", async () => {
    const user = randomTelegramUser();
    const prefix = `HERMES_USER_TELEGRAM_${user.userId}_`;
    const gateway = await startAttackGateway({
      config: { docker_network: false },
      environment: {
        [`${prefix}__berth_dir`]: '/nowhere',
        [`${prefix}__berth_kept`]: '1',
        [`${prefix}__BERTH_CWD`]: '/nowhere',
        [`${prefix}PATH`]: '/nowhere',
        [`${prefix}HOME`]: '/nowhere',
        [`${prefix}GITHUB_TOKEN`]: randomSecret('fine'),
      },
    });
    gateways.push(gateway);
    const refused = gateway.berth.resolver.index.refused.map((error) => error.message);
    for (const name of ['__berth_dir', '__berth_kept', '__BERTH_CWD', 'PATH', 'HOME']) {
      expect(
        refused.some((message) => message.startsWith(`variable ${prefix}${name} is not forwarded`) && !message.includes('/nowhere')),
        name,
      ).toBe(true);
    }
    await gateway.run(user, 'cd /tmp && export MOOD=calm');
    const result = await gateway.run(user, 'pwd; echo "$MOOD $HOME"; ls -d /workspace; test -n "$GITHUB_TOKEN" && echo token');
    expect(result).toMatchObject({ returncode: 0, output: '/tmp\ncalm /root\n/workspace\ntoken\n' });
  });

  it('a docker_env value with a NUL byte is a ConfigError at register() naming the key, never every command failing later', async () => {
    const outcome = await startAttackGateway({ config: { docker_network: false, docker_env: { LANG: 'C.UTF-8\u0000x' } } }).catch(
      (error: unknown) => error as Error,
    );
    if (!(outcome instanceof Error)) {
      gateways.push(outcome);
      const result = await outcome.run(randomTelegramUser(), 'echo ran').catch((error: unknown) => error as Error);
      expect.fail(`the config was accepted; a command then gave ${JSON.stringify(result instanceof Error ? result.message : result.output)}`);
    }
    expect(outcome).toBeInstanceOf(ConfigError);
    expect((outcome as ConfigError).key).toBe('terminal.docker_env.LANG');
    expect((outcome as Error).message).toMatch(/NUL byte/);
  });
});
