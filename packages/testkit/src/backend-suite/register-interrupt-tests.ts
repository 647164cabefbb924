import { INTERRUPTED_EXIT_CODE, REDACTED } from '@berth/core';
import { describe, expect, it } from 'vitest';
import { TEST_TIMEOUT_MS, type BackendFixture } from './create-backend-fixture.js';
import { processesLeft } from './processes-left.js';

/**
 * Registers the tests of a command stopped while it runs (`ExecRequest.signal`, what `berth exec`
 * sends on Ctrl-C) and of its output seen as it comes (`ExecRequest.onOutput`, what streams it).
 */
export function registerInterruptTests(fixture: BackendFixture): void {
  const leftovers = (pattern: string): Promise<string[]> => processesLeft(fixture, pattern);

  describe('interrupts and live output', () => {
    it(`stops an aborted command with its children (exit ${INTERRUPTED_EXIT_CODE}) and keeps the sandbox usable`, { timeout: TEST_TIMEOUT_MS }, async () => {
      const controller = new AbortController();
      const pieces: string[] = [];
      // Aborted once the command has said it runs: what a user's Ctrl-C meets.
      const running = fixture.run('alice', `echo started; sh -c 'sleep 3041' & sleep 3042; echo not-reached`, {
        timeout: 600,
        signal: controller.signal,
        onOutput: (_stream, text) => {
          pieces.push(text);
          if (pieces.join('').includes('started')) controller.abort();
        },
      });
      const result = await running;
      expect(result.exitCode).toBe(INTERRUPTED_EXIT_CODE);
      expect(result.timedOut).toBe(false);
      expect(result.stdout).toContain('started');
      expect(result.stdout).not.toContain('not-reached');
      expect(result.durationMs).toBeLessThan(60_000);
      expect(await leftovers('sleep 304')).toEqual([]);
      expect(await fixture.run('alice', 'echo after-interrupt')).toMatchObject({ exitCode: 0, stdout: 'after-interrupt\n' });
    });

    it('hands output over while the command still runs, each stream apart, secrets masked', { timeout: TEST_TIMEOUT_MS }, async () => {
      const token = fixture.user('alice').variables.GITHUB_TOKEN!;
      const seen: Array<{ stream: 'stdout' | 'stderr'; text: string; at: number }> = [];
      // The first lines come at once, the last five seconds later: the first must be handed over
      // well before the command ends (a second of margin, for a loaded machine).
      const running = fixture.run('alice', 'echo "first $GITHUB_TOKEN"; echo warn >&2; sleep 5; echo last', {
        timeout: 120,
        onOutput: (stream, text) => seen.push({ stream, text, at: Date.now() }),
      });
      const result = await running;
      const ended = Date.now();
      expect(result.exitCode).toBe(0);
      expect(result.stdout).toBe(`first ${REDACTED}\nlast\n`);
      const first = seen.find((piece) => piece.stream === 'stdout' && piece.text.includes('first'));
      expect(first?.text, 'the first line, masked as it is handed over').toContain(`first ${REDACTED}`);
      expect(ended - first!.at, 'ms between the first line handed over and the end').toBeGreaterThan(1_000);
      const streamed = (stream: 'stdout' | 'stderr') =>
        seen
          .filter((piece) => piece.stream === stream)
          .map((piece) => piece.text)
          .join('');
      expect(streamed('stdout')).toBe(result.stdout);
      expect(streamed('stderr')).toBe('warn\n');
      expect(seen.map((piece) => piece.text).join('')).not.toContain(token);
    });
  });
}
