import { AsyncLocalStorage } from 'node:async_hooks';

/** What a host knows about the message being handled. */
export interface SessionContext {
  /** Platform the message came from, e.g. `telegram`. */
  readonly platform?: string;
  /** The raw sender id as the platform gave it (the adapter canonicalises it). */
  readonly userId?: string | number;
  /** The chat the message came from; not used for scoping (a group chat has many users). */
  readonly chatId?: string | number;
  /** The agent task id, used for the legacy task-scoped layout. */
  readonly taskId?: string;
  /** A host session key such as `agent:main:telegram:direct:123`, when the host has no sender id. */
  readonly sessionKey?: string;
}

const storage = new AsyncLocalStorage<Readonly<SessionContext>>();

/**
 * Runs `fn` with `session` as the active session: everything `fn` calls, synchronously or
 * asynchronously, sees it through {@link getActiveSession}; concurrent calls see their own.
 */
export function runWithSession<T>(session: SessionContext, fn: () => T): T {
  return storage.run(Object.freeze({ ...session }), fn);
}

/** The session of the message being handled, or `undefined` outside {@link runWithSession}. */
export function getActiveSession(): Readonly<SessionContext> | undefined {
  return storage.getStore();
}

/**
 * The active user as `platform:rawId` (e.g. `telegram:123456789`), or `undefined` when the
 * session has no user. The id is as the host gave it; resolve it through a platform registry
 * for the canonical form.
 */
export function getActiveSessionUserId(): string | undefined {
  const session = storage.getStore();
  if (!session?.platform || session.userId === undefined || session.userId === '') return undefined;
  return `${session.platform.toLowerCase()}:${String(session.userId)}`;
}

/**
 * The session a host describes through the environment variables of the Python gateway that
 * inspired Berth (`HERMES_SESSION_PLATFORM`, `HERMES_SESSION_USER_ID`, `HERMES_SESSION_CHAT_ID`,
 * `HERMES_SESSION_KEY`), or `undefined` when they name no user.
 */
export function sessionFromEnvironment(environment: NodeJS.ProcessEnv = process.env): SessionContext | undefined {
  const platform = environment.HERMES_SESSION_PLATFORM;
  const userId = environment.HERMES_SESSION_USER_ID;
  const sessionKey = environment.HERMES_SESSION_KEY;
  if (!platform && !userId && !sessionKey) return undefined;
  return {
    ...(platform ? { platform } : {}),
    ...(userId ? { userId } : {}),
    ...(environment.HERMES_SESSION_CHAT_ID ? { chatId: environment.HERMES_SESSION_CHAT_ID } : {}),
    ...(sessionKey ? { sessionKey } : {}),
  };
}

/**
 * Reads platform and peer id out of a host session key such as OpenClaw's
 * `agent:main:telegram:direct:123`: only direct (one-to-one) sessions name a user; group and
 * channel sessions, and keys of other shapes, give `undefined`.
 */
export function parseSessionKey(sessionKey: string): { platform: string; userId: string } | undefined {
  const parts = sessionKey.split(':');
  if (parts.length >= 5 && parts[0] === 'agent' && (parts[3] === 'direct' || parts[3] === 'dm')) {
    const platform = parts[2];
    const userId = parts.slice(4).join(':');
    if (platform && userId) return { platform, userId };
  }
  return undefined;
}
