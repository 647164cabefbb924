import { createHash } from 'node:crypto';
import { REDACTED } from '@berth/core';
import { describe, expect, it } from 'vitest';
import { TEST_TIMEOUT_MS, type BackendFixture } from './create-backend-fixture.js';

const sha256 = (value: string): string => createHash('sha256').update(value, 'utf8').digest('hex');

/** Registers the tests that variables reach their user, and that their values stay out of output and the engine's records. */
export function registerSecretTests(fixture: BackendFixture): void {
  describe('secrets', () => {
    it("the user's, forwarded and static variables reach the user's commands", { timeout: TEST_TIMEOUT_MS }, async () => {
      const token = fixture.user('alice').variables.GITHUB_TOKEN!;
      // Hashes prove the exact values arrived without printing them (printing would be masked).
      const result = await fixture.run(
        'alice',
        'printf %s "$GITHUB_TOKEN" | sha256sum; printf %s "$BERTH_TESTKIT_FORWARDED" | sha256sum; echo "$BERTH_TESTKIT_STATIC"',
      );
      expect(result.exitCode).toBe(0);
      const lines = result.stdout.split('\n');
      expect(lines[0]).toMatch(new RegExp(`^${sha256(token)}\\b`));
      expect(lines[1]).toMatch(new RegExp(`^${sha256(fixture.forwardedValue)}\\b`));
      expect(lines[2]).toBe('static-value');
    });

    it('passes values with quotes, command substitutions and newlines exactly, without running them', { timeout: TEST_TIMEOUT_MS }, async () => {
      const tricky = fixture.user('alice').variables.TRICKY_VALUE!;
      const result = await fixture.run('alice', `printf %s "$TRICKY_VALUE" | sha256sum; ls /tmp/berth-pwned-${fixture.runId} 2>/dev/null; true`);
      expect(result.exitCode).toBe(0);
      expect(result.stdout).toMatch(new RegExp(`^${sha256(tricky)}\\b[^\\n]*\\n$`));
    });

    it('masks secrets that straddle read-chunk boundaries and the cut of truncated output', { timeout: TEST_TIMEOUT_MS }, async () => {
      const token = fixture.user('alice').variables.GITHUB_TOKEN!;
      const random = token.slice('ghp_alice_'.length);
      // Any 8 consecutive characters of the random part in the output are a leak.
      const fragments = (text: string) =>
        Array.from({ length: random.length - 7 }, (_, index) => random.slice(index, index + 8)).filter((fragment) => text.includes(fragment));
      const offsets = [4093, 16_381, 32_765, 65_533, 65_536, 131_069];
      const chunked = await fixture.run('alice', `for n in ${offsets.join(' ')}; do head -c $n /dev/zero | tr '\\0' x; printf '%s\\n' "$GITHUB_TOKEN"; done`);
      expect(chunked.exitCode).toBe(0);
      expect(fragments(chunked.stdout)).toEqual([]);
      expect(chunked.stdout.split(REDACTED).length - 1).toBe(offsets.length);

      const flood = await fixture.run('alice', `while :; do printf '%s\\n' "$GITHUB_TOKEN"; done | head -c 3000000`, { timeout: 60 });
      expect(flood.truncated).toBe(true);
      expect(fragments(flood.stdout), 'pieces of the token at the edges of the cut').toEqual([]);
    });

    it(`masks secret values in stdout and stderr by default (${REDACTED})`, { timeout: TEST_TIMEOUT_MS }, async () => {
      const token = fixture.user('alice').variables.GITHUB_TOKEN!;
      const result = await fixture.run('alice', 'echo "token=$GITHUB_TOKEN"; echo "$BERTH_TESTKIT_FORWARDED" >&2; env');
      expect(result.exitCode).toBe(0);
      expect(result.stdout.split('\n')[0]).toBe(`token=${REDACTED}`);
      expect(result.stderr).toBe(`${REDACTED}\n`);
      expect(result.stdout).toMatch(new RegExp(`^GITHUB_TOKEN=${REDACTED.replace(/\*/g, '\\*')}$`, 'm'));
      expect(result.stdout + result.stderr).not.toContain(token);
      expect(result.stdout + result.stderr).not.toContain(fixture.forwardedValue);
    });

    it('shows the values unmasked when docker_mask_secrets is false', { timeout: TEST_TIMEOUT_MS }, async () => {
      const token = fixture.user('olive').variables.GITHUB_TOKEN!;
      expect(await fixture.run('olive', 'echo "$GITHUB_TOKEN"')).toMatchObject({ exitCode: 0, stdout: `${token}\n` });
    });

    it("the engine's record of the container holds none of the user's secret values", { timeout: TEST_TIMEOUT_MS }, async () => {
      const token = fixture.user('alice').variables.GITHUB_TOKEN!;
      const prefix = `${fixture.config('main').docker_user_env_prefix}_`;
      const containerId = await fixture.containerOf('alice');
      const inspected = await fixture.engine.inspect(containerId);
      const everything = JSON.stringify([inspected.env, inspected.labels, inspected.document ?? null]);
      expect(everything.includes(token), 'the GITHUB_TOKEN value is in the inspect output').toBe(false);
      expect(everything.includes(fixture.forwardedValue), 'the forwarded value is in the inspect output').toBe(false);
      expect(inspected.env.filter((entry) => entry.startsWith('GITHUB_TOKEN=') || entry.startsWith(prefix))).toEqual([]);
    });

    it("the gateway process's own environment does not reach the sandbox", { timeout: TEST_TIMEOUT_MS }, async () => {
      const result = await fixture.run('alice', 'env; echo "[$BERTH_TESTKIT_PROCESS_CANARY]"');
      expect(result.exitCode).toBe(0);
      expect(result.stdout).not.toContain(fixture.processCanary);
      expect(result.stdout).toContain('[]\n');
    });
  });
}
