import { tmpdir } from 'node:os';
import path from 'node:path';
import { ConfigError, createPlatformRegistry, createSandboxResolver, IdentityError, parseTerminalConfig } from '@berth/core';
import { createTelegramAdapter } from '@berth/platform-telegram';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createWhatsAppAdapter } from './create-whatsapp-adapter.js';
import { PROPERTY_TEST_TIMEOUT_MS } from '../../../vitest.shared.js';

const adapter = createWhatsAppAdapter();
const e164 = fc.stringMatching(/^[1-9][0-9]{6,14}$/);

describe('createWhatsAppAdapter', () => {
  it('gives one id to every way of writing one number, and to all of its devices', { timeout: PROPERTY_TEST_TIMEOUT_MS }, () => {
    fc.assert(
      fc.property(e164, fc.nat({ max: 99 }), (digits, device) => {
        const id = `+${digits}`;
        const spaced = `+${digits.slice(0, 2)} ${digits.slice(2, 5)}-${digits.slice(5)}`;
        for (const raw of [
          id,
          digits,
          spaced,
          `whatsapp:${id}`,
          `wa:${digits}`,
          `${digits}@s.whatsapp.net`,
          `${digits}:${device}@s.whatsapp.net`,
          `${digits}@c.us`,
          { wa_id: digits },
        ]) {
          expect(adapter.normalize(raw), JSON.stringify(raw)).toBe(id);
        }
        expect(adapter.folderName(id)).toBe(id);
        expect(adapter.envName(id)).toBe(digits);
        expect(adapter.idFromEnvName(digits)).toBe(id);
      }),
    );
  });

  it('never turns a group, a broadcast list, the status feed or a channel into a user', { timeout: PROPERTY_TEST_TIMEOUT_MS }, () => {
    fc.assert(
      fc.property(e164, fc.constantFrom('g.us', 'broadcast', 'newsletter', 'G.US'), (digits, server) => {
        expect(() => adapter.normalize(`${digits}@${server}`)).toThrow(IdentityError);
        expect(() => adapter.normalize({ key: { remoteJid: `${digits}@${server}` } })).toThrow(IdentityError);
      }),
    );
  });

  it('refuses linked ids without a lookup, and says why', () => {
    expect(() => adapter.normalize('123456789012345@lid')).toThrow(/linked id \(LID\).*no resolveLinkedId.*does not guess/);
  });

  it('maps linked ids only through the lookup, strips the device first, and refuses bad answers', () => {
    const asked: string[] = [];
    const withLookup = createWhatsAppAdapter({
      resolveLinkedId: (lid) => {
        asked.push(lid);
        return { '1@lid': '+447700900123', '2@lid': '3@lid', '4@lid': 'not a number', '5@lid': '120363025246125486@g.us' }[lid];
      },
    });
    expect(withLookup.normalize('1:12@lid')).toBe('+447700900123');
    expect(asked).toEqual(['1@lid']);
    expect(() => withLookup.normalize('2@lid')).toThrow(/returned another linked id/);
    expect(() => withLookup.normalize('4@lid')).toThrow(/not a phone number/);
    expect(() => withLookup.normalize('5@lid')).toThrow(/is a group/);
    expect(() => withLookup.normalize('6@lid')).toThrow(/cannot map.*rather than guessed/);
    const failing = createWhatsAppAdapter({
      resolveLinkedId: () => {
        throw new Error('contact store offline');
      },
    });
    expect(() => failing.normalize('1@lid')).toThrow(/lookup failed \(contact store offline\)/);
  });

  it('reads a dialling prefix only when configured, and never inside a JID', () => {
    expect(() => adapter.normalize('0044 7700 900123')).toThrow(/starts with 0.*internationalPrefix/);
    const northAmerica = createWhatsAppAdapter({ internationalPrefix: '011' });
    expect(northAmerica.normalize('011 44 7700 900123')).toBe('+447700900123');
    expect(northAmerica.normalize('011447700900123')).toBe('+447700900123');
    expect(() => northAmerica.normalize('011447700900123@s.whatsapp.net')).toThrow(/country code starting with 0/);
  });

  it('validates its options and names the bad one', () => {
    expect(() => createWhatsAppAdapter({ internationalPrefix: '810' })).toThrow(ConfigError);
    expect(() => createWhatsAppAdapter({ internationalPrefix: '+' })).toThrow(/createWhatsAppAdapter\.internationalPrefix/);
    expect(() => createWhatsAppAdapter({ resolveLinkedId: {} as never })).toThrow(/createWhatsAppAdapter\.resolveLinkedId/);
    expect(() => createWhatsAppAdapter({ prefix: '00' } as never)).toThrow(ConfigError);
  });

  it('refuses to name a folder or a variable for an id that is not canonical', () => {
    for (const id of ['447700900123', '+0447700900123', '+44 7700', '..', '', '+1234567890123456']) {
      expect(() => adapter.folderName(id)).toThrow(IdentityError);
      expect(() => adapter.envName(id)).toThrow(IdentityError);
    }
    expect(adapter.idFromEnvName('0447700900123')).toBeUndefined();
    expect(adapter.idFromEnvName('+447700900123')).toBeUndefined();
  });
});

describe('identity links, seen from the Telegram and WhatsApp adapters', () => {
  const registry = () => createPlatformRegistry({ adapters: [createTelegramAdapter(), createWhatsAppAdapter()] });
  const sandboxDir = path.join(tmpdir(), 'berth-whatsapp-test-never-created');
  const environment = {
    HERMES_USER_TELEGRAM_123456789_GITHUB_TOKEN: 'ghp_from_telegram_identity',
    HERMES_USER_WHATSAPP_447700900123_GITHUB_TOKEN: 'ghp_from_whatsapp_identity',
    HERMES_USER_WHATSAPP_447700900123_NPM_TOKEN: 'npm_from_whatsapp_identity',
    HERMES_USER_WHATSAPP_447700900124_GITHUB_TOKEN: 'ghp_of_a_stranger',
  };

  it("gives one person one sandbox from either app, with both identities' variables, the first identity winning", () => {
    // The operator types canonical ids (a platform alias is no ambiguity); the messages come in as the platforms send them.
    const config = parseTerminalConfig({ sandbox_dir: sandboxDir, docker_identity_links: [['tg:123456789', 'whatsapp:+447700900123']] });
    const resolver = createSandboxResolver({ config, registry: registry(), environment });
    const fromWhatsApp = resolver.resolve({ session: { platform: 'whatsapp', userId: '447700900123:4@s.whatsapp.net' } });
    const fromTelegram = resolver.resolve({ session: { platform: 'telegram', userId: 123456789 } });
    for (const request of [fromWhatsApp, fromTelegram]) {
      expect(request.paths.folder).toBe(path.join(sandboxDir, 'docker', 'telegram@123456789'));
      expect(request.environment.variables).toEqual({ GITHUB_TOKEN: 'ghp_from_telegram_identity', NPM_TOKEN: 'npm_from_whatsapp_identity' });
    }
    expect(fromWhatsApp.scope.key).toBe(fromTelegram.scope.key);
    const stranger = resolver.resolve({ session: { platform: 'whatsapp', userId: '+447700900124' } });
    expect(stranger.paths.folder).toBe(path.join(sandboxDir, 'docker', 'whatsapp@+447700900124'));
    expect(stranger.environment.variables).toEqual({ GITHUB_TOKEN: 'ghp_of_a_stranger' });
  });

  it('refuses a link that joins an identity already linked elsewhere', () => {
    const config = parseTerminalConfig({
      sandbox_dir: sandboxDir,
      docker_identity_links: [
        ['telegram:123456789', 'whatsapp:+447700900123'],
        ['whatsapp:+447700900123', 'telegram:987654321'],
      ],
    });
    expect(() => createSandboxResolver({ config, registry: registry(), environment })).toThrow(
      /docker_identity_links\.1 links whatsapp:\+447700900123, which is already linked/,
    );
  });

  it.each([
    ['whatsapp:2025550123', 'whatsapp:+2025550123'],
    ['whatsapp:447700900123@s.whatsapp.net', 'whatsapp:+447700900123'],
    ['whatsapp:+44 7700 900123', 'whatsapp:+447700900123'],
    ['wa:447700900123', 'whatsapp:+447700900123'],
  ])('refuses a link entry an operator typed in a form the adapter had to interpret (%s), showing the form to type', (typed, canonical) => {
    const config = parseTerminalConfig({ sandbox_dir: sandboxDir, docker_identity_links: [['telegram:123456789', typed]] });
    const attempt = () => createSandboxResolver({ config, registry: registry(), environment });
    expect(attempt).toThrow(
      `terminal.docker_identity_links.0.1: ${typed} is not written the way Berth writes that identity: it would be read as ${canonical}; type exactly that`,
    );
  });

  it('refuses a link to something that is not a user, naming the entry', () => {
    const config = parseTerminalConfig({ sandbox_dir: sandboxDir, docker_identity_links: [['telegram:123456789', 'whatsapp:120363025246125486@g.us']] });
    expect(() => createSandboxResolver({ config, registry: registry(), environment })).toThrow(/docker_identity_links\.0\.1: .*is a group/);
  });
});
