import { PLATFORM_NAME_PATTERN } from './identity.js';

/**
 * What a host session key says about whose sandbox a command belongs to:
 * - `user`: a direct chat with one platform user (`platform` and the raw `peer` id);
 * - `conversation`: a group, channel, thread, topic, cron job or webhook — no user, so the
 *   conversation gets a sandbox of its own;
 * - `refused`: a direct chat that cannot be attributed to exactly one platform user, or a shape
 *   Berth does not know; `reason` is the one-line message, naming the host setting that fixes it.
 *
 * `shape` is the key with its ids replaced by placeholders (`agent:<agent>:telegram:direct:<peer>`),
 * safe to print: it never holds the user's id.
 */
export type SessionKeyMeaning =
  | { readonly kind: 'user'; readonly platform: string; readonly peer: string; readonly shape: string }
  | { readonly kind: 'conversation'; readonly shape: string }
  | { readonly kind: 'refused'; readonly shape: string; readonly reason: string };

/** Longest session key Berth reads; longer keys are refused. */
export const MAX_SESSION_KEY_LENGTH = 1024;

/** The words that mark a direct chat in the hosts' keys (`dm` in the Python gateway and older OpenClaw). */
const DIRECT = new Set(['direct', 'dm']);
/** The words that mark a conversation of many users. */
const CONVERSATION = new Set(['group', 'channel', 'thread', 'topic']);
/** Words shown as written in a refused key's shape; everything else may be an id and is hidden. */
const SHOWN_WORDS = new Set(['agent', 'cron', 'hook', 'main', ...DIRECT, ...CONVERSATION]);

const PER_CHANNEL_PEER_FIX = 'set session.dmScope: per-channel-peer (or per-account-channel-peer) in openclaw.json, or have the host pass platform and userId';

function shapeOf(parts: readonly string[]): string {
  return parts
    .map((part, index) => {
      if (part === '') return '<empty>';
      if (index === 1 && parts[0] === 'agent') return '<agent>';
      if (SHOWN_WORDS.has(part.toLowerCase())) return part;
      if (index === 2 && parts[0] === 'agent' && parts.length > 3 && PLATFORM_NAME_PATTERN.test(part)) return part;
      return '<id>';
    })
    .join(':');
}

function refused(shape: string, reason: string): SessionKeyMeaning {
  return { kind: 'refused', shape, reason };
}

function unknownShape(parts: readonly string[]): SessionKeyMeaning {
  const shape = shapeOf(parts);
  return refused(
    shape,
    `session key of shape ${shape} is not one Berth recognises, so it cannot tell whose sandbox the command belongs to; ` +
      `direct chats need keys like agent:<agent>:<channel>:direct:<peer>: ${PER_CHANNEL_PEER_FIX}`,
  );
}

/** `kind` at `parts[at]` followed by a non-empty id: a direct chat or a conversation there. */
function markerAt(parts: readonly string[], at: number): 'direct' | 'conversation' | undefined {
  const word = parts[at];
  if (word === undefined || parts.length <= at + 1) return undefined;
  if (DIRECT.has(word)) return 'direct';
  if (CONVERSATION.has(word)) return 'conversation';
  return undefined;
}

/**
 * Reads a host session key: the Python gateway's `agent:main:telegram:dm:<id>`, OpenClaw's
 * `agent:<agent>:<channel>:direct:<peer>` (`session.dmScope: per-channel-peer`) and
 * `agent:<agent>:<channel>:<account>:direct:<peer>` (`per-account-channel-peer`; the account is
 * the bot, not the user), group/channel/thread/topic keys, `cron:<job>` and `hook:<id>`. Words
 * are matched as the hosts write them (lower case). OpenClaw's `per-peer` keys
 * (`agent:<agent>:direct:<peer>`, no channel) and its `main` key (`agent:<agent>:main`, one for
 * every direct chat) name no single platform user and are refused, as is every other shape.
 */
export function classifySessionKey(sessionKey: string): SessionKeyMeaning {
  if (sessionKey.length > MAX_SESSION_KEY_LENGTH) {
    return refused('<too long>', `session key is ${sessionKey.length} characters long; keys longer than ${MAX_SESSION_KEY_LENGTH} are refused`);
  }
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it refuses
  if (/[\u0000-\u001f\u007f\p{Cf}\u2028\u2029]/u.test(sessionKey)) {
    return refused('<unprintable>', 'session key contains control or invisible characters; refused');
  }
  const parts = sessionKey.split(':');
  const [head, agent] = parts;
  if ((head === 'cron' || head === 'hook') && parts.length >= 2 && parts.slice(1).every((part) => part !== '')) {
    return { kind: 'conversation', shape: `${head}:<id>` };
  }
  if (head !== 'agent' || !agent) return unknownShape(parts);
  if (parts.length === 3 && parts[2] !== '') {
    return refused(
      'agent:<agent>:<main key>',
      "session key agent:<agent>:<main key> is the one session every direct chat shares (OpenClaw's session.dmScope: " +
        `main, its default), so Berth cannot tell whose sandbox the command belongs to; ${PER_CHANNEL_PEER_FIX}`,
    );
  }
  if (DIRECT.has(parts[2] ?? '')) {
    return refused(
      `agent:<agent>:${parts[2]}:<peer>`,
      `session key agent:<agent>:${parts[2]}:<peer> names the sender but not the channel (OpenClaw's session.dmScope: ` +
        `per-peer), so Berth cannot tell which platform user it is; ${PER_CHANNEL_PEER_FIX}`,
    );
  }
  const channel = parts[2] ?? '';
  if (!PLATFORM_NAME_PATTERN.test(channel)) return unknownShape(parts);
  for (const at of [3, 4]) {
    // At 4 the word follows an account: OpenClaw's per-account keys (the account is the bot).
    if (at === 4 && !parts[3]) break;
    const marker = markerAt(parts, at);
    if (marker === undefined) continue;
    const rest = parts.slice(at + 1);
    const account = at === 4 ? ':<account>' : '';
    if (rest[0] === '') return unknownShape(parts);
    if (marker === 'conversation') return { kind: 'conversation', shape: `agent:<agent>:${channel}${account}:${parts[at]}:<id>` };
    return { kind: 'user', platform: channel, peer: rest.join(':'), shape: `agent:<agent>:${channel}${account}:${parts[at]}:<peer>` };
  }
  return unknownShape(parts);
}
