import { encodeFolderComponent, shortDigest } from './encode-name.js';
import { formatIdentity, truncateForMessage, type Identity } from './identity.js';
import type { IdentityLinks } from './identity-links.js';
import type { PlatformRegistry } from './platform-registry.js';
import { SessionAttributionError } from './errors.js';
import { profileFolderName, profileScopeKey, sessionProfile } from './profile.js';
import { PLAIN_TASK_ID_PATTERN } from './request-protocol.js';
import { getActiveSession, type SessionContext } from './session-context.js';
import { classifySessionKey } from './session-key.js';

/** A sandbox that belongs to one person (possibly several linked identities). */
export interface UserScope {
  readonly kind: 'user';
  /** Stable key, e.g. `user:telegram:123456789`; the primary identity's. */
  readonly key: string;
  /** The identity the current message came from. */
  readonly identity: Identity;
  /** The primary identity, whose folder and container the person uses. */
  readonly primary: Identity;
  /** All linked identities, primary first (just `[identity]` when unlinked). */
  readonly identities: readonly Identity[];
  /** Folder name under `{sandbox_dir}/docker/`, e.g. `telegram@123456789`. */
  readonly folderName: string;
  /** Engine-safe name part: readable, bounded, unique, e.g. `telegram-123456789-1a2b3c4d5e6f7a8b`. */
  readonly slug: string;
  /** The host profile the sandbox belongs to; absent for the default profile (profile.ts). */
  readonly profile?: string;
}

/** A sandbox that belongs to an agent task: the legacy layout, unchanged. */
export interface TaskScope {
  readonly kind: 'task';
  /** Stable key, e.g. `task:default`. */
  readonly key: string;
  readonly taskId: string;
  /** Folder name under `{sandbox_dir}/docker/`: the task id itself when it is a plain name. */
  readonly folderName: string;
  readonly slug: string;
  /** The host profile the sandbox belongs to; absent for the default profile (profile.ts). */
  readonly profile?: string;
}

/** Whose sandbox a command runs in. */
export type SandboxScope = UserScope | TaskScope;

/** The task id used when a host gives none. */
export const DEFAULT_TASK_ID = 'default';

/**
 * The legacy folder of a task: the task id itself when it is a plain name (so existing setups
 * keep their files), else `task~` and the escaped id. Neither form contains `@`, which every
 * user folder does, so a task can never land in a user's folder.
 */
export function taskFolderName(taskId: string): string {
  return PLAIN_TASK_ID_PATTERN.test(taskId) ? taskId : `task~${encodeFolderComponent(taskId)}`;
}

function slugOf(readable: string, key: string): string {
  const clean = readable
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 40);
  return `${clean || 'x'}-${shortDigest(key)}`;
}

/** Builds the task scope for `taskId` (empty or absent: `default`). */
export function taskScope(taskId: string | undefined): TaskScope {
  const id = taskId && taskId.length > 0 ? taskId : DEFAULT_TASK_ID;
  const key = `task:${id}`;
  return { kind: 'task', key, taskId: id, folderName: taskFolderName(id), slug: slugOf(`task-${id}`, key) };
}

/** Builds the user scope of `identity`, following identity links to the primary identity. */
export function userScope(identity: Identity, registry: PlatformRegistry, links?: IdentityLinks): UserScope {
  const identities = links?.groupOf(identity) ?? [identity];
  const primary = identities[0] ?? identity;
  const key = `user:${formatIdentity(primary)}`;
  // Compute every member's forms, so a colliding adapter is caught whichever id writes first.
  for (const member of identities) registry.envName(member);
  return {
    kind: 'user',
    key,
    identity,
    primary,
    identities,
    folderName: registry.folderName(primary),
    slug: slugOf(`${primary.platform}-${primary.id}`, key),
  };
}

/**
 * `scope` inside the named `profile`: its key, folder and slug name the profile, so the same
 * person, chat or job in two profiles has two sandboxes. The default profile (`undefined`) keeps
 * the scope as it was before profiles, so an upgraded host's sandboxes stay where they were.
 */
export function inProfile<T extends SandboxScope>(scope: T, profile: string | undefined): T {
  if (profile === undefined) return scope;
  const key = profileScopeKey(profile, scope.key);
  return { ...scope, key, folderName: profileFolderName(profile, scope.folderName), slug: slugOf(`${profile}-${scope.slug}`, key), profile };
}

/** What {@link resolveScope} needs. */
export interface ResolveScopeOptions {
  /** `docker_user_sandbox` from the config. */
  readonly userSandbox: boolean;
  readonly registry: PlatformRegistry;
  readonly links?: IdentityLinks;
  /** The session; the active one (AsyncLocalStorage) when omitted. */
  readonly session?: SessionContext | undefined;
  /** The task id the host passed to the terminal tool, used when the session has none. */
  readonly taskId?: string | undefined;
  /**
   * The caller serves many people from one process (a gateway): a command whose session names
   * no user, chat or key is refused rather than run in the task's sandbox, which would be shared
   * by everyone such a command ever came from. A single-user caller (a CLI) keeps the task layout.
   * @default false
   */
  readonly sessionRequired?: boolean | undefined;
}

const present = (value: string | number | undefined): value is string | number => value !== undefined && value !== '';

/** Whether a session names anybody or anything: a platform, a user, a chat or a host key (a task id alone names nobody). */
function namesSomeone(session: SessionContext | undefined): session is SessionContext {
  // A session key is never "nothing", not even empty: a host that passes one means it, and an empty one is refused.
  return session !== undefined && (present(session.platform) || present(session.userId) || present(session.chatId) || session.sessionKey !== undefined);
}

/** The scope key of a conversation without a user: `chat:{canonical platform}:{chat id}`, one per chat whatever alias the host spelled. */
export function chatScopeKey(platform: string, chatId: string | number, registry: PlatformRegistry): string {
  return `chat:${registry.adapterFor(platform).platform}:${String(chatId)}`;
}

/**
 * The one function that decides whose sandbox a command runs in; every entry point (the
 * terminal provider, the socket server, each CLI command, the demo) reaches it through the
 * sandbox resolver. In order:
 *
 * 1. `docker_user_sandbox: false`: the task's sandbox, the legacy layout (the operator's choice).
 * 2. No session, or one that names nobody (no platform, user, chat or key): refused when the
 *    caller serves many people (`sessionRequired`); else the task's sandbox — the session's task
 *    id, else the host's, else `default` — as a single-user CLI has always had it.
 * 3. `platform` and `userId`: that user's sandbox (after identity links). An id the platform's
 *    adapter refuses throws; it never falls back to a shared task sandbox.
 * 4. A host session key (see `classifySessionKey`): a direct chat gives that user's sandbox; a
 *    group, channel, thread, topic, cron job or webhook gives the conversation a task-layout
 *    sandbox of its own, named after the key; any other key throws `SessionAttributionError`
 *    naming its shape and the host setting that fixes it.
 * 5. A user id without a platform throws: it names someone, but not on which platform.
 * 6. `platform` and `chatId` without a user: the chat's own sandbox (`chat:{platform}:{chatId}`,
 *    the platform canonical, so `tg` and `telegram` are one chat).
 * 7. Anything else that names something but nobody Berth can attribute — a chat id without a
 *    platform, a platform alone — throws: never the task's shared sandbox.
 *
 * Whichever it is, a session that names a host profile other than the default gets that scope
 * inside its profile ({@link inProfile}); a profile that is not a profile id throws.
 */
export function resolveScope(options: ResolveScopeOptions): SandboxScope {
  const session = options.session ?? getActiveSession();
  const profile = sessionProfile(session?.profile);
  return inProfile(unprofiledScope(options, session), profile);
}

function unprofiledScope(options: ResolveScopeOptions, session: SessionContext | undefined): SandboxScope {
  const taskId = session?.taskId ?? options.taskId;
  if (!options.userSandbox) return taskScope(taskId);
  if (!namesSomeone(session)) {
    if (options.sessionRequired) {
      throw new SessionAttributionError(
        'the command came from a gateway that serves many people, but its session names no platform, user, chat or session key, ' +
          "so Berth cannot tell whose sandbox it is and will not use one they would all share; run it inside a message's session (the host sets " +
          'HERMES_SESSION_PLATFORM and HERMES_SESSION_USER_ID or HERMES_SESSION_CHAT_ID), or set terminal.docker_user_sandbox: ' +
          'false for one shared sandbox',
      );
    }
    return taskScope(taskId);
  }
  const { platform, userId, chatId, sessionKey } = session;
  if (present(platform) && present(userId)) return userScope(options.registry.resolve(platform, userId), options.registry, options.links);
  if (sessionKey !== undefined) {
    const meaning = classifySessionKey(sessionKey);
    switch (meaning.kind) {
      case 'user':
        return userScope(options.registry.resolve(meaning.platform, meaning.peer), options.registry, options.links);
      case 'conversation':
        return taskScope(sessionKey);
      case 'refused':
        throw new SessionAttributionError(meaning.reason);
    }
  }
  if (present(userId)) {
    throw new SessionAttributionError(
      'the session names a sender id but no platform, so Berth cannot tell whose sandbox it is; the host must pass platform with userId (e.g. telegram)',
    );
  }
  if (present(platform) && present(chatId)) return taskScope(chatScopeKey(platform, chatId, options.registry));
  if (present(chatId)) {
    throw new SessionAttributionError(
      'the session names a chat but no platform, so Berth cannot tell which conversation it is; the host must pass platform with chatId (e.g. telegram)',
    );
  }
  throw new SessionAttributionError(
    `the session names the platform ${JSON.stringify(truncateForMessage(String(platform)))} but no user, ` +
      'chat or session key, so Berth cannot tell whose sandbox it is; the host must pass userId or chatId with the platform',
  );
}
