import { ConfigError, describeForMessage, IdentityError, truncateForMessage, type PlatformAdapterV1 } from '@berth/core';
import { z } from 'zod';

/** Looks up the phone number behind a WhatsApp linked id; see {@link WhatsAppAdapterOptions.resolveLinkedId}. */
export type LinkedIdResolver = (linkedId: string) => string | undefined;

/** Options of {@link createWhatsAppAdapter}. */
export interface WhatsAppAdapterOptions {
  /**
   * The international dialling prefix operators write instead of `+`, e.g. `00` (most of the
   * world) or `011` (North America). Only when set is `0044 7700 900123` read as
   * `+447700900123`; it must start with `0`, so it can never be mistaken for a country code.
   * @default undefined (numbers must start with `+`, or be the bare international digits of a JID)
   */
  readonly internationalPrefix?: string;
  /**
   * The host's lookup from a linked id (`123456789012345@lid`, device part removed) to the
   * person's phone number (`+447700900123` or a phone JID), `undefined` when it does not know.
   * Without it, or when it returns `undefined`, a linked id is refused: Berth never guesses.
   */
  readonly resolveLinkedId?: LinkedIdResolver;
}

const whatsAppAdapterOptionsSchema = z
  .strictObject({
    internationalPrefix: z
      .string()
      .regex(/^0[0-9]{1,3}$/, { message: 'expected the digits of an international dialling prefix starting with 0, like "00" or "011"' })
      .optional(),
    resolveLinkedId: z
      .custom<LinkedIdResolver>((value) => typeof value === 'function', { message: 'expected a function (linkedId) => phone number or undefined' })
      .optional(),
  })
  .default({});

/** Country codes never start with 0; E.164 allows at most 15 digits, and the shortest numbers in use (Niue, Saint Helena, Tokelau) have 7. */
const E164_DIGITS = /^[1-9][0-9]{6,14}$/;
/** The user part of a phone or linked JID: the number, then an optional agent and device (`1234.0:7`). */
const JID_USER = /^([0-9]+)(?:\.[0-9]+)?(?::[0-9]+)?$/;
/** Separators people write inside phone numbers (space, no-break space, `-`, `.`, `(`, `)`). */
const SEPARATORS = /[ \u00a0().-]/g;

/**
 * Creates the WhatsApp platform adapter (`whatsapp`, alias `wa`). Canonical ids are E.164 phone
 * numbers, `+447700900123`; the folder form is that same text and the env form is the digits,
 * so the user's variables are `HERMES_USER_WHATSAPP_447700900123_*`.
 *
 * Accepted senders: `+44 7700 900123` (spaces, dots, dashes and brackets allowed after a `+`),
 * bare international digits as JIDs carry them (`447700900123`), `whatsapp:` or `wa:` prefixed
 * forms, JIDs `447700900123@s.whatsapp.net`, `447700900123:12@s.whatsapp.net` (every device is
 * the same person) and `@c.us`, Cloud API objects (`{ wa_id }`, `{ from }`) and message keys
 * (`{ key: { remoteJid, participant } }`). Groups (`@g.us`), status and broadcast lists
 * (`@broadcast`), channels (`@newsletter`) and unknown servers are refused; linked ids (`@lid`)
 * go through `resolveLinkedId` and are refused when it has no answer.
 */
export function createWhatsAppAdapter(options?: WhatsAppAdapterOptions): PlatformAdapterV1 {
  const parsed = whatsAppAdapterOptionsSchema.safeParse(options);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const key = ['createWhatsAppAdapter', ...issue.path.map(String)].join('.');
    throw new ConfigError(key, `${key}: ${issue.message}`);
  }
  const { internationalPrefix, resolveLinkedId } = parsed.data;

  const refuse = (message: string, cause?: unknown): IdentityError => new IdentityError('whatsapp', message, cause === undefined ? undefined : { cause });

  const fromDigits = (digits: string, shown: string): string => {
    if (E164_DIGITS.test(digits)) return `+${digits}`;
    if (digits.startsWith('0')) {
      throw refuse(`whatsapp sender ${shown} has a country code starting with 0, which none has; write the number as +<country code><number>`);
    }
    throw refuse(`whatsapp sender ${shown} has ${digits.length} digits; a phone number in international form has 7 to 15, like +447700900123`);
  };

  const fromPhone = (text: string, shown: string): string => {
    if (/[^0-9+ \u00a0().-]/.test(text)) {
      throw refuse(`whatsapp sender ${shown} is neither a phone number nor a JID; expected +447700900123 or 447700900123@s.whatsapp.net`);
    }
    const compact = text.replace(SEPARATORS, '');
    if (compact.startsWith('+')) {
      const digits = compact.slice(1);
      if (!/^[0-9]+$/.test(digits)) throw refuse(`whatsapp sender ${shown} is not a phone number: after the + only digits and separators may follow`);
      return fromDigits(digits, shown);
    }
    if (!/^[0-9]+$/.test(compact)) throw refuse(`whatsapp sender ${shown} is not a phone number; write it as +447700900123`);
    if (internationalPrefix !== undefined && compact.startsWith(internationalPrefix)) {
      return fromDigits(compact.slice(internationalPrefix.length), shown);
    }
    if (compact.startsWith('0')) {
      throw refuse(
        `whatsapp sender ${shown} starts with 0, so it is a national number or uses a dialling prefix Berth was not told about; ` +
          `write it as +<country code><number>${internationalPrefix === undefined ? ' or set internationalPrefix (e.g. "00")' : ''}`,
      );
    }
    if (compact !== text) {
      // "(234) 567-8900" without a + is how people write national numbers; reading it as
      // international would hand the sandbox to whoever owns +2345678900 abroad.
      throw refuse(`whatsapp sender ${shown} has separators but no +, so it may be a national number; write it as +<country code><number>`);
    }
    return fromDigits(compact, shown);
  };

  const fromLinkedId = (number: string, shown: string): string => {
    const linkedId = `${number}@lid`;
    if (resolveLinkedId === undefined) {
      throw refuse(
        `whatsapp sender ${shown} is a linked id (LID), which hides the phone number, ` +
          'and no resolveLinkedId lookup was given; Berth does not guess — pass one to createWhatsAppAdapter',
      );
    }
    let answer: unknown;
    try {
      answer = resolveLinkedId(linkedId);
    } catch (error) {
      throw refuse(
        `whatsapp sender ${shown} is a linked id and the resolveLinkedId lookup failed ` +
          `(${truncateForMessage(error instanceof Error ? error.message : String(error))}); fix the host's lookup`,
        error,
      );
    }
    if (answer === undefined || answer === null || answer === '') {
      throw refuse(
        `whatsapp sender ${shown} is a linked id (LID) that the host's lookup cannot map to a phone number; ` +
          "it is refused rather than guessed — record its number in the host's contact store",
      );
    }
    if (typeof answer !== 'string')
      throw refuse(`whatsapp resolveLinkedId returned ${describeForMessage(answer)} for ${shown}; it must return a phone number string or undefined`);
    try {
      return fromString(answer, false);
    } catch (error) {
      throw refuse(
        `whatsapp resolveLinkedId mapped ${shown} to ${describeForMessage(answer)}, which is not a phone number: ${(error as Error).message}`,
        error,
      );
    }
  };

  const fromJid = (text: string, shown: string, allowLinked: boolean): string => {
    const at = text.indexOf('@');
    if (at !== text.lastIndexOf('@')) throw refuse(`whatsapp sender ${shown} is not a JID: it has more than one @`);
    const user = text.slice(0, at);
    const server = text.slice(at + 1).toLowerCase();
    switch (server) {
      case 'g.us':
        throw refuse(`whatsapp sender ${shown} is a group, not a user; pass the participant who wrote the message`);
      case 'broadcast':
        throw refuse(
          user === 'status'
            ? `whatsapp sender ${shown} is the status feed, not a user; status updates get no sandbox`
            : `whatsapp sender ${shown} is a broadcast list, not a user; pass the participant who wrote the message`,
        );
      case 'newsletter':
        throw refuse(`whatsapp sender ${shown} is a channel (newsletter), not a user; channels get no sandbox`);
      case 'lid':
      case 'hosted.lid': {
        const match = JID_USER.exec(user);
        if (!match) throw refuse(`whatsapp sender ${shown} is not a valid linked id; expected digits before @lid`);
        if (!allowLinked) throw refuse(`whatsapp resolveLinkedId returned another linked id (${shown}); it must return a phone number`);
        return fromLinkedId(match[1]!, shown);
      }
      case 's.whatsapp.net':
      case 'c.us': {
        const match = JID_USER.exec(user);
        if (!match) throw refuse(`whatsapp sender ${shown} is not a user JID; expected <digits>@s.whatsapp.net or <digits>:<device>@s.whatsapp.net`);
        return fromDigits(match[1]!, shown);
      }
      default:
        throw refuse(
          `whatsapp sender ${shown} is on server ${JSON.stringify(truncateForMessage(server, 30))}, ` +
            'which is not a WhatsApp user server; expected @s.whatsapp.net, @c.us or @lid',
        );
    }
  };

  function fromString(value: string, allowLinked: boolean): string {
    const shown = describeForMessage(value);
    if (value.length > 200) throw refuse(`whatsapp sender ${shown} is too long to be a phone number or JID`);
    let rest = value.trim();
    const prefix = /^(?:whatsapp|wa):/i.exec(rest);
    if (prefix) rest = rest.slice(prefix[0].length).trim();
    if (rest === '') throw refuse(`whatsapp sender ${shown} is empty; the host must pass the sender's phone number or JID`);
    if (rest.includes('@')) return fromJid(rest, shown, allowLinked);
    return fromPhone(rest, shown);
  }

  const fromScalar = (value: unknown, where: string): string => {
    if (typeof value === 'string') return fromString(value, true);
    if (typeof value === 'number' || typeof value === 'bigint') {
      const shown = describeForMessage(value);
      if (typeof value === 'number' && !Number.isSafeInteger(value)) {
        throw refuse(`whatsapp sender ${shown} is not a safe integer (a rounded or fractional number); pass the phone number as a string`);
      }
      if (value <= 0) throw refuse(`whatsapp sender ${shown} is not a phone number; pass it as a string like +447700900123`);
      return fromDigits(String(value), shown);
    }
    throw refuse(`whatsapp ${where} is ${describeForMessage(value)}, not a phone number or JID`);
  };

  const own = (object: object, key: string): unknown => (Object.hasOwn(object, key) ? (object as Record<string, unknown>)[key] : undefined);
  const isObject = (value: unknown): value is object => typeof value === 'object' && value !== null && !Array.isArray(value);

  const fromObject = (object: object): string => {
    const key = own(object, 'key');
    if (isObject(key)) {
      if (own(key, 'fromMe') === true) throw refuse("whatsapp message was sent by the gateway's own account (key.fromMe), not by a user");
      const remoteJid = own(key, 'remoteJid');
      if (typeof remoteJid === 'string' && remoteJid.toLowerCase() === 'status@broadcast') {
        throw refuse('whatsapp message is a status update (status@broadcast), not a message to the gateway; it gets no sandbox');
      }
      const participant = own(key, 'participant');
      // In a group the chat is remoteJid and the person is participant.
      if (participant !== undefined && participant !== null && participant !== '') return fromScalar(participant, 'key.participant');
      return fromScalar(remoteJid, 'key.remoteJid');
    }
    const waId = own(object, 'wa_id');
    if (waId !== undefined) return fromScalar(waId, 'wa_id');
    const from = own(object, 'from');
    if (from !== undefined) return fromScalar(from, 'from');
    throw refuse("whatsapp sender object has no key, wa_id or from field; pass the sender's phone number or JID");
  };

  const normalize = (rawSender: unknown): string => {
    if (isObject(rawSender)) {
      try {
        return fromObject(rawSender);
      } catch (error) {
        if (error instanceof IdentityError) throw error;
        throw refuse("whatsapp sender object could not be read; pass the sender's phone number or JID", error);
      }
    }
    return fromScalar(rawSender, 'sender');
  };

  const digitsOf = (id: string): string => {
    if (typeof id !== 'string' || !id.startsWith('+') || !E164_DIGITS.test(id.slice(1))) {
      throw refuse(`whatsapp id ${describeForMessage(id)} is not canonical; normalize() the sender first`);
    }
    return id.slice(1);
  };

  return {
    specificationVersion: 'v1',
    platform: 'whatsapp',
    aliases: ['wa'],
    normalize,
    // `+` is a safe file-name character, so the folder keeps the number as people write it.
    folderName: (id) => `+${digitsOf(id)}`,
    envName: digitsOf,
    idFromEnvName: (form) => (typeof form === 'string' && E164_DIGITS.test(form) ? `+${form}` : undefined),
  };
}
