import { IdentityError } from './errors.js';

/** A messaging user: the platform and the adapter's canonical id on it. */
export interface Identity {
  /** Platform name, lower case, e.g. `telegram`. */
  readonly platform: string;
  /** The canonical id the platform adapter produced, e.g. `123456789` or `+1234567890`. */
  readonly id: string;
}

/** Platform names: a lower-case letter, then lower-case letters and digits (no `_`, no `-`). */
export const PLATFORM_NAME_PATTERN = /^[a-z][a-z0-9]{0,31}$/;

/** Formats an identity as `platform:id`, e.g. `telegram:123456789`. */
export function formatIdentity(identity: Identity): string {
  return `${identity.platform}:${identity.id}`;
}

/** Throws unless `platform` is a valid platform name. */
export function assertPlatformName(platform: string): void {
  if (!PLATFORM_NAME_PATTERN.test(platform)) {
    throw new IdentityError(
      platform,
      `platform name ${JSON.stringify(truncateForMessage(platform))} is invalid; ` +
        'use a lower-case letter followed by up to 31 lower-case letters or digits, e.g. telegram',
    );
  }
}

/**
 * Characters that print as nothing, reorder the text around them or break the line: controls,
 * format characters (zero-width, bidi overrides such as U+202E) and the line and paragraph
 * separators. No id may hold them, and nothing Berth prints shows them raw.
 */
export const UNPRINTABLE_CHARACTERS = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/u;

/** `value` with every {@link UNPRINTABLE_CHARACTERS unprintable character} written as `\u{…}`, so a table or a log line shows exactly what is there. */
export function escapeForDisplay(value: string): string {
  return value.replace(new RegExp(UNPRINTABLE_CHARACTERS.source, 'gu'), (char) => `\\u{${char.codePointAt(0)!.toString(16).toUpperCase()}}`);
}

/** Cuts a user-supplied value so that a message stays one readable line. */
export function truncateForMessage(value: string, max = 60): string {
  const printable = escapeForDisplay(value);
  return printable.length > max ? `${printable.slice(0, max)}… (${value.length} characters)` : printable;
}

/** Describes a user-supplied value in a one-line message: strings quoted and cut, others by kind. */
export function describeForMessage(value: unknown): string {
  if (value === null) return 'null';
  if (value === undefined) return 'nothing (undefined)';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'string') return JSON.stringify(truncateForMessage(value));
  if (typeof value === 'number' || typeof value === 'bigint') return truncateForMessage(String(value));
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}
