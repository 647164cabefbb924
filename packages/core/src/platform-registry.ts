import { IdentityCollisionError, IdentityError, UnknownPlatformError } from './errors.js';
import { assertPlatformName, formatIdentity, truncateForMessage, type Identity } from './identity.js';
import {
  assertBasicIdShape,
  assertPlatformAdapter,
  createGenericAdapter,
  ENV_FORM_PATTERN,
  FOLDER_FORM_PATTERN,
  type PlatformAdapter,
} from './platform-adapter.js';

/** Options of {@link createPlatformRegistry}. */
export interface PlatformRegistryOptions {
  /** Adapters to register at once. */
  readonly adapters?: readonly PlatformAdapter[];
  /**
   * Whether platforms without a registered adapter get the generic adapter.
   * @default true
   */
  readonly genericFallback?: boolean;
  /**
   * The platforms without a registered adapter that get the generic adapter, by name; any other
   * is refused, naming the known ones (a gateway's `terminal.generic_platforms`: a mistyped
   * platform never makes a new person). When given, `genericFallback` is not looked at.
   */
  readonly genericPlatforms?: readonly string[];
}

/**
 * The platform adapters a gateway knows, wrapped so that whatever an adapter returns is checked:
 * ids must be well formed, folder and env forms must match their patterns, and two identities
 * that map to one folder or one env form are refused (`IdentityCollisionError`) instead of
 * sharing a sandbox.
 */
export interface PlatformRegistry {
  /** Registers an adapter; throws if its platform or an alias is taken. */
  register(adapter: PlatformAdapter): void;
  /** The adapter for a platform name or alias (the generic one when allowed). */
  adapterFor(platform: string): PlatformAdapter;
  /** Whether a dedicated adapter is registered for `platform`. */
  has(platform: string): boolean;
  /** The platforms with a dedicated adapter. */
  platforms(): string[];
  /** Resolves a raw sender on a platform into a canonical identity. */
  resolve(platform: string, rawSender: unknown): Identity;
  /** Parses `platform:id` (aliases allowed) into a canonical identity. */
  parse(value: string): Identity;
  /** The folder name of an identity: `platform@folderform`. */
  folderName(identity: Identity): string;
  /** The env form of an identity's id: `[0-9A-Z]+`. */
  envName(identity: Identity): string;
  /** The variable-name segment of a platform, e.g. `TELEGRAM`. */
  envPlatform(platform: string): string;
}

/** Creates a registry; see {@link PlatformRegistry}. */
export function createPlatformRegistry(options: PlatformRegistryOptions = {}): PlatformRegistry {
  const adapters = new Map<string, PlatformAdapter>();
  const aliases = new Map<string, string>();
  const generic = new Map<string, PlatformAdapter>();
  const genericFallback = options.genericFallback ?? true;
  const genericPlatforms = options.genericPlatforms === undefined ? undefined : new Set(options.genericPlatforms.map((name) => name.toLowerCase()));
  // Every (platform, form) -> canonical id seen in this process: a second id with the same form
  // is a collision in the adapter, and refused rather than given the first one's sandbox.
  const seenFolders = new Map<string, string>();
  const seenEnvNames = new Map<string, string>();

  const canonicalPlatform = (platform: string): string => {
    const lower = platform.toLowerCase();
    return aliases.get(lower) ?? lower;
  };

  const adapterFor = (platform: string): PlatformAdapter => {
    const name = canonicalPlatform(platform);
    const adapter = adapters.get(name);
    if (adapter) return adapter;
    assertPlatformName(name);
    if (genericPlatforms !== undefined ? !genericPlatforms.has(name) : !genericFallback) {
      const known = [...adapters.values()]
        .map((known) => (known.aliases?.length ? `${known.platform} (${known.aliases.join(', ')})` : known.platform))
        .concat([...(genericPlatforms ?? [])])
        .join(', ');
      throw new UnknownPlatformError(
        name,
        `no adapter knows the platform ${JSON.stringify(name)} (known: ${known || 'none'}); check its spelling, or, ` +
          `for a platform without an adapter of its own, add ${name} to terminal.generic_platforms (or its adapter to terminal.platform_adapters)`,
      );
    }
    let fallback = generic.get(name);
    if (!fallback) {
      fallback = createGenericAdapter({ platform: name });
      generic.set(name, fallback);
    }
    return fallback;
  };

  const remember = (seen: Map<string, string>, key: string, identity: Identity, what: string): void => {
    const previous = seen.get(key);
    if (previous === undefined) {
      seen.set(key, identity.id);
    } else if (previous !== identity.id) {
      throw new IdentityCollisionError(
        `the ${identity.platform} adapter gives ${JSON.stringify(truncateForMessage(identity.id))} and ` +
          `${JSON.stringify(truncateForMessage(previous))} the same ${what}; refused so they never share a sandbox — ` +
          `fix the adapter's ${what === 'folder' ? 'folderName' : 'envName'}()`,
      );
    }
  };

  const registry: PlatformRegistry = {
    register(adapter) {
      assertPlatformAdapter(adapter);
      const names = [adapter.platform, ...(adapter.aliases ?? [])].map((name) => name.toLowerCase());
      for (const name of names) {
        assertPlatformName(name);
        if (adapters.has(name) || aliases.has(name)) {
          throw new IdentityError(name, `platform ${JSON.stringify(name)} already has an adapter; register each platform once`);
        }
      }
      adapters.set(adapter.platform, adapter);
      for (const alias of adapter.aliases ?? []) aliases.set(alias.toLowerCase(), adapter.platform);
    },
    adapterFor,
    has: (platform) => adapters.has(canonicalPlatform(platform)),
    platforms: () => [...adapters.keys()],
    resolve(platform, rawSender) {
      const adapter = adapterFor(platform);
      const id = adapter.normalize(rawSender);
      if (typeof id !== 'string') {
        throw new IdentityError(adapter.platform, `the ${adapter.platform} adapter returned a ${typeof id} as a canonical id; it must return a string`);
      }
      assertBasicIdShape(adapter.platform, id);
      return { platform: adapter.platform, id };
    },
    parse(value) {
      const colon = value.indexOf(':');
      if (colon <= 0) {
        throw new IdentityError('', `identity ${JSON.stringify(truncateForMessage(value))} is not of the form platform:id; write it like telegram:123456789`);
      }
      return registry.resolve(value.slice(0, colon), value.slice(colon + 1));
    },
    folderName(identity) {
      const adapter = adapterFor(identity.platform);
      const form = adapter.folderName(identity.id);
      if (typeof form !== 'string' || !FOLDER_FORM_PATTERN.test(form)) {
        throw new IdentityError(
          adapter.platform,
          `the ${adapter.platform} adapter gave ${formatIdentity(identity)} the folder form ${JSON.stringify(truncateForMessage(String(form)))}, ` +
            `which is not a safe file name (${FOLDER_FORM_PATTERN}); fix the adapter`,
        );
      }
      remember(seenFolders, `${adapter.platform}@${form.toLowerCase()}`, identity, 'folder');
      return `${adapter.platform}@${form}`;
    },
    envName(identity) {
      const adapter = adapterFor(identity.platform);
      const form = adapter.envName(identity.id);
      if (typeof form !== 'string' || !ENV_FORM_PATTERN.test(form)) {
        throw new IdentityError(
          adapter.platform,
          `the ${adapter.platform} adapter gave ${formatIdentity(identity)} the env form ${JSON.stringify(truncateForMessage(String(form)))}; ` +
            'env forms must be upper-case letters and digits only (no "_"), fix the adapter',
        );
      }
      remember(seenEnvNames, `${adapter.platform}_${form}`, identity, 'env form');
      return form;
    },
    envPlatform: (platform) => canonicalPlatform(platform).toUpperCase(),
  };
  for (const adapter of options.adapters ?? []) registry.register(adapter);
  return registry;
}
