import { describe, expect, it } from 'vitest';
import { TEST_TIMEOUT_MS, type BackendFixture } from './create-backend-fixture.js';
import { processesLeft } from './processes-left.js';

/** Registers the tests that a timeout kills a command's whole process tree and leaves the sandbox usable. */
export function registerTimeoutTests(fixture: BackendFixture): void {
  const leftovers = (pattern: string): Promise<string[]> => processesLeft(fixture, pattern);

  describe('timeouts', () => {
    it('kills the children and grandchildren of a timed-out command (exit 124) and keeps the sandbox usable', { timeout: TEST_TIMEOUT_MS }, async () => {
      // Distinct durations so that the ps check below sees only this test's processes.
      const result = await fixture.run('alice', `sh -c 'sh -c "sleep 3021" & sleep 3022 & wait'; echo not-reached`, { timeout: 1 });
      expect(result).toMatchObject({ exitCode: 124, timedOut: true });
      expect(result.stdout).not.toContain('not-reached');
      expect(result.durationMs).toBeLessThan(30_000);
      expect(await leftovers('sleep 302')).toEqual([]);
      expect(await fixture.run('alice', 'echo after-timeout')).toMatchObject({ exitCode: 0, stdout: 'after-timeout\n', timedOut: false });
    });

    it('kills a command that ignores SIGTERM and SIGINT', { timeout: TEST_TIMEOUT_MS }, async () => {
      const result = await fixture.run('alice', `trap '' TERM INT HUP; sh -c "trap '' TERM INT HUP; sleep 3031" & sleep 3032; wait`, { timeout: 1 });
      expect(result).toMatchObject({ exitCode: 124, timedOut: true });
      expect(await leftovers('sleep 303')).toEqual([]);
      expect(await fixture.run('alice', 'echo after-stubborn')).toMatchObject({ exitCode: 0, stdout: 'after-stubborn\n' });
    });

    it('kills a command that gives no timeout at terminal.timeout, and a timeout a command gives wins over it', { timeout: TEST_TIMEOUT_MS }, async () => {
      const seconds = fixture.config('shortTimeout').timeout;
      // The sandbox made first, so that the duration below is the command's alone.
      expect(await fixture.run('trent', 'true')).toMatchObject({ exitCode: 0 });
      const killed = await fixture.run('trent', 'sleep 25');
      expect(killed, `a command without a timeout, with terminal.timeout ${seconds} s`).toMatchObject({ exitCode: 124, timedOut: true });
      expect(killed.durationMs).toBeGreaterThanOrEqual(seconds * 1000 - 100);
      expect(killed.durationMs).toBeLessThan(20_000);
      // Longer than terminal.timeout, shorter than its own.
      const given = await fixture.run('trent', `sleep ${seconds + 2}; echo done`, { timeout: seconds + 28 });
      expect(given, 'a command with a timeout of its own').toMatchObject({ exitCode: 0, stdout: 'done\n', timedOut: false });
    });
  });
}
