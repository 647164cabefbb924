import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createRedactor, MIN_SECRET_LENGTH } from './redact.js';
import { PROPERTY_TEST_TIMEOUT_MS } from '../../../vitest.shared.js';

describe('redactor', () => {
  it('masks every occurrence', () => {
    expect(createRedactor(['ghp_secret']).redact('a ghp_secret b ghp_secret')).toBe('a *** b ***');
  });

  it('masks a secret that is a substring of another completely', () => {
    const redactor = createRedactor(['secret', 'supersecret1']);
    expect(redactor.redact('supersecret1 and secret')).toBe('*** and ***');
  });

  it('masks overlapping secrets without leaking the overlap or the tails', () => {
    expect(createRedactor(['abcdef', 'defghi']).redact('xabcdefghix')).toBe('x***x');
  });

  it('leaves very short values alone', () => {
    expect(createRedactor(['1', 'yes', 'abc']).redact('1 yes abc')).toBe('1 yes abc');
    expect(createRedactor(['1']).active).toBe(false);
  });

  it('leaves no secret of at least the minimum length in its output (property)', { timeout: PROPERTY_TEST_TIMEOUT_MS }, () => {
    fc.assert(
      fc.property(
        fc.array(fc.string({ minLength: MIN_SECRET_LENGTH, maxLength: 12 }), { minLength: 1, maxLength: 4 }),
        fc.array(fc.string({ maxLength: 8 })),
        (secrets, filler) => {
          const text = filler.map((piece, index) => piece + secrets[index % secrets.length]).join('') + secrets.join('');
          const output = createRedactor(secrets).redact(text);
          for (const secret of secrets) expect(output.includes(secret)).toBe(false);
        },
      ),
    );
  });
});
