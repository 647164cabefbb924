import { ConfigError, createPlatformRegistry, IdentityError } from '@berth/core';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createTelegramAdapter, TELEGRAM_MAX_USER_ID } from './create-telegram-adapter.js';
import { PROPERTY_TEST_TIMEOUT_MS } from '../../../vitest.shared.js';

const adapter = createTelegramAdapter();

describe('createTelegramAdapter', () => {
  it('gives every positive id up to 2^52 - 1 itself as id, folder and env form, whichever way it arrives', { timeout: PROPERTY_TEST_TIMEOUT_MS }, () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: TELEGRAM_MAX_USER_ID }).filter((id) => ![777000, 1087968824, 136817688].includes(id)),
        (number) => {
          const digits = String(number);
          for (const raw of [
            number,
            BigInt(number),
            digits,
            `telegram:${digits}`,
            `tg:${digits}`,
            { id: number, is_bot: false, first_name: 'A' },
            { message: { from: { id: number } } },
          ]) {
            expect(adapter.normalize(raw)).toBe(digits);
          }
          expect(adapter.folderName(digits)).toBe(digits);
          expect(adapter.envName(digits)).toBe(digits);
          expect(adapter.idFromEnvName(digits)).toBe(digits);
        },
      ),
    );
  });

  it('refuses every negative id as a chat, whatever its form', { timeout: PROPERTY_TEST_TIMEOUT_MS }, () => {
    fc.assert(
      fc.property(fc.integer({ min: -(2 ** 45), max: -1 }), (number) => {
        for (const raw of [number, String(number), `tg:${number}`, BigInt(number)]) {
          expect(() => adapter.normalize(raw)).toThrow(/chat .*not a user/);
        }
      }),
    );
  });

  it('refuses a number that was already rounded, and accepts the same id as a string only when it is in range', () => {
    const rounded = 2 ** 53 + 2; // 9007199254740994: what 9007199254740993 becomes as a number
    expect(() => adapter.normalize(rounded)).toThrow(/already rounded/);
    expect(() => adapter.normalize('9007199254740993')).toThrow(/larger than 2\^52/);
  });

  it('keeps env forms with a leading zero away from the user they resemble', () => {
    expect(adapter.idFromEnvName('0123456789')).toBeUndefined();
    expect(adapter.idFromEnvName('123456789')).toBe('123456789');
    expect(adapter.idFromEnvName('ABC')).toBeUndefined();
    expect(adapter.idFromEnvName(String(2 ** 52))).toBeUndefined();
    expect(adapter.idFromEnvName('777000')).toBeUndefined();
  });

  it('refuses to name a folder or a variable for an id that is not canonical', () => {
    for (const id of ['0123', '-5', '..', '', '12a', '777000']) {
      expect(() => adapter.folderName(id)).toThrow(IdentityError);
      expect(() => adapter.envName(id)).toThrow(IdentityError);
    }
  });

  it('accepts bots only when allowBots is set', () => {
    const bot = { id: 5_000_000_001, is_bot: true, first_name: 'Helper', username: 'helper_bot' };
    expect(() => adapter.normalize(bot)).toThrow(/is a bot/);
    expect(createTelegramAdapter({ allowBots: true }).normalize(bot)).toBe('5000000001');
    // The shared service accounts stay refused even then: they stand for many people.
    expect(() => createTelegramAdapter({ allowBots: true }).normalize({ id: 1087968824, is_bot: true, first_name: 'Group' })).toThrow(/many people/);
  });

  it('turns a getter that throws into a refusal, not a crash', () => {
    const hostile = Object.defineProperty({}, 'message', {
      enumerable: true,
      get() {
        throw new TypeError('boom');
      },
    });
    expect(() => adapter.normalize(hostile)).toThrow(IdentityError);
  });

  it('ignores fields inherited through the prototype', () => {
    const inherited = Object.create({ from: { id: 123 } }) as object;
    expect(() => adapter.normalize(inherited)).toThrow(/not an update/);
  });

  it('validates its options and names the bad one', () => {
    expect(() => createTelegramAdapter({ allowBots: 'yes' } as never)).toThrow(ConfigError);
    expect(() => createTelegramAdapter({ allowBots: 'yes' } as never)).toThrow(/createTelegramAdapter\.allowBots/);
    expect(() => createTelegramAdapter({ allowbots: true } as never)).toThrow(/allowBots/);
  });

  it('is reachable as tg: through the registry', () => {
    const registry = createPlatformRegistry({ adapters: [adapter] });
    expect(registry.parse('tg:123456789')).toEqual({ platform: 'telegram', id: '123456789' });
    expect(registry.folderName({ platform: 'telegram', id: '123456789' })).toBe('telegram@123456789');
  });
});
