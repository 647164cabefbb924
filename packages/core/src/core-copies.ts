import { AsyncLocalStorage } from 'node:async_hooks';
import { createRequire } from 'node:module';
import { CoreVersionConflictError } from './errors.js';
import type { SessionContext } from './session-context.js';

/*
 * A process may load more than one copy of @berth/core: a host and a plugin that each installed
 * their own, or a bundler that inlined one. The session a host sets with `runWithSession` must
 * reach the copy the plugin reads it with, or every message would look like one without a user.
 * So the state that must be one per process lives on `globalThis` under `Symbol.for` keys, shared
 * by every copy that agrees on its layout, and every copy records itself, so that `register()`
 * can refuse a process whose copies cannot share it.
 */

/**
 * The layout of the state that copies of core share (the session store). Bump it on any
 * incompatible change: copies with different numbers cannot share, and `register()` refuses.
 */
export const SHARED_STATE_VERSION = 1;

/** One copy of core loaded in this process. */
export interface CoreCopy {
  /** The package version, e.g. `0.1.0`. */
  readonly version: string;
  /** Its {@link SHARED_STATE_VERSION}. */
  readonly sharedStateVersion: number;
}

interface SharedState {
  readonly sessions: AsyncLocalStorage<Readonly<SessionContext>>;
}

// The copies list's key and shape never change, so every release can read it.
const COPIES = Symbol.for('dev.berth.core.copies');
const STATE = Symbol.for(`dev.berth.core.shared-state.v${SHARED_STATE_VERSION}`);

function packageVersion(): string {
  try {
    return (createRequire(import.meta.url)('../package.json') as { version: string }).version;
  } catch {
    return 'unknown';
  }
}

const registry = globalThis as typeof globalThis & { [COPIES]?: CoreCopy[]; [STATE]?: SharedState };
const copies = registry[COPIES] ?? [];
registry[COPIES] = copies;
copies.push(Object.freeze({ version: packageVersion(), sharedStateVersion: SHARED_STATE_VERSION }));
const state: SharedState = registry[STATE] ?? { sessions: new AsyncLocalStorage<Readonly<SessionContext>>() };
registry[STATE] = state;

/** The process's one session store (shared with every compatible copy of core). */
export function sharedSessionStore(): AsyncLocalStorage<Readonly<SessionContext>> {
  return state.sessions;
}

/** Every copy of core this process has loaded, this one included. */
export function loadedCoreCopies(): readonly CoreCopy[] {
  return [...copies];
}

/**
 * Throws `CoreVersionConflictError` when copies of core that cannot share one session store are
 * loaded in this process: a session set through one would be invisible to the other, and every
 * message would look like one without a user. Copies that can share are fine.
 */
export function assertOneSessionStore(): void {
  const layouts = new Set(copies.map((copy) => copy.sharedStateVersion));
  if (layouts.size <= 1) return;
  const versions = [...new Set(copies.map((copy) => `${copy.version} (session store v${copy.sharedStateVersion})`))].join(', ');
  throw new CoreVersionConflictError(
    `this process has loaded copies of @berth/core that cannot share one session store (${versions}), ` +
      "so the host's runWithSession would not reach Berth; install one version of @berth/core for the host " +
      'and every @berth package (npm ls @berth/core shows the copies; npm dedupe or a matching version fixes it)',
  );
}
