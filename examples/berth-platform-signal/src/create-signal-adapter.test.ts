import { ConfigError, createPlatformRegistry, createSandboxResolver, parseTerminalConfig } from '@berth/core';
import { tmpdir } from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createSignalAdapter } from './create-signal-adapter.js';
import { PROPERTY_TEST_TIMEOUT_MS } from '../../../vitest.shared.js';

const adapter = createSignalAdapter();

describe('createSignalAdapter', () => {
  it('makes every spelling of one ACI one user, with one folder and one variable prefix', { timeout: PROPERTY_TEST_TIMEOUT_MS }, () => {
    fc.assert(
      fc.property(
        fc.uuid().filter((uuid) => !/^[0-]+$/.test(uuid)),
        fc.array(fc.boolean(), { minLength: 36, maxLength: 36 }),
        (uuid, upper) => {
          const mixed = [...uuid].map((char, index) => (upper[index] ? char.toUpperCase() : char)).join('');
          expect(adapter.normalize(mixed)).toBe(uuid);
          expect(adapter.folderName(uuid)).toBe(uuid);
          expect(adapter.idFromEnvName(adapter.envName(uuid))).toBe(uuid);
        },
      ),
    );
  });

  it('keeps the variables of ab-cd-style ids apart (the prefix trap of rule 2)', () => {
    const first = 'abcdabcd-0000-4000-8000-000000000001';
    const second = 'abcdabcd-0000-4000-8000-000000000010';
    const registry = createPlatformRegistry({ adapters: [adapter] });
    const environment = {
      [`HERMES_USER_SIGNAL_${adapter.envName(first)}_TOKEN`]: 'token-of-first',
      [`HERMES_USER_SIGNAL_${adapter.envName(second)}_TOKEN`]: 'token-of-second',
      // What a naive operator might write for the first user: refused, never forwarded.
      HERMES_USER_SIGNAL_ABCDABCD_0000_TOKEN: 'nobodys',
    };
    const config = parseTerminalConfig({ sandbox_dir: path.join(tmpdir(), 'berth-signal-never-created') });
    const resolver = createSandboxResolver({ config, registry, environment });
    const variablesOf = (id: string) => resolver.forScope(resolver.scopeOf({ identity: { platform: 'signal', id } })).environment.variables;
    expect(variablesOf(first)).toEqual({ TOKEN: 'token-of-first' });
    expect(variablesOf(second)).toEqual({ TOKEN: 'token-of-second' });
    expect(resolver.index.refused.map((error) => error.variable)).toEqual(['HERMES_USER_SIGNAL_ABCDABCD_0000_TOKEN']);
  });

  it('can refuse phone numbers, so one person is never split into two sandboxes', () => {
    const aciOnly = createSignalAdapter({ allowPhoneNumbers: false });
    expect(() => aciOnly.normalize('+447700900123')).toThrow(/ACIs \(UUIDs\) only/);
    expect(aciOnly.idFromEnvName('447700900123')).toBeUndefined();
    expect(() => createSignalAdapter({ allowPhoneNumbers: 'no' } as never)).toThrow(ConfigError);
  });
});
