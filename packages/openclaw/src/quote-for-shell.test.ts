import { execFileSync } from 'node:child_process';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { quoteForShell } from './quote-for-shell.js';
import { PROPERTY_TEST_TIMEOUT_MS } from '../../../vitest.shared.js';

describe('quoteForShell', () => {
  it('gives the shell back exactly the word it was given, whatever it holds', { timeout: PROPERTY_TEST_TIMEOUT_MS }, () => {
    fc.assert(
      fc.property(
        fc.string({ unit: 'grapheme', maxLength: 40 }).filter((value) => !value.includes('\0')),
        (value) => {
          const echoed = execFileSync('/bin/sh', ['-c', `printf '%s' ${quoteForShell(value)}`], { encoding: 'utf8' });
          expect(echoed).toBe(value);
        },
      ),
      { numRuns: 60 },
    );
    for (const value of ["it's", "'", '$(id)', '`id`', '"; rm -rf /', 'a\nb', '-n', '']) {
      expect(execFileSync('/bin/sh', ['-c', `printf '%s' ${quoteForShell(value)}`], { encoding: 'utf8' })).toBe(value);
    }
  });
});
