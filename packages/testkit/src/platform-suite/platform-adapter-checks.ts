import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  assertBasicIdShape,
  assertPlatformAdapter,
  createPlatformRegistry,
  createSandboxResolver,
  ENV_FORM_PATTERN,
  FOLDER_FORM_PATTERN,
  IdentityError,
  parseTerminalConfig,
  type PlatformAdapterV1,
} from '@berth/core';
import fc from 'fast-check';
import { expect } from 'vitest';
import { HOSTILE_SENDERS } from './hostile-senders.js';
import type { PlatformAdapterInvalidVector, PlatformAdapterVectors, PlatformAdapterValidVector, TestPlatformAdapterOptions } from '../test-platform-adapter.js';

/** The longest refusal message the suite accepts: a message names the value, truncated, in one line. */
const MAX_MESSAGE_LENGTH = 600;
const PREFIX = 'HERMES_USER';

/** A short, printable label of any raw sender, for test names and failure messages. */
export function sampleLabel(raw: unknown): string {
  let text: string;
  try {
    text =
      typeof raw === 'string'
        ? JSON.stringify(raw)
        : typeof raw === 'bigint'
          ? `${raw}n`
          : raw === undefined
            ? 'undefined'
            : typeof raw === 'function'
              ? 'a function'
              : (JSON.stringify(raw, (_key, value: unknown) => (typeof value === 'bigint' ? `${value}n` : value)) ?? String(raw));
  } catch {
    text = Object.prototype.toString.call(raw);
  }
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it replaces
  text = text.replace(/[\u0000-\u001f\u007f]/g, '?');
  return text.length > 70 ? `${text.slice(0, 70)}… (${text.length} characters)` : text;
}

/** Outcome of normalising one raw sender. */
type Outcome = { ok: true; id: string } | { ok: false; error: unknown };

function attempt(adapter: PlatformAdapterV1, raw: unknown): Outcome {
  try {
    return { ok: true, id: adapter.normalize(raw) };
  } catch (error) {
    return { ok: false, error };
  }
}

/**
 * Whether `error` is core's IdentityError. Checked by name and code as well as by class, so an
 * adapter that resolves its own copy of @berth/core (another version, or its sources) still passes.
 */
function isIdentityError(error: unknown): error is IdentityError {
  return (
    error instanceof IdentityError ||
    (error instanceof Error && error.name === 'IdentityError' && (error as Partial<IdentityError>).code === 'IDENTITY_INVALID')
  );
}

/** Asserts that `error` is a refusal a user can read: an IdentityError, one line, bounded. */
function expectRefusal(error: unknown, raw: unknown, reason?: RegExp): void {
  if (!isIdentityError(error)) {
    throw new Error(
      `normalize(${sampleLabel(raw)}) threw ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)}; ` +
        'it must throw IdentityError (from @berth/core) for every sender it refuses',
    );
  }
  expect(error.message, `refusal of ${sampleLabel(raw)} must be one line`).not.toMatch(/[\r\n]/);
  expect(error.message.length, `refusal of ${sampleLabel(raw)} must stay short (it may name a truncated value, never the whole input)`).toBeLessThanOrEqual(
    MAX_MESSAGE_LENGTH,
  );
  if (reason) expect(error.message, `refusal of ${sampleLabel(raw)}`).toMatch(reason);
}

/** Raw senders for the property tests: hostile strings and numbers, the vectors and mutations of their ids. */
function senderArbitrary(adapter: PlatformAdapterV1, vectors: PlatformAdapterVectors, extra?: fc.Arbitrary<unknown>): fc.Arbitrary<unknown> {
  const ids = vectors.valid.map((vector) => vector.id);
  const names = [adapter.platform, ...(adapter.aliases ?? [])];
  const idLike = fc.constantFrom(...ids);
  const tail = fc.oneof(fc.stringMatching(/^[0-9]{1,4}$/), fc.stringMatching(/^[-_.a-zA-Z0-9]{1,4}$/), fc.string({ maxLength: 4 }));
  const sources: fc.Arbitrary<unknown>[] = [
    fc.string({ maxLength: 40 }),
    fc.string({ unit: 'grapheme', maxLength: 20 }),
    fc.string({ unit: 'binary', maxLength: 20 }),
    fc.stringMatching(/^[0-9]{1,20}$/),
    fc.stringMatching(/^\+[0-9]{1,17}$/),
    fc.stringMatching(/^-?[0-9]{1,16}$/),
    fc.uuid().chain((uuid) =>
      fc.constantFrom(
        uuid,
        uuid.toUpperCase(),
        uuid.replace(/[a-f]/, (c) => c.toUpperCase()),
      ),
    ),
    fc.integer(),
    fc.maxSafeNat(),
    fc.double(),
    fc.bigInt({ min: -(2n ** 70n), max: 2n ** 70n }),
    fc.constantFrom(...HOSTILE_SENDERS),
    fc.constantFrom(...vectors.valid.map((vector) => vector.raw), ...vectors.invalid.map((vector) => vector.raw)),
    idLike,
    // Ids that extend, or differ in case from, a real one: the shapes of the prefix-match trap.
    fc.tuple(idLike, tail).map(([id, suffix]) => id + suffix),
    fc.tuple(tail, idLike).map(([prefix, id]) => prefix + id),
    idLike.map((id) => id.toUpperCase()),
    idLike.map((id) => id.toLowerCase()),
    fc.tuple(fc.constantFrom(...names), idLike).map(([name, id]) => `${name}:${id}`),
    fc.anything({ maxDepth: 2 }),
  ];
  if (extra) sources.push(extra, extra);
  return fc.oneof(...sources);
}

// The resolver only computes paths: nothing is created under this folder.
function configFor() {
  return parseTerminalConfig({ sandbox_dir: path.join(tmpdir(), 'berth-testkit-never-created') });
}

/** The checks {@link testPlatformAdapter} registers, each a function that throws on failure. */
export interface PlatformAdapterChecks {
  readonly platform: string;
  contract(): void;
  vectorTable(): void;
  validVector(vector: PlatformAdapterValidVector): void;
  invalidVector(vector: PlatformAdapterInvalidVector): void;
  arbitrarySenders(): void;
  arbitraryEnvForms(): void;
  resolverIsolation(): void;
}

/**
 * Builds the checks of the platform-adapter suite. They are plain functions, so the suite's own
 * tests can run them against deliberately broken adapters and see them fail.
 */
export function platformAdapterChecks(options: TestPlatformAdapterOptions): PlatformAdapterChecks {
  const adapter = typeof options.adapter === 'function' ? options.adapter() : options.adapter;
  const { vectors } = options;
  const numRuns = options.numRuns ?? 200;
  const platform = String((adapter as Partial<PlatformAdapterV1> | undefined)?.platform);
  const newRegistry = () => createPlatformRegistry({ adapters: [adapter], genericFallback: false });
  let senders: fc.Arbitrary<unknown> | undefined;
  const sendersOnce = () => (senders ??= senderArbitrary(adapter, vectors, options.senders));

  return {
    platform,

    contract() {
      assertPlatformAdapter(adapter);
      const registry = newRegistry();
      expect(registry.adapterFor(adapter.platform)).toBe(adapter);
      for (const alias of adapter.aliases ?? []) expect(registry.adapterFor(alias), `alias ${alias}`).toBe(adapter);
      expect(registry.envPlatform(adapter.platform)).toMatch(/^[A-Z][A-Z0-9]*$/);
    },

    vectorTable() {
      expect(new Set(vectors.valid.map((vector) => vector.id)).size, 'distinct ids among vectors.valid').toBeGreaterThanOrEqual(2);
      expect(vectors.invalid.length, 'vectors.invalid').toBeGreaterThanOrEqual(1);
    },

    validVector(vector) {
      const id = adapter.normalize(vector.raw);
      expect(id, `normalize(${sampleLabel(vector.raw)})`).toBe(vector.id);
      expect(adapter.normalize(id), `normalize is idempotent on ${JSON.stringify(id)}`).toBe(id);
      const registry = newRegistry();
      const identity = registry.resolve(adapter.platform, vector.raw);
      expect(identity).toEqual({ platform: adapter.platform, id: vector.id });
      // The config syntax (identity links, `berth env --user`) writes ids as platform:id.
      for (const name of [adapter.platform, ...(adapter.aliases ?? [])]) {
        expect(registry.parse(`${name}:${id}`), `${name}:${id}`).toEqual(identity);
      }
      const folder = adapter.folderName(id);
      const env = adapter.envName(id);
      if (vector.folder !== undefined) expect(folder, `folderName(${JSON.stringify(id)})`).toBe(vector.folder);
      if (vector.env !== undefined) expect(env, `envName(${JSON.stringify(id)})`).toBe(vector.env);
      expect(registry.folderName(identity)).toBe(`${adapter.platform}@${folder}`);
      expect(registry.envName(identity)).toBe(env);
      expect(adapter.idFromEnvName(env), `idFromEnvName(${JSON.stringify(env)})`).toBe(id);
    },

    invalidVector(vector) {
      const outcome = attempt(adapter, vector.raw);
      if (outcome.ok) throw new Error(`normalize(${sampleLabel(vector.raw)}) returned ${JSON.stringify(outcome.id)}; it must refuse this sender`);
      expectRefusal(outcome.error, vector.raw, vector.reason);
      const throughRegistry = (() => {
        try {
          newRegistry().resolve(adapter.platform, vector.raw);
          return undefined;
        } catch (error) {
          return error;
        }
      })();
      expect(isIdentityError(throughRegistry), `the registry refuses ${sampleLabel(vector.raw)} with IdentityError`).toBe(true);
    },

    arbitrarySenders() {
      const folders = new Map<string, string>();
      const envForms = new Map<string, string>();
      const check = (raw: unknown): void => {
        const outcome = attempt(adapter, raw);
        if (!outcome.ok) {
          expectRefusal(outcome.error, raw);
          return;
        }
        const id = outcome.id;
        expect(typeof id, `normalize(${sampleLabel(raw)}) must return a string`).toBe('string');
        assertBasicIdShape(adapter.platform, id);
        expect(adapter.normalize(id), `normalize is idempotent: normalize(normalize(${sampleLabel(raw)}))`).toBe(id);
        const folder = adapter.folderName(id);
        expect(folder, `folderName(${JSON.stringify(id)})`).toMatch(FOLDER_FORM_PATTERN);
        const unsafe = folder === '.' || folder === '..' || folder.includes('/') || folder.includes('\\') || folder.includes('\0');
        expect(unsafe, `folderName(${JSON.stringify(id)}) = ${JSON.stringify(folder)} must be one plain path component`).toBe(false);
        const env = adapter.envName(id);
        expect(env, `envName(${JSON.stringify(id)})`).toMatch(ENV_FORM_PATTERN);
        expect(adapter.idFromEnvName(env), `idFromEnvName(envName(${JSON.stringify(id)}))`).toBe(id);
        // Case-insensitive: on macOS and Windows file systems two such folders are one sandbox.
        const folderKey = folder.toLowerCase();
        const folderOwner = folders.get(folderKey);
        if (folderOwner !== undefined && folderOwner !== id) {
          throw new Error(
            `ids ${JSON.stringify(folderOwner)} and ${JSON.stringify(id)} share the folder form ` +
              `${JSON.stringify(folder)} (compared case-insensitively): two users would share a sandbox`,
          );
        }
        folders.set(folderKey, id);
        const envOwner = envForms.get(env);
        if (envOwner !== undefined && envOwner !== id) {
          throw new Error(
            `ids ${JSON.stringify(envOwner)} and ${JSON.stringify(id)} share the env form ${JSON.stringify(env)}: one user's variables would reach the other`,
          );
        }
        envForms.set(env, id);
      };
      // The known-hostile senders and the vectors are tried every time, not only when drawn.
      for (const raw of [...vectors.valid.map((vector) => vector.raw), ...HOSTILE_SENDERS, ...vectors.invalid.map((vector) => vector.raw)]) check(raw);
      fc.assert(fc.property(sendersOnce(), check), { numRuns, includeErrorInReport: true });
    },

    arbitraryEnvForms() {
      const forms = fc.oneof(
        fc.stringMatching(/^[0-9A-Z]{1,40}$/),
        fc.stringMatching(/^[0-9]{1,20}$/),
        fc.string({ maxLength: 40 }),
        fc
          .constantFrom(...vectors.valid.map((vector) => adapter.envName(vector.id)))
          .chain((form) => fc.constantFrom(form, `0${form}`, `${form}0`, form.toLowerCase(), `${form}Z5F`, form.slice(1))),
      );
      fc.assert(
        fc.property(forms, (form) => {
          let id: string | undefined;
          try {
            id = adapter.idFromEnvName(form);
          } catch (error) {
            throw new Error(`idFromEnvName(${JSON.stringify(form)}) threw (${(error as Error).message}); it must return undefined for forms that name nobody`);
          }
          if (id === undefined) return;
          expect(adapter.normalize(id), `idFromEnvName(${JSON.stringify(form)}) must return a canonical id`).toBe(id);
          expect(adapter.envName(id), `idFromEnvName(${JSON.stringify(form)}) = ${JSON.stringify(id)}, whose env form`).toBe(form);
        }),
        { numRuns, includeErrorInReport: true },
      );
    },

    resolverIsolation() {
      const ids = vectors.valid.map((vector) => vector.id);
      const idArbitrary = fc.tuple(sendersOnce(), fc.nat()).map(([raw, index]) => {
        const outcome = attempt(adapter, raw);
        return outcome.ok ? outcome.id : ids[index % ids.length]!;
      });
      fc.assert(
        fc.property(idArbitrary, idArbitrary, fc.constantFrom(PREFIX, 'BERTH_U'), fc.stringMatching(/^[a-z0-9]{8,16}$/), (a, b, prefix, nonce) => {
          fc.pre(a !== b);
          const registry = newRegistry();
          const upper = registry.envPlatform(adapter.platform);
          const secretOfA = `a-secret-${nonce}`;
          const secretOfB = `b-secret-${nonce}`;
          const environment: Record<string, string> = {
            [`${prefix}_${upper}_${adapter.envName(a)}_TOKEN`]: secretOfA,
            [`${prefix}_${upper}_${adapter.envName(b)}_OWN`]: secretOfB,
          };
          const resolver = createSandboxResolver({ config: { ...configFor(), docker_user_env_prefix: prefix }, registry, environment });
          const requestOf = (id: string) => resolver.forScope(resolver.scopeOf({ identity: { platform: adapter.platform, id } }));
          const forA = requestOf(a);
          const forB = requestOf(b);
          const who = (id: string) => `${adapter.platform}:${id}`;
          expect(forA.environment.variables.TOKEN, `${who(a)} gets its own TOKEN`).toBe(secretOfA);
          expect(forB.environment.variables.OWN, `${who(b)} gets its own OWN`).toBe(secretOfB);
          expect(Object.values(forB.environment.variables), `${who(b)} must not see ${who(a)}'s variable`).not.toContain(secretOfA);
          expect(Object.values(forA.environment.variables), `${who(a)} must not see ${who(b)}'s variable`).not.toContain(secretOfB);
          expect(forA.paths.folder.toLowerCase(), 'distinct identities get distinct folders').not.toBe(forB.paths.folder.toLowerCase());
          for (const request of [forA, forB]) {
            expect(path.dirname(request.paths.folder), 'the folder is directly inside {sandbox_dir}/docker').toBe(request.paths.root);
          }
          expect(resolver.index.refused, 'no variable of a real identity is refused as ambiguous').toEqual([]);
        }),
        { numRuns: Math.max(20, Math.floor(numRuns / 2)), includeErrorInReport: true },
      );
    },
  };
}
