import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decodeEnvComponent, encodeEnvComponent, encodeFolderComponent, MAX_FOLDER_COMPONENT } from './encode-name.js';
import { PROPERTY_TEST_TIMEOUT_MS } from '../../../vitest.shared.js';

describe('encodeFolderComponent', () => {
  it('keeps readable ids readable', () => {
    expect(encodeFolderComponent('123456789')).toBe('123456789');
    expect(encodeFolderComponent('+1234567890')).toBe('+1234567890');
    expect(encodeFolderComponent('ab-cd_ef.gh')).toBe('ab-cd_ef.gh');
  });

  it('escapes separators, upper case and control characters', () => {
    expect(encodeFolderComponent('a/b')).toBe('a%2Fb');
    expect(encodeFolderComponent('AB')).toBe('%41%42');
    expect(encodeFolderComponent('a\0b')).toBe('a%00b');
    expect(encodeFolderComponent('%')).toBe('%25');
  });

  it('bounds long ids and keeps them distinct', () => {
    const a = encodeFolderComponent('x'.repeat(10_000));
    const b = encodeFolderComponent(`${'x'.repeat(9_999)}y`);
    expect(a.length).toBeLessThanOrEqual(MAX_FOLDER_COMPONENT);
    expect(a).not.toBe(b);
    expect(a).toMatch(/~[0-9a-f]{64}$/);
  });

  it('is injective, bounded and never contains a separator (property)', { timeout: PROPERTY_TEST_TIMEOUT_MS }, () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 300 }), fc.string({ unit: 'binary', maxLength: 300 }), (a, b) => {
        const ea = encodeFolderComponent(a);
        const eb = encodeFolderComponent(b);
        expect(ea).not.toMatch(/[/\\\0]/);
        expect(ea.length).toBeLessThanOrEqual(MAX_FOLDER_COMPONENT);
        if (a !== b) expect(ea.toLowerCase()).not.toBe(eb.toLowerCase());
      }),
      { numRuns: 2000 },
    );
  });
});

describe('encodeEnvComponent', () => {
  it('keeps digits and folds lower-case letters to upper case', () => {
    expect(encodeEnvComponent('123456789')).toBe('123456789');
    expect(encodeEnvComponent('abc')).toBe('ABC');
  });

  it('escapes what would be ambiguous', () => {
    expect(encodeEnvComponent('ab-cd')).toBe('ABZ2DCD');
    expect(encodeEnvComponent('ab_cd')).toBe('ABZ5FCD');
    expect(encodeEnvComponent('AB')).toBe('Z41Z42');
    expect(encodeEnvComponent('z')).toBe('Z7A');
  });

  it('uses only [0-9A-Z] and round-trips (property)', { timeout: PROPERTY_TEST_TIMEOUT_MS }, () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme', maxLength: 100 }), (value) => {
        const form = encodeEnvComponent(value);
        expect(form).toMatch(/^[0-9A-Z]*$/);
        expect(decodeEnvComponent(form)).toBe(value);
      }),
      { numRuns: 2000 },
    );
  });

  it('refuses forms that are not canonical', () => {
    expect(decodeEnvComponent('Z61')).toBeUndefined(); // `a` must be written as A
    expect(decodeEnvComponent('Z4')).toBeUndefined();
    expect(decodeEnvComponent('ab')).toBeUndefined();
    expect(decodeEnvComponent('A_B')).toBeUndefined();
  });
});
