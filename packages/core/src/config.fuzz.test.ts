import fc from 'fast-check';
import { stringify } from 'yaml';
import { describe, expect, it } from 'vitest';
import { parseConfigText, parseTerminalConfig } from './config.js';
import { terminalConfigSchema } from './terminal-config-schema.js';
import { ConfigError } from './errors.js';
import { PROPERTY_TEST_TIMEOUT_MS } from '../../../vitest.shared.js';

const KEYS = Object.keys(terminalConfigSchema.shape);

/** Any JSON-ish value, the odd ones included. */
const anyValue = fc.oneof(
  fc.string(),
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.array(fc.oneof(fc.string(), fc.integer()), { maxLength: 3 }),
  fc.dictionary(fc.string({ maxLength: 8 }), fc.oneof(fc.string(), fc.integer(), fc.boolean()), { maxKeys: 3 }),
);

const anyKey = fc.oneof(fc.constantFrom(...KEYS), fc.string({ maxLength: 12 }));

describe('config fuzz', () => {
  it('knows its keys', () => {
    expect(KEYS).toEqual(expect.arrayContaining(['backend', 'docker_user_sandbox', 'docker_forward_env', 'docker_env', 'lifetime_seconds']));
  });

  it('either accepts a generated section or throws one ConfigError line naming a key', { timeout: PROPERTY_TEST_TIMEOUT_MS }, () => {
    fc.assert(
      fc.property(fc.dictionary(anyKey, anyValue, { maxKeys: 6 }), (section) => {
        try {
          parseTerminalConfig(section);
        } catch (error) {
          expect(error).toBeInstanceOf(ConfigError);
          const message = (error as ConfigError).message;
          expect(message).not.toContain('\n');
          expect(message).toMatch(/^(unknown key )?terminal\./);
          expect((error as ConfigError).key).toMatch(/^terminal/);
        }
      }),
      { numRuns: 3000 },
    );
  });

  it('either accepts generated YAML text or throws one ConfigError line naming the file', { timeout: PROPERTY_TEST_TIMEOUT_MS }, () => {
    const text = fc.oneof(
      fc.dictionary(anyKey, anyValue, { maxKeys: 5 }).map((terminal) => stringify({ terminal })),
      fc.string({ maxLength: 200 }).map((junk) => `terminal:\n  ${junk}`),
      fc.string({ maxLength: 200 }),
    );
    fc.assert(
      fc.property(text, (yamlText) => {
        try {
          parseConfigText(yamlText, 'config.yaml');
        } catch (error) {
          expect(error).toBeInstanceOf(ConfigError);
          expect((error as Error).message).not.toContain('\n');
          expect((error as Error).message).toMatch(/config\.yaml|terminal/);
        }
      }),
      { numRuns: 2000 },
    );
  });
});
