import { ConfigError, IdentityError, truncateForMessage, type PlatformAdapterV1 } from '@berth/core';
import { z } from 'zod';

/** Options of {@link createSignalAdapter}. */
export interface SignalAdapterOptions {
  /**
   * Whether phone numbers are accepted as ids. Signal can hide a person's number, so a host
   * that always has the account's ACI (UUID) can turn this off and never split one person into
   * a UUID sandbox and a number sandbox.
   * @default true
   */
  readonly allowPhoneNumbers?: boolean;
}

const signalAdapterOptionsSchema = z.strictObject({ allowPhoneNumbers: z.boolean().default(true) }).default({ allowPhoneNumbers: true });

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const NIL_UUID = '00000000-0000-0000-0000-000000000000';
/** E.164 digits: no leading 0, 7 to 15 digits. */
const PHONE_DIGITS = /^[1-9][0-9]{6,14}$/;

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (value === undefined) return 'nothing (undefined)';
  if (typeof value === 'string') return JSON.stringify(truncateForMessage(value));
  if (typeof value === 'number' || typeof value === 'bigint') return truncateForMessage(String(value));
  return Array.isArray(value) ? 'an array' : typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}

/**
 * Creates the Signal platform adapter (`signal`). A Signal user is named by their ACI, a UUID
 * (accepted in any case, canonical in lower case: `a1b2c3d4-...`), or by a phone number
 * (canonical E.164: `+447700900123`). Folder forms are the canonical ids; env forms are the
 * UUID's 32 hex digits in upper case, or the phone number's digits, so `ab-cd`-style ids never
 * meet the `_`-prefix trap and ids differing only in case are one user.
 */
export function createSignalAdapter(options?: SignalAdapterOptions): PlatformAdapterV1 {
  const parsed = signalAdapterOptionsSchema.safeParse(options);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const key = ['createSignalAdapter', ...issue.path.map(String)].join('.');
    throw new ConfigError(key, `${key}: ${issue.message}; the only option is allowPhoneNumbers (a boolean)`);
  }
  const { allowPhoneNumbers } = parsed.data;
  const refuse = (message: string): IdentityError => new IdentityError('signal', message);

  const fromString = (value: string): string => {
    const shown = describe(value);
    if (value.length > 100) throw refuse(`signal sender ${shown} is too long to be a UUID or a phone number`);
    let rest = value.trim();
    const prefix = /^signal:/i.exec(rest);
    if (prefix) rest = rest.slice(prefix[0].length).trim();
    if (/^pni:/i.test(rest)) {
      throw refuse(`signal sender ${shown} is a phone-number identity (PNI), not the account's ACI; pass the sender's ACI (sourceUuid)`);
    }
    rest = rest.replace(/^aci:/i, '');
    if (UUID.test(rest)) {
      const id = rest.toLowerCase();
      if (id === NIL_UUID) throw refuse(`signal sender ${shown} is the nil UUID, which names nobody`);
      return id;
    }
    if (rest.startsWith('+')) {
      const digits = rest.slice(1).replace(/[ -]/g, '');
      if (!PHONE_DIGITS.test(digits)) throw refuse(`signal sender ${shown} is not a phone number in international form (+ then 7 to 15 digits, no leading 0)`);
      if (!allowPhoneNumbers)
        throw refuse(`signal sender ${shown} is a phone number, and this adapter accepts ACIs (UUIDs) only; pass the sender's sourceUuid`);
      return `+${digits}`;
    }
    if (/^[a-z0-9_]{3,32}\.[0-9]{2,9}$/i.test(rest)) {
      throw refuse(`signal sender ${shown} is a username, which its owner can change; pass the sender's ACI (sourceUuid)`);
    }
    throw refuse(`signal sender ${shown} is neither an ACI (a UUID) nor a phone number (+447700900123)`);
  };

  const normalize = (rawSender: unknown): string => {
    if (typeof rawSender === 'string') return fromString(rawSender);
    if (typeof rawSender === 'object' && rawSender !== null && !Array.isArray(rawSender)) {
      // signal-cli's JSON-RPC `receive` envelope: the ACI is stable, the number may be hidden.
      const holder = Object.hasOwn(rawSender, 'envelope') ? (rawSender as { envelope: unknown }).envelope : rawSender;
      if (typeof holder === 'object' && holder !== null) {
        for (const field of ['sourceUuid', 'sourceNumber', 'source']) {
          const value = Object.hasOwn(holder, field) ? (holder as Record<string, unknown>)[field] : undefined;
          if (typeof value === 'string' && value !== '') return fromString(value);
        }
      }
      throw refuse("signal sender object has no envelope source (sourceUuid, sourceNumber or source); pass the sender's ACI");
    }
    throw refuse(`signal sender is ${describe(rawSender)}; expected an ACI (UUID) or a phone number as a string`);
  };

  const canonicalForm = (id: string): { kind: 'uuid' | 'phone'; digits: string } => {
    if (typeof id === 'string' && UUID.test(id) && id === id.toLowerCase() && id !== NIL_UUID) return { kind: 'uuid', digits: id.replace(/-/g, '') };
    if (typeof id === 'string' && id.startsWith('+') && PHONE_DIGITS.test(id.slice(1)) && allowPhoneNumbers) return { kind: 'phone', digits: id.slice(1) };
    throw refuse(`signal id ${describe(id)} is not canonical; normalize() the sender first`);
  };

  return {
    specificationVersion: 'v1',
    platform: 'signal',
    normalize,
    folderName: (id) => {
      canonicalForm(id); // throws for an id that is not canonical
      return id;
    },
    // 32 hex digits for a UUID, at most 15 digits for a number: the two kinds never meet.
    envName: (id) => canonicalForm(id).digits.toUpperCase(),
    idFromEnvName: (form) => {
      if (/^[0-9A-F]{32}$/.test(form)) {
        const hex = form.toLowerCase();
        const id = `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
        return id === NIL_UUID ? undefined : id;
      }
      return allowPhoneNumbers && PHONE_DIGITS.test(form) ? `+${form}` : undefined;
    },
  };
}
