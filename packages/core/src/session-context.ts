import { sharedSessionStore } from './core-copies.js';

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
  /**
   * The host profile the message came to, when one gateway serves several (Hermes 0.21+); absent,
   * empty or `default` for the default one. Part of whose the sandbox is (profile.ts).
   */
  readonly profile?: string;
}

// One store per process, shared by every copy of core (see core-copies.ts).
const storage = sharedSessionStore();

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
 * Which session variable of the Python gateway that inspired Berth is which field of a session
 * (and of a request to `berth serve`, which carries the same names): what
 * {@link sessionFromEnvironment} reads, and what the Hermes bridge sends from Hermes' session
 * (through the wire contract, docs/gateway-plugin.md).
 */
export const SESSION_VARIABLE_FIELDS = {
  HERMES_SESSION_PLATFORM: 'platform',
  HERMES_SESSION_USER_ID: 'userId',
  HERMES_SESSION_CHAT_ID: 'chatId',
  HERMES_SESSION_KEY: 'sessionKey',
  HERMES_SESSION_PROFILE: 'profile',
} as const satisfies Readonly<Record<string, keyof SessionContext>>;

/** The Python gateway's session variables, as {@link sessionFromEnvironment} reads them. */
export const SESSION_ENVIRONMENT_VARIABLES = Object.keys(SESSION_VARIABLE_FIELDS) as readonly (keyof typeof SESSION_VARIABLE_FIELDS)[];

/**
 * The session a host describes through the environment variables of the Python gateway that
 * inspired Berth ({@link SESSION_VARIABLE_FIELDS}), every one that is set, or `undefined` when
 * none is. Which of them name a sandbox is `resolveScope`'s decision (a chat without a platform,
 * say, is refused there).
 */
export function sessionFromEnvironment(environment: Readonly<Record<string, string | undefined>> = process.env): SessionContext | undefined {
  const session: Record<string, string> = {};
  for (const [variable, field] of Object.entries(SESSION_VARIABLE_FIELDS)) {
    const value = environment[variable];
    if (value) session[field] = value;
  }
  return Object.keys(session).length > 0 ? session : undefined;
}
