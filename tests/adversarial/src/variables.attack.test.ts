import { randomInt } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  docker,
  randomLetters,
  randomSecret,
  randomTelegramUser,
  randomWhatsAppUser,
  startAttackGateway,
  type AttackGateway,
  type Sender,
} from './support/attack-gateway.js';

// Credentials of several users live in one gateway's environment; each user tries to read the
// others' through the sandbox and the engine, and the operator's view (inspect, logs, errors)
// must hold none of them.
const alice = randomTelegramUser();
const bob = randomWhatsAppUser();
// The exec-mode gateway serves its own user: two gateways on one engine share container names.
const carol = randomTelegramUser();
const aliceToken = randomSecret('alice');
const bobToken = randomSecret('bob');
const teamToken = randomSecret('team');
const carolToken = randomSecret('carol');

// Ids crafted to confuse the env form, with a random stem so no other run shares their containers.
const stem = randomLetters(6);
const STEM = stem.toUpperCase();
const signal = {
  plain: { platform: 'signal', userId: stem },
  dashed: { platform: 'signal', userId: `${stem}-cd` },
  upper: { platform: 'signal', userId: STEM },
  underscored: { platform: 'signal', userId: `${stem}_cd` },
} satisfies Record<string, Sender>;
const upperForm = [...STEM].map((char) => `Z${char.charCodeAt(0).toString(16).toUpperCase()}`).join('');
const telegramNumber = randomInt(100_000_000, 999_999_999);
const telegram = {
  plain: { platform: 'telegram', userId: String(telegramNumber) },
  zeroed: { platform: 'telegram', userId: `0${telegramNumber}` },
  other: { platform: 'telegram', userId: String(telegramNumber + 1) },
};
const whatsappDigits = `1555${randomInt(1_000_000, 9_999_998)}`;
const whatsapp = {
  plus: { platform: 'whatsapp', userId: `+${whatsappDigits}` },
  jid: { platform: 'whatsapp', userId: `${whatsappDigits}@s.whatsapp.net` },
  other: { platform: 'whatsapp', userId: `+${Number(whatsappDigits) + 1}` },
};

const confusing = {
  stemCd: randomSecret('stem-cd'),
  dashed: randomSecret('dashed'),
  upper: randomSecret('upper'),
  plain: randomSecret('plain'),
  lowerForm: randomSecret('lower-form'),
  telegram: randomSecret('tg'),
  telegramZero: randomSecret('tg-zero'),
  whatsapp: randomSecret('wa'),
  whatsappPlus: randomSecret('wa-plus'),
};

const environment: Record<string, string> = {
  [`HERMES_USER_TELEGRAM_${alice.userId}_GITHUB_TOKEN`]: aliceToken,
  [`HERMES_USER_WHATSAPP_${String(bob.userId).slice(1)}_GITHUB_TOKEN`]: bobToken,
  [`HERMES_USER_TELEGRAM_${carol.userId}_GITHUB_TOKEN`]: carolToken,
  TEAM_TOKEN: teamToken,
  [`HERMES_USER_SIGNAL_${STEM}_CD_TOKEN`]: confusing.stemCd,
  [`HERMES_USER_SIGNAL_${STEM}Z2DCD_TOKEN`]: confusing.dashed,
  [`HERMES_USER_SIGNAL_${upperForm}_TOKEN`]: confusing.upper,
  [`HERMES_USER_SIGNAL_${STEM}_TOKEN`]: confusing.plain,
  [`HERMES_USER_SIGNAL_${stem}_TOKEN`]: confusing.lowerForm,
  [`HERMES_USER_TELEGRAM_${telegramNumber}_TOKEN`]: confusing.telegram,
  [`HERMES_USER_TELEGRAM_0${telegramNumber}_TOKEN`]: confusing.telegramZero,
  [`HERMES_USER_WHATSAPP_${whatsappDigits}_TOKEN`]: confusing.whatsapp,
  [`HERMES_USER_WHATSAPP_Z2B${whatsappDigits}_TOKEN`]: confusing.whatsappPlus,
};
const allSecrets = [aliceToken, bobToken, carolToken, teamToken, ...Object.values(confusing)];

let gateway: AttackGateway;
let execGateway: AttackGateway;
/** Every output and error message any case produced, checked for foreign secrets at the end. */
const seen: string[] = [];

/** A sandbox's variables by name. */
type Variables = Record<string, string>;

/** The sandbox's full environment, base64-encoded inside so masking cannot hide a leak. */
async function environmentOf(gatewayToUse: AttackGateway, sender: Sender): Promise<Record<string, string>> {
  const result = await gatewayToUse.run(sender, 'env | base64 -w0');
  expect(result.returncode).toBe(0);
  const text = Buffer.from(result.output.trim(), 'base64').toString('utf8');
  return Object.fromEntries(
    text
      .split('\n')
      .filter(Boolean)
      .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]),
  );
}

/** The values of `secrets` present anywhere in `text`. */
function leaked(text: string, secrets: readonly string[]): string[] {
  return secrets.filter((secret) => text.includes(secret));
}

/** Every run of 8 characters of a secret's random part found in `text`: pieces of a split value. */
function pieceLeaks(text: string, secret: string): string[] {
  const random = secret.slice(secret.lastIndexOf('_') + 1);
  const found: string[] = [];
  for (let start = 0; start + 8 <= random.length; start++) if (text.includes(random.slice(start, start + 8))) found.push(random.slice(start, start + 8));
  return found;
}

/** The text around the output limit's note, to show what a failure leaked. */
function aroundCut(text: string): string {
  const at = text.indexOf('[berth:');
  return at < 0 ? text.slice(0, 200) : text.slice(Math.max(0, at - 60), at + 160);
}

beforeAll(async () => {
  gateway = await startAttackGateway({ config: { docker_forward_env: ['TEAM_TOKEN'] }, environment });
  execGateway = await startAttackGateway({ config: { docker_forward_env: ['TEAM_TOKEN'], docker_exec_mode: 'exec' }, environment });
  await Promise.all([gateway.run(alice, 'sleep 120 >/dev/null 2>&1 & echo started'), gateway.run(bob, 'true'), execGateway.run(carol, 'true')]);
});

afterAll(async () => {
  await gateway?.cleanup();
  await execGateway?.cleanup();
});

describe("variables: one user cannot read another user's credentials", () => {
  it('through env: each sandbox has its own token and the forwarded one, nothing else', async () => {
    const [aliceEnvironment, bobEnvironment] = await Promise.all([environmentOf(gateway, alice), environmentOf(gateway, bob)]);
    expect(aliceEnvironment.GITHUB_TOKEN).toBe(aliceToken);
    expect(bobEnvironment.GITHUB_TOKEN).toBe(bobToken);
    expect(aliceEnvironment.TEAM_TOKEN).toBe(teamToken);
    expect(leaked(JSON.stringify(bobEnvironment), [aliceToken, ...Object.values(confusing)])).toEqual([]);
    expect(leaked(JSON.stringify(aliceEnvironment), [bobToken, ...Object.values(confusing)])).toEqual([]);
    // What goes back to the chat has the user's own secrets masked.
    const shown = await gateway.run(bob, 'echo "$GITHUB_TOKEN $TEAM_TOKEN"');
    expect(shown.output).toBe('*** ***\n');
  });

  it('through /proc/*/environ of every process in its sandbox', async () => {
    const result = await gateway.run(bob, 'cat /proc/[0-9]*/environ 2>/dev/null | base64 -w0');
    const text = Buffer.from(result.output.trim(), 'base64').toString('utf8');
    expect(text.length).toBeGreaterThan(0);
    expect(leaked(text, [aliceToken, ...Object.values(confusing)])).toEqual([]);
  });

  it("through the engine's stored config: no secret in Env, Labels, Cmd or any exec of either container (session and exec modes)", async () => {
    const inspected: string[] = [];
    // The exec mode runs each command as an exec, which the engine lists while it runs: one runs now.
    const running = execGateway.run(carol, 'sleep 2; true');
    await new Promise((resolve) => setTimeout(resolve, 700));
    for (const [which, sender] of [
      [gateway, alice],
      [gateway, bob],
      [execGateway, carol],
    ] as const) {
      const container = await which.containerOf(sender);
      expect(container).toBeDefined();
      const info = await docker.getContainer(container!.Id).inspect();
      expect(info.Config.Env.filter((entry) => /TOKEN/.test(entry))).toEqual([]);
      inspected.push(JSON.stringify(info));
      for (const execId of info.ExecIDs ?? [])
        inspected.push(
          JSON.stringify(
            await docker
              .getExec(execId)
              .inspect()
              .catch(() => ({})),
          ),
        );
    }
    await running;
    // The running command's exec was inspected too (a session's shells start through the sandbox's launcher, without an exec).
    expect(inspected.length).toBeGreaterThan(3);
    const text = inspected.join('\n');
    expect(leaked(text, allSecrets)).toEqual([]);
  });

  it("through Berth's error messages and results: a bad cwd, a timeout, a huge output, a NUL byte, stderr", async () => {
    const cases = await Promise.all([
      gateway.attempt(alice, 'echo "$GITHUB_TOKEN"', { cwd: '/does-not-exist' }),
      gateway.attempt(alice, 'echo "$GITHUB_TOKEN"; echo "$GITHUB_TOKEN" >&2; sleep 20', { timeout: 1 }),
      gateway.attempt(alice, 'yes "$GITHUB_TOKEN" | head -c 3000000'),
      gateway.attempt(alice, `echo ${aliceToken}\u0000`),
      gateway.attempt(alice, 'echo "$GITHUB_TOKEN" >&2; exit 3'),
      execGateway.attempt(carol, 'yes "$GITHUB_TOKEN$TEAM_TOKEN" | head -c 3000000'),
      execGateway.attempt(carol, 'echo "$GITHUB_TOKEN"', { cwd: '/does-not-exist' }),
    ]);
    const [badCwd, timeout, huge, nul, stderr] = cases;
    expect(timeout).toMatchObject({ returncode: 124 });
    expect(huge).toMatchObject({ returncode: 0 });
    expect(nul).toBeInstanceOf(Error);
    expect(stderr).toMatchObject({ output: '***\n', returncode: 3 });
    for (const [index, outcome] of cases.entries()) {
      const text = outcome instanceof Error ? `${outcome.name} ${outcome.message} ${String(outcome.stack)}` : outcome.output;
      seen.push(text);
      expect({ index, leaked: leaked(text, allSecrets) }).toEqual({ index, leaked: [] });
    }
    expect(String((badCwd as { output?: string }).output ?? (badCwd as Error).message)).toMatch(/does-not-exist/);
  });

  it('through a huge output cut by the output limit: no piece of a secret shows on either side of the cut', async () => {
    const [session, exec] = await Promise.all([
      gateway.run(alice, 'yes "$GITHUB_TOKEN" | head -c 3000000'),
      execGateway.run(carol, 'yes "$GITHUB_TOKEN" | head -c 3000000'),
    ]);
    for (const [mode, result, secret] of [
      ['session', session, aliceToken],
      ['exec', exec, carolToken],
    ] as const) {
      expect(result.output).toMatch(/cut here/);
      // The masked lines are `***`; a value the cut split in two must not leave its halves behind.
      const pieces = pieceLeaks(result.output, secret);
      expect({ mode, pieces, around: pieces.length > 0 ? aroundCut(result.output) : '' }).toEqual({ mode, pieces: [], around: '' });
    }
  });

  it('the generic adapter: ab, ab-cd, AB and ab_cd each get exactly their own variables', async () => {
    const [plain, dashed, upper, underscored] = (await Promise.all(
      [signal.plain, signal.dashed, signal.upper, signal.underscored].map((sender) => environmentOf(gateway, sender)),
    )) as [Variables, Variables, Variables, Variables];
    // `${STEM}_CD_TOKEN` is read one way only: user `stem`'s CD_TOKEN, never `stem-cd`'s TOKEN.
    expect({ TOKEN: plain.TOKEN, CD_TOKEN: plain.CD_TOKEN }).toEqual({ TOKEN: confusing.plain, CD_TOKEN: confusing.stemCd });
    expect(dashed.TOKEN).toBe(confusing.dashed);
    expect(upper.TOKEN).toBe(confusing.upper);
    expect(underscored.TOKEN).toBeUndefined();
    for (const [name, found, own] of [
      ['plain', plain, [confusing.plain, confusing.stemCd]],
      ['dashed', dashed, [confusing.dashed]],
      ['upper', upper, [confusing.upper]],
      ['underscored', underscored, []],
    ] as const) {
      const foreign = allSecrets.filter((secret) => !(own as readonly string[]).includes(secret) && secret !== teamToken);
      expect({ name, leaked: leaked(JSON.stringify(found), foreign) }).toEqual({ name, leaked: [] });
    }
  });

  it('Telegram: 0123 and 123 are one user with one sandbox; the 0-padded variable is refused; another number gets nothing', async () => {
    await gateway.run(telegram.plain, 'echo one-user > /workspace/marker');
    const zeroed = await gateway.run(telegram.zeroed, 'cat /workspace/marker');
    expect(zeroed.output).toBe('one-user\n');
    const [plainEnvironment, zeroedEnvironment, otherEnvironment] = (await Promise.all(
      [telegram.plain, telegram.zeroed, telegram.other].map((sender) => environmentOf(gateway, sender)),
    )) as [Variables, Variables, Variables];
    expect(plainEnvironment.TOKEN).toBe(confusing.telegram);
    expect(zeroedEnvironment.TOKEN).toBe(confusing.telegram);
    expect(otherEnvironment.TOKEN).toBeUndefined();
    for (const found of [plainEnvironment, zeroedEnvironment, otherEnvironment]) expect(leaked(JSON.stringify(found), [confusing.telegramZero])).toEqual([]);
    const refused = gateway.berth.resolver.index.refused.find((error) => error.variable === `HERMES_USER_TELEGRAM_0${telegramNumber}_TOKEN`);
    expect(refused?.message).toMatch(/not forwarded/);
    expect(refused?.message).not.toContain(confusing.telegramZero);
    expect((await gateway.containerOf(telegram.plain))?.Id).toBe((await gateway.containerOf(telegram.zeroed))?.Id);
  });

  it('WhatsApp: +number and number@s.whatsapp.net are one user; the +-form variable is refused; another number gets nothing', async () => {
    await gateway.run(whatsapp.plus, 'echo one-user > /workspace/marker');
    expect((await gateway.run(whatsapp.jid, 'cat /workspace/marker')).output).toBe('one-user\n');
    const [plusEnvironment, jidEnvironment, otherEnvironment] = (await Promise.all(
      [whatsapp.plus, whatsapp.jid, whatsapp.other].map((sender) => environmentOf(gateway, sender)),
    )) as [Variables, Variables, Variables];
    expect(plusEnvironment.TOKEN).toBe(confusing.whatsapp);
    expect(jidEnvironment.TOKEN).toBe(confusing.whatsapp);
    expect(otherEnvironment.TOKEN).toBeUndefined();
    for (const found of [plusEnvironment, jidEnvironment, otherEnvironment]) expect(leaked(JSON.stringify(found), [confusing.whatsappPlus])).toEqual([]);
    expect(gateway.berth.resolver.index.refused.map((error) => error.variable)).toEqual(
      expect.arrayContaining([`HERMES_USER_WHATSAPP_Z2B${whatsappDigits}_TOKEN`, `HERMES_USER_SIGNAL_${stem}_TOKEN`]),
    );
  });

  it("through Berth's logs: no secret in anything the plugin logged, nor in any result seen above", () => {
    const logged = [...gateway.logs, ...execGateway.logs].join('\n');
    expect(gateway.logs.length).toBeGreaterThan(0);
    expect(leaked(logged, allSecrets)).toEqual([]);
    expect(leaked(seen.join('\n'), allSecrets)).toEqual([]);
  });
});
