import { encodeEnvComponent, encodeFolderComponent, decodeEnvComponent } from './encode-name.js';
import { IdentityError, UnsupportedSpecificationError } from './errors.js';
import { assertPlatformName, truncateForMessage, UNPRINTABLE_CHARACTERS, type Identity } from './identity.js';

/**
 * The contract a platform adapter implements (v1). An adapter knows one messaging platform's
 * ids: it turns what a host hands over as the sender into the canonical id, refuses senders
 * that are not users, and names the id's folder and variable forms.
 *
 * Core wraps every adapter (see `createPlatformRegistry`) and checks what it returns, so a
 * faulty third-party adapter can never produce an unsafe folder or an ambiguous variable.
 */
export interface PlatformAdapterV1 {
  readonly specificationVersion: 'v1';
  /** Platform name, e.g. `telegram`: a lower-case letter, then lower-case letters and digits. */
  readonly platform: string;
  /** Other spellings of the platform accepted in `platform:id` strings, e.g. `tg`. */
  readonly aliases?: readonly string[];
  /**
   * Turns a raw sender (a string, a number, or a platform update object) into the canonical
   * id, or throws `IdentityError` saying why it is not a user. Must be idempotent:
   * `normalize(normalize(x)) === normalize(x)`.
   */
  normalize(rawSender: unknown): string;
  /**
   * The folder form of a canonical id: a non-empty file-name component. Core prefixes it with
   * the platform and checks it. Must be injective over canonical ids and stable across releases.
   */
  folderName(id: string): string;
  /**
   * The env form of a canonical id: `[0-9A-Z]+`, never `_`. Must be injective over canonical
   * ids, so that `{PREFIX}_{PLATFORM}_{ENVFORM}_{VAR}` names exactly one user.
   */
  envName(id: string): string;
  /**
   * The canonical id an env form stands for, or `undefined` when `form` is not the env form of
   * any canonical id. Core uses it to refuse variables that name nobody.
   */
  idFromEnvName(form: string): string | undefined;
}

/** The adapter contract versions this release understands. */
export type PlatformAdapter = PlatformAdapterV1;

/** Env forms: upper-case letters and digits only, so the `_` after them is unambiguous. */
export const ENV_FORM_PATTERN = /^[0-9A-Z]{1,4096}$/;
/** Folder forms an adapter may return (core prefixes `platform@`). */
export const FOLDER_FORM_PATTERN = /^[A-Za-z0-9+%=~][A-Za-z0-9+%=~._-]{0,199}$/;

/** Throws unless `adapter` implements a contract version this release knows. */
export function assertPlatformAdapter(adapter: unknown): asserts adapter is PlatformAdapter {
  const candidate = adapter as Partial<PlatformAdapterV1> | null;
  if (!candidate || typeof candidate !== 'object') {
    throw new IdentityError('', 'a platform adapter must be an object; pass the result of an adapter factory such as createTelegramAdapter()');
  }
  if (candidate.specificationVersion !== 'v1') {
    throw new UnsupportedSpecificationError(`platform adapter ${String(candidate.platform)}`, candidate.specificationVersion);
  }
  assertPlatformName(String(candidate.platform));
  for (const method of ['normalize', 'folderName', 'envName', 'idFromEnvName'] as const) {
    if (typeof candidate[method] !== 'function') {
      throw new IdentityError(
        String(candidate.platform),
        `platform adapter ${candidate.platform} has no ${method}() method; it does not implement the v1 contract`,
      );
    }
  }
}

/** Refuses the values no adapter may accept as an id, whatever its platform. */
export function assertBasicIdShape(platform: string, id: string): void {
  if (id.length === 0) throw new IdentityError(platform, `empty ${platform} user id; the host must pass the sender's id`);
  if (id.length > 256) {
    throw new IdentityError(platform, `${platform} user id is ${id.length} characters long; ids longer than 256 characters are refused`);
  }
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it refuses
  if (/[\u0000-\u001f\u007f]/.test(id)) {
    throw new IdentityError(platform, `${platform} user id ${JSON.stringify(truncateForMessage(id))} contains control characters; refused`);
  }
  // Invisible, bidi-control and line-separator characters would make two ids look alike in every
  // listing, or reorder the line they are printed in.
  if (UNPRINTABLE_CHARACTERS.test(id)) {
    throw new IdentityError(
      platform,
      `${platform} user id ${JSON.stringify(truncateForMessage(id))} contains invisible, bidi-control or line-separator characters; refused`,
    );
  }
  if (id.isWellFormed && !id.isWellFormed()) {
    throw new IdentityError(platform, `${platform} user id contains a lone surrogate (not valid Unicode); refused`);
  }
}

/** Options of {@link createGenericAdapter}. */
export interface GenericAdapterOptions {
  /** The platform name, e.g. `signal` or `discord`. */
  readonly platform: string;
}

/**
 * The adapter for platforms without a dedicated one. Any non-empty id of up to 256 characters
 * without control characters is a user; the id is kept exactly (case matters), its folder form
 * escapes everything but `[a-z0-9+._-]` and its env form uses the `Z`-hex escape, so `ab-cd`
 * and `AB-CD` and `ab_cd` stay three users with three folders and three variable prefixes.
 */
export function createGenericAdapter(options: GenericAdapterOptions): PlatformAdapterV1 {
  const platform = options.platform.toLowerCase();
  assertPlatformName(platform);
  const normalize = (rawSender: unknown): string => {
    const id = typeof rawSender === 'number' && Number.isSafeInteger(rawSender) ? String(rawSender) : rawSender;
    if (typeof id !== 'string') {
      throw new IdentityError(platform, `${platform} sender must be a string or a safe integer, got ${rawSender === null ? 'null' : typeof rawSender}`);
    }
    // Nothing is folded (no case folding, no Unicode normalisation): for a platform Berth does
    // not know, two spellings may well be two people, and merging them would share a sandbox.
    assertBasicIdShape(platform, id);
    // The folder form is safe whatever the id (it escapes every byte that could be a path), but an
    // id that reads as a path is an operator's or a host's mistake: refused on every platform.
    if (id === '.' || id === '..' || /[/\\]/.test(id)) {
      throw new IdentityError(
        platform,
        `${platform} user id ${JSON.stringify(truncateForMessage(id))} reads as a path (".", ".." or a slash); no platform's user ids do, so it is refused`,
      );
    }
    return id;
  };
  return {
    specificationVersion: 'v1',
    platform,
    normalize,
    folderName: (id) => encodeFolderComponent(id),
    envName: (id) => encodeEnvComponent(id),
    idFromEnvName: (form) => {
      const id = decodeEnvComponent(form);
      if (id === undefined) return undefined;
      try {
        return normalize(id) === id ? id : undefined;
      } catch {
        return undefined;
      }
    },
  };
}

export type { Identity };
