import { createHash } from 'node:crypto';

/*
 * The two encodings that turn arbitrary ids into names Berth can use safely.
 *
 * Both are prefix-free codes over the id's UTF-8 bytes, so they are injective by construction:
 * two different ids can never produce the same name. Both keep the characters that are common
 * in real ids as they are, so `123456789` stays `123456789`.
 *
 * They are part of Berth's on-disk and in-environment contract: changing them moves users'
 * files and breaks operators' variables. The golden vectors in `encode-name.golden.test.ts`
 * pin them.
 */

const HEX = '0123456789ABCDEF';
const utf8 = new TextEncoder();

/** Longest folder component before the readable part is cut and a hash appended. */
export const MAX_FOLDER_COMPONENT = 120;

function isFolderSafeByte(byte: number): boolean {
  return (
    (byte >= 0x61 && byte <= 0x7a) || // a-z
    (byte >= 0x30 && byte <= 0x39) || // 0-9
    byte === 0x2b || // +
    byte === 0x2d || // -
    byte === 0x2e || // .
    byte === 0x5f // _
  );
}

/**
 * Encodes any string as a file-name component: `[a-z0-9+._-]` stay (but a leading `._-`), every other byte (upper
 * case letters included, so that the name is also unique on case-insensitive file systems)
 * becomes `%XX`. Names longer than {@link MAX_FOLDER_COMPONENT} keep a readable head and end
 * in `~` and the SHA-256 of the id, which no unhashed name contains.
 */
export function encodeFolderComponent(value: string): string {
  let out = '';
  for (const byte of utf8.encode(value)) {
    // A leading `.`, `-` or `_` is escaped too: no form is `.`, `..`, hidden, or looks like an option.
    const keep = isFolderSafeByte(byte) && (out.length > 0 || (byte !== 0x2e && byte !== 0x2d && byte !== 0x5f));
    out += keep ? String.fromCharCode(byte) : `%${HEX[byte >> 4]}${HEX[byte & 15]}`;
    if (out.length > MAX_FOLDER_COMPONENT) break;
  }
  if (out.length <= MAX_FOLDER_COMPONENT) return out;
  const digest = createHash('sha256').update(value, 'utf8').digest('hex');
  return `${out.slice(0, MAX_FOLDER_COMPONENT - 65).replace(/%[0-9A-F]?$/, '')}~${digest}`;
}

function isEnvSafeByte(byte: number): boolean {
  return (byte >= 0x30 && byte <= 0x39) || (byte >= 0x61 && byte <= 0x79); // 0-9, a-y
}

/**
 * Encodes any string as the id part of a variable name, using only `[0-9A-Z]` and never `_`,
 * so the first `_` after the id always ends it: digits stay, `a`-`y` become upper case, every
 * other byte (upper case letters, `z`, punctuation, Unicode) becomes `Z` and two hex digits.
 * `ab-cd` is `ABZ2DCD`; `AB` is `Z41Z42`, distinct from `ab`.
 */
export function encodeEnvComponent(value: string): string {
  let out = '';
  for (const byte of utf8.encode(value)) {
    out += isEnvSafeByte(byte) ? String.fromCharCode(byte).toUpperCase() : `Z${HEX[byte >> 4]}${HEX[byte & 15]}`;
  }
  return out;
}

/** Inverse of {@link encodeEnvComponent}; `undefined` when `form` is not an encoding of any string. */
export function decodeEnvComponent(form: string): string | undefined {
  const bytes: number[] = [];
  for (let index = 0; index < form.length; index++) {
    const char = form[index]!;
    if (char === 'Z') {
      const hex = form.slice(index + 1, index + 3);
      if (!/^[0-9A-F]{2}$/.test(hex)) return undefined;
      const byte = Number.parseInt(hex, 16);
      if (isEnvSafeByte(byte)) return undefined; // not canonical: that byte is written as itself
      bytes.push(byte);
      index += 2;
    } else if (/[0-9A-Y]/.test(char)) {
      bytes.push(char.toLowerCase().charCodeAt(0));
    } else {
      return undefined;
    }
  }
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(new Uint8Array(bytes));
  } catch {
    return undefined;
  }
}

/** Short, stable hex digest used where a name must be bounded and unique (container names). */
export function shortDigest(value: string, length = 16): string {
  return createHash('sha256').update(value, 'utf8').digest('hex').slice(0, length);
}
