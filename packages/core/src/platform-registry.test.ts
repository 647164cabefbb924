import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { IdentityCollisionError, IdentityError, UnknownPlatformError, UnsupportedSpecificationError } from './errors.js';
import { createGenericAdapter, FOLDER_FORM_PATTERN, type PlatformAdapterV1 } from './platform-adapter.js';
import { createPlatformRegistry } from './platform-registry.js';
import { UNPRINTABLE_CHARACTERS } from './identity.js';
import { PROPERTY_TEST_TIMEOUT_MS } from '../../../vitest.shared.js';

describe('generic adapter through the registry', () => {
  const registry = createPlatformRegistry();

  it('keeps ids exactly, case and Unicode form included', () => {
    expect(registry.resolve('signal', 'Ab-Cd').id).toBe('Ab-Cd');
    expect(registry.resolve('signal', 'e\u0301').id).not.toBe(registry.resolve('signal', '\u00e9').id);
  });

  it('refuses empty, control-character and oversized ids', () => {
    expect(() => registry.resolve('signal', '')).toThrow(IdentityError);
    expect(() => registry.resolve('signal', 'a\0b')).toThrow(/control characters/);
    // Look-alikes made with invisible or bidi characters, refused for every platform, and shown escaped.
    for (const raw of ['ab\u202ecd', 'a\u200db', 'a\u2029b', 'a\u00adb']) {
      expect(() => registry.resolve('signal', raw)).toThrow(IdentityError);
      expect(() => registry.resolve('signal', raw)).toThrow(/\\u\{(202E|200D|2029|AD)\}/);
    }
    expect(() => registry.resolve('signal', 'x'.repeat(10_000))).toThrow(/256 characters/);
    expect(() => registry.resolve('signal', { id: 1 })).toThrow(/string or a safe integer/);
  });

  it('refuses invalid platform names', () => {
    expect(() => registry.resolve('../etc', '1')).toThrow(/platform name/);
    expect(() => registry.resolve('sig_nal', '1')).toThrow(/platform name/);
  });

  it('parses platform:id', () => {
    expect(registry.parse('Signal:ab:cd')).toEqual({ platform: 'signal', id: 'ab:cd' });
    expect(() => registry.parse('nocolon')).toThrow(/platform:id/);
  });

  it('gives distinct identities distinct folders and env forms over arbitrary ids (property)', { timeout: PROPERTY_TEST_TIMEOUT_MS }, () => {
    const fresh = createPlatformRegistry();
    // Ids that read as a path ("." and "..", a slash) are refused by design: tested above, not here.
    const id = fc
      .string({ unit: 'binary', minLength: 1, maxLength: 40 })
      .filter((value) => !UNPRINTABLE_CHARACTERS.test(value) && value.isWellFormed() && value !== '.' && value !== '..' && !value.includes('/'));
    fc.assert(
      fc.property(id, id, (a, b) => {
        fc.pre(a !== b);
        const left = fresh.resolve('signal', a);
        const right = fresh.resolve('signal', b);
        expect(fresh.folderName(left).toLowerCase()).not.toBe(fresh.folderName(right).toLowerCase());
        expect(fresh.envName(left)).not.toBe(fresh.envName(right));
        expect(fresh.folderName(left)).toMatch(/^signal@/);
        expect(fresh.folderName(left).slice('signal@'.length)).toMatch(FOLDER_FORM_PATTERN);
      }),
      { numRuns: 1000 },
    );
  });

  it('canonical forms are idempotent (property)', { timeout: PROPERTY_TEST_TIMEOUT_MS }, () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 60 }), (raw) => {
        let id: string;
        try {
          id = registry.resolve('signal', raw).id;
        } catch (error) {
          expect(error).toBeInstanceOf(IdentityError);
          return;
        }
        expect(registry.resolve('signal', id).id).toBe(id);
      }),
    );
  });
});

describe('registry checks third-party adapters', () => {
  const base = createGenericAdapter({ platform: 'acme' });

  it('refuses an adapter of an unknown contract version', () => {
    const registry = createPlatformRegistry();
    expect(() => registry.register({ ...base, specificationVersion: 'v2' } as unknown as PlatformAdapterV1)).toThrow(UnsupportedSpecificationError);
  });

  it('refuses an env form containing an underscore', () => {
    const registry = createPlatformRegistry({ adapters: [{ ...base, envName: (id) => id.toUpperCase() }] });
    expect(() => registry.envName({ platform: 'acme', id: 'ab_cd' })).toThrow(/no "_"/);
  });

  it('refuses a folder form that could leave the root', () => {
    const registry = createPlatformRegistry({ adapters: [{ ...base, folderName: (id) => id }] });
    expect(() => registry.folderName({ platform: 'acme', id: '../x' })).toThrow(/not a safe file name/);
    expect(() => registry.folderName({ platform: 'acme', id: '..' })).toThrow(/not a safe file name/);
  });

  it('refuses two identities that an adapter maps to one folder', () => {
    const registry = createPlatformRegistry({ adapters: [{ ...base, folderName: (id) => id.toLowerCase().replace(/[^a-z0-9]/g, 'x') }] });
    registry.folderName({ platform: 'acme', id: 'Bob' });
    expect(() => registry.folderName({ platform: 'acme', id: 'bob' })).toThrow(IdentityCollisionError);
  });

  it('refuses two identities that an adapter maps to one env form', () => {
    const registry = createPlatformRegistry({ adapters: [{ ...base, envName: (id) => id.toUpperCase().replace(/[^A-Z0-9]/g, '') }] });
    registry.envName({ platform: 'acme', id: 'ab-cd' });
    expect(() => registry.envName({ platform: 'acme', id: 'abcd' })).toThrow(IdentityCollisionError);
  });

  it('refuses a second adapter for a platform or alias', () => {
    const registry = createPlatformRegistry({ adapters: [{ ...base, aliases: ['ac'] }] });
    expect(() => registry.register(createGenericAdapter({ platform: 'ac' }))).toThrow(/already has an adapter/);
  });

  it('refuses platforms without an adapter when the generic fallback is off', () => {
    const registry = createPlatformRegistry({ genericFallback: false });
    expect(() => registry.resolve('signal', 'x')).toThrow(/no adapter knows the platform "signal" \(known: none\)/);
  });

  it('gives the generic adapter only to the platforms named, and refuses any other naming the known ones', () => {
    const registry = createPlatformRegistry({ genericPlatforms: ['discord'] });
    registry.register({ ...createGenericAdapter({ platform: 'telegram' }), aliases: ['tg'] });
    expect(registry.resolve('discord', 'u1')).toEqual({ platform: 'discord', id: 'u1' });
    expect(() => registry.resolve('telegarm', '123456789')).toThrow(
      /^no adapter knows the platform "telegarm" \(known: telegram \(tg\), discord\); check its spelling, or, for a platform without an adapter of its own, add telegarm to terminal\.generic_platforms/,
    );
    expect(() => registry.resolve('telegarm', '123456789')).toThrow(UnknownPlatformError);
  });
});
