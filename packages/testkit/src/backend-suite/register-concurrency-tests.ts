import { describe, expect, it } from 'vitest';
import { TEST_TIMEOUT_MS, type BackendFixture } from './create-backend-fixture.js';

/** Registers the tests that concurrent commands of one user stay apart, and that concurrent first use makes one sandbox. */
export function registerConcurrencyTests(fixture: BackendFixture): void {
  describe('concurrency', () => {
    it('ten concurrent commands of one user each get exactly their own output and exit code', { timeout: TEST_TIMEOUT_MS }, async () => {
      const indexes = Array.from({ length: 10 }, (_, index) => index);
      const results = await Promise.all(
        indexes.map((index) =>
          fixture.run('alice', `echo begin-${index}; sleep 0.${index}; echo middle-${index} >&2; printf 'end-${index}'; sh -c 'exit ${index}'`, {
            timeout: 60,
          }),
        ),
      );
      for (const index of indexes) {
        expect(results[index], `command ${index}`).toMatchObject({
          exitCode: index,
          stdout: `begin-${index}\nend-${index}`,
          stderr: `middle-${index}\n`,
          timedOut: false,
        });
      }
    });

    it('five concurrent first commands of a new user make exactly one sandbox', { timeout: TEST_TIMEOUT_MS }, async () => {
      expect(await fixture.entriesOf('carol')).toEqual([]);
      const results = await Promise.all([0, 1, 2, 3, 4].map((index) => fixture.run('carol', `echo first-${index}`)));
      for (const [index, result] of results.entries()) expect(result, `command ${index}`).toMatchObject({ exitCode: 0, stdout: `first-${index}\n` });
      const entries = await fixture.entriesOf('carol');
      expect(entries).toHaveLength(1);
      expect(entries[0]).toMatchObject({ state: 'running', kind: 'user' });
    });
  });
}
