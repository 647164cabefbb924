import { ConfigError, describeForMessage, IdentityError, type PlatformAdapterV1 } from '@berth/core';
import { z } from 'zod';

/**
 * The largest Telegram user id: Telegram documents user ids as having at most 52 significant
 * bits, so every real id is below 2^52 and is exact as a JavaScript number.
 */
export const TELEGRAM_MAX_USER_ID = 2 ** 52 - 1;

/**
 * Accounts that stand for many people at once: a message "from" them was written by someone
 * Telegram does not name. Giving them a sandbox would make every anonymous admin, every
 * channel and every service notice share one.
 */
export const TELEGRAM_SHARED_SENDER_IDS: Readonly<Record<string, string>> = Object.freeze({
  '777000': 'Telegram service notifications and posts forwarded from a linked channel',
  '1087968824': 'GroupAnonymousBot, which sends the messages of anonymous group admins',
  '136817688': 'Channel_Bot, which sends messages on behalf of channels',
});

const telegramAdapterOptionsSchema = z
  .strictObject({
    allowBots: z.boolean().default(false),
  })
  .default({ allowBots: false });

/** Options of {@link createTelegramAdapter}. */
export interface TelegramAdapterOptions {
  /**
   * Whether a sender whose user object says `is_bot: true` gets a sandbox. A bare numeric id
   * cannot be told apart from a person's, so this only applies to user objects and updates.
   * @default false
   */
  readonly allowBots?: boolean;
}

// Update fields whose value is a message: the sender is `from`, unless the message was sent on
// behalf of a chat (`sender_chat`), in which case no person is named.
const MESSAGE_FIELDS = ['message', 'edited_message', 'business_message', 'edited_business_message'] as const;
// Update fields whose value names its sender in `from` or `user`.
const SENDER_FIELDS = [
  'callback_query',
  'inline_query',
  'chosen_inline_result',
  'shipping_query',
  'pre_checkout_query',
  'poll_answer',
  'my_chat_member',
  'chat_member',
  'chat_join_request',
  'message_reaction',
  'purchased_paid_media',
] as const;
const CHANNEL_FIELDS = ['channel_post', 'edited_channel_post'] as const;

const CANONICAL_ID = /^[1-9][0-9]{0,15}$/;

/** Whether `id` is a canonical Telegram user id (digits, no leading zero, a person's range). */
function isCanonicalId(id: string): boolean {
  return CANONICAL_ID.test(id) && Number(id) <= TELEGRAM_MAX_USER_ID && !(id in TELEGRAM_SHARED_SENDER_IDS);
}

/**
 * Creates the Telegram platform adapter (`telegram`, alias `tg`). Canonical ids are the user's
 * numeric id in decimal without leading zeros (`123456789`); the folder form and the env form
 * are those digits, so the user's variables are `HERMES_USER_TELEGRAM_123456789_*`.
 *
 * Accepted senders: numbers (safe integers only), bigints, strings of digits, `telegram:` or
 * `tg:` prefixed strings, user objects (`{ id, is_bot, first_name }`) and the updates a gateway
 * holds (`{ message: { from } }`, `{ callback_query: { from } }`, `{ edited_message: { from } }`,
 * a bare `{ from }`, ...). Chats (negative ids), usernames, bots (unless allowed) and the shared
 * service accounts are refused with an `IdentityError` that says why.
 */
export function createTelegramAdapter(options?: TelegramAdapterOptions): PlatformAdapterV1 {
  const parsed = telegramAdapterOptionsSchema.safeParse(options);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const key = ['createTelegramAdapter', ...issue.path.map(String)].join('.');
    throw new ConfigError(key, `${key}: ${issue.message}; the only option is allowBots (a boolean)`);
  }
  const { allowBots } = parsed.data;

  const refuse = (message: string): IdentityError => new IdentityError('telegram', message);

  const checkRange = (digits: string, shown: string): string => {
    const id = digits.replace(/^0+/, '');
    if (id === '') throw refuse(`telegram sender ${shown} is 0, which is not a user id; pass the sender's id (message.from.id)`);
    if (id.length > 16 || Number(id) > TELEGRAM_MAX_USER_ID) {
      throw refuse(`telegram sender ${shown} is larger than 2^52, which no Telegram user id is; pass the sender's id (message.from.id)`);
    }
    const shared = TELEGRAM_SHARED_SENDER_IDS[id];
    if (shared !== undefined) {
      throw refuse(`telegram sender ${id} is ${shared}; it stands for many people, so it gets no sandbox`);
    }
    return id;
  };

  const chatRefusal = (shown: string, digits: string): IdentityError =>
    refuse(
      `telegram id ${shown} is negative: it is a chat (${digits.startsWith('100') ? 'a supergroup or channel' : 'a group'}), not a user; ` +
        "pass the sender's id (message.from.id), not the chat's",
    );

  const fromNumber = (value: number): string => {
    const shown = describeForMessage(value);
    if (!Number.isInteger(value)) throw refuse(`telegram sender ${shown} is not an integer; Telegram user ids are whole numbers like 123456789`);
    if (!Number.isSafeInteger(value)) {
      throw refuse(
        `telegram sender ${shown} is beyond the safe-integer range, so it was already rounded when it became a number; pass the id as a string or a bigint`,
      );
    }
    if (value < 0) throw chatRefusal(shown, String(-value));
    return checkRange(String(value), shown);
  };

  const fromBigInt = (value: bigint): string => {
    const shown = describeForMessage(value);
    if (value < 0n) throw chatRefusal(shown, String(-value));
    return checkRange(String(value), shown);
  };

  const fromString = (value: string): string => {
    const shown = describeForMessage(value);
    if (value.length > 100) throw refuse(`telegram sender ${shown} is too long to be a user id; pass the sender's numeric id`);
    let rest = value.trim();
    const prefix = /^(?:telegram|tg):/i.exec(rest);
    if (prefix) rest = rest.slice(prefix[0].length).trim();
    if (rest === '') throw refuse(`telegram sender ${shown} is empty; the host must pass the sender's id (message.from.id)`);
    if (/^[0-9]+$/.test(rest)) return checkRange(rest, shown);
    if (/^-[0-9]+$/.test(rest)) throw chatRefusal(shown, rest.slice(1));
    if (/^@?[A-Za-z][A-Za-z0-9_]{3,31}$/.test(rest)) {
      throw refuse(`telegram sender ${shown} is a username, not a user id; usernames change hands, so pass the numeric id (message.from.id)`);
    }
    throw refuse(`telegram sender ${shown} is not a user id; expected decimal digits like 123456789 (optionally telegram:123456789)`);
  };

  const fromScalar = (value: unknown, where: string): string => {
    if (typeof value === 'number') return fromNumber(value);
    if (typeof value === 'bigint') return fromBigInt(value);
    if (typeof value === 'string') return fromString(value);
    throw refuse(`telegram ${where} is ${describeForMessage(value)}, not a user id; expected a number or a string of digits`);
  };

  const own = (object: object, key: string): unknown => (Object.hasOwn(object, key) ? (object as Record<string, unknown>)[key] : undefined);
  const isObject = (value: unknown): value is object => typeof value === 'object' && value !== null && !Array.isArray(value);

  const fromUser = (user: unknown, where: string): string => {
    if (!isObject(user)) throw refuse(`telegram ${where} is ${describeForMessage(user)}, not a user object`);
    if (own(user, 'is_bot') === true && !allowBots) {
      throw refuse(`telegram ${where} is a bot (is_bot: true); bots get no sandbox unless the adapter is created with allowBots: true`);
    }
    return fromScalar(own(user, 'id'), `${where}.id`);
  };

  // A message, or anything else that names its sender in `from`.
  const fromSenderHolder = (holder: object, where: string): string => {
    const senderChat = own(holder, 'sender_chat');
    if (senderChat !== undefined && senderChat !== null) {
      throw refuse(`telegram ${where} was sent on behalf of a chat (sender_chat: an anonymous admin or a channel), not by a user; it gets no user sandbox`);
    }
    const from = own(holder, 'from');
    if (from !== undefined) return fromUser(from, `${where}.from`);
    const user = own(holder, 'user');
    if (user !== undefined) return fromUser(user, `${where}.user`);
    if (own(holder, 'voter_chat') !== undefined || own(holder, 'actor_chat') !== undefined) {
      throw refuse(`telegram ${where} was made by a chat, not by a user; it gets no user sandbox`);
    }
    throw refuse(`telegram ${where} names no sender (no from); pass the update, the message or message.from`);
  };

  const fromObject = (object: object): string => {
    for (const field of MESSAGE_FIELDS) {
      const message = own(object, field);
      if (message === undefined) continue;
      if (!isObject(message)) throw refuse(`telegram update field ${field} is ${describeForMessage(message)}, not a message`);
      return fromSenderHolder(message, field);
    }
    for (const field of CHANNEL_FIELDS) {
      if (own(object, field) !== undefined) throw refuse(`telegram update ${field} is a channel post, which has no user sender; it gets no user sandbox`);
    }
    for (const field of SENDER_FIELDS) {
      const inner = own(object, field);
      if (inner === undefined) continue;
      if (!isObject(inner)) throw refuse(`telegram update field ${field} is ${describeForMessage(inner)}, not an object`);
      return fromSenderHolder(inner, field);
    }
    if (own(object, 'from') !== undefined || own(object, 'user') !== undefined || own(object, 'sender_chat') !== undefined) {
      return fromSenderHolder(object, 'message');
    }
    if (own(object, 'id') !== undefined) {
      if (own(object, 'type') !== undefined) {
        throw refuse(`telegram object with id ${describeForMessage(own(object, 'id'))} is a chat (it has a type), not a user; pass the sender (message.from)`);
      }
      return fromUser(object, 'user');
    }
    throw refuse('telegram sender object is not an update, a message or a user (no message, from or id field); pass message.from');
  };

  const normalize = (rawSender: unknown): string => {
    if (isObject(rawSender)) {
      try {
        return fromObject(rawSender);
      } catch (error) {
        if (error instanceof IdentityError) throw error;
        // A getter or proxy that throws: still a refusal, never a crash of the gateway.
        throw new IdentityError('telegram', 'telegram sender object could not be read; pass message.from or the numeric id', { cause: error });
      }
    }
    return fromScalar(rawSender, 'sender');
  };

  const assertCanonical = (id: string): string => {
    if (typeof id !== 'string' || !isCanonicalId(id)) {
      throw refuse(`telegram id ${describeForMessage(id)} is not canonical; normalize() the sender first`);
    }
    return id;
  };

  return {
    specificationVersion: 'v1',
    platform: 'telegram',
    aliases: ['tg'],
    normalize,
    folderName: assertCanonical,
    envName: assertCanonical,
    idFromEnvName: (form) => (typeof form === 'string' && isCanonicalId(form) ? form : undefined),
  };
}
