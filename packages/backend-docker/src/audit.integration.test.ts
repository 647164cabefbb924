import { readFileSync } from 'node:fs';
import path from 'node:path';
import { SandboxError } from '@berth/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness } from './testing/integration-harness.js';

// The audit trail and the per-user limits on a real Docker engine: real commands with a
// forwarded secret and a user's own, one line each, no secret value anywhere in the file, and a
// user over user_commands_per_minute refused while another user's command runs.

const FORWARDED = 'fwd-audit-secret-7f3a9c1e';
const OWN = 'own-audit-secret-b2d84e60';

describe('the audit trail on Docker', () => {
  let harness: Harness;
  beforeAll(async () => {
    harness = await createHarness();
  });
  afterAll(async () => harness?.cleanup());

  it('writes one line per command, never a secret value, and refuses a user past the per-minute limit while another runs', async () => {
    const auditFile = path.join(harness.sandboxDir, 'audit.jsonl');
    const config = { audit_file: auditFile, user_commands_per_minute: 4, docker_forward_env: ['BERTH_AUDIT_TOKEN'] };
    const environment = { BERTH_AUDIT_TOKEN: FORWARDED, HERMES_USER_TELEGRAM_4101_OWN_TOKEN: OWN };
    const backend = harness.backend(config);
    const alice = harness.request({ platform: 'telegram', userId: '4101' }, environment, config);
    const bob = harness.request({ platform: 'telegram', userId: '4102' }, environment, config);

    const commands = [
      'echo "$BERTH_AUDIT_TOKEN" "$OWN_TOKEN"',
      `test "$BERTH_AUDIT_TOKEN" = ${FORWARDED} && echo same`,
      `echo ${OWN}\necho second line`,
      'exit 7',
    ];
    const results = [];
    for (const command of commands) results.push(await backend.doExec(alice, { command }));
    expect(results.map((result) => result.exitCode)).toEqual([0, 0, 0, 7]);
    expect(results[1]!.stdout).toBe('same\n');

    const refused = await backend.doExec(alice, { command: 'echo one too many' }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(SandboxError);
    expect((refused as SandboxError).code).toBe('USER_RATE_LIMIT');
    expect((refused as SandboxError).message).toMatch(
      /^you ran 4 commands in the last minute, the most terminal\.user_commands_per_minute \(4\) allows; retry in \d+ s$/,
    );
    expect(await backend.doExec(bob, { command: 'echo bob' })).toMatchObject({ exitCode: 0, stdout: 'bob\n' });
    await backend.close();

    const text = readFileSync(auditFile, 'utf8');
    for (const secret of [FORWARDED, OWN]) expect(text).not.toContain(secret);
    const lines = text
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    const audited = lines.filter((line) => line.type === 'command');
    const aliceName = backend.containerName(alice);
    expect(audited.map((line) => [line.sandbox === aliceName ? 'alice' : 'bob', line.outcome, line.exitCode ?? line.reason])).toEqual([
      ['alice', 'ran', 0],
      ['alice', 'ran', 0],
      ['alice', 'ran', 0],
      ['alice', 'ran', 7],
      ['alice', 'refused', 'USER_RATE_LIMIT'],
      ['bob', 'ran', 0],
    ]);
    expect(audited[2]!.command).toBe('echo *** …');
    expect(audited[0]!.bytesOut).toBe(FORWARDED.length + 1 + OWN.length + 1);
    expect(audited[0]!.user).toMatch(/^u-[0-9a-f]{24}$/);
    expect(audited[5]!.user).not.toBe(audited[0]!.user);
    expect(text).not.toContain('telegram:4101');
    expect(lines.filter((line) => line.type === 'sandbox').map((line) => line.event)).toEqual(['created', 'created']);
  });
});
