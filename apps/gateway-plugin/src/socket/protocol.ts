// Types and limits only: the spawned client imports this file, and it must load nothing but
// Node's own modules (no zod, no @berth/core) to answer in tens of milliseconds. The limits are
// core's request protocol (`@berth/core/request-protocol`, which imports nothing; the build
// bundles it into this package); core's main entry gives types only, which the build erases.
import type { SocketErrorCode } from '@berth/core';
import type { SANDBOX_SOCKET_PROTOCOL_VERSION } from '@berth/core/request-protocol';

export { MAX_SANDBOX_SOCKET_REQUEST_BYTES, SANDBOX_SOCKET_PROTOCOL_VERSION } from '@berth/core/request-protocol';

/**
 * The longest path a Unix socket can be bound or connected by: Linux's `sun_path` holds 108 bytes
 * with the terminating NUL. Longer socket paths are reached through a descriptor of their folder
 * (`/proc/self/fd/N/name`), by the server and its clients alike.
 */
export const MAX_SOCKET_PATH_BYTES = 107;

/**
 * One command for `berth serve`, sent as one JSON line per connection. The fields that say whose
 * sandbox it is (`platform`, `userId`, `chatId`, `sessionKey`, `taskId`, `profile`) are the host's session,
 * as it would pass it to `runWithSession`, each sent as the host gave it; the server decides the
 * sandbox exactly as the plugin's `execute()` does (core's `resolveScope`): the user named by
 * `platform` and `userId`, else by a direct-chat `sessionKey`; a conversation's own sandbox for a
 * group or cron key, or for `platform` and `chatId` without a user; a refusal for what names
 * someone Berth cannot attribute (a `userId` without `platform`); the task scope when nothing is
 * named, unless `sessionRequired`.
 */
export interface SandboxSocketRequest extends SandboxSocketTarget {
  /** What is asked: a command. @default 'exec' */
  readonly op?: 'exec';
  /** The command line, run by the sandbox's shell. */
  readonly command: string;
  /** Working directory inside the sandbox; the session's current one when absent. */
  readonly cwd?: string;
  /** Seconds before the command's process tree is killed (exit 124). @default terminal.timeout */
  readonly timeout?: number;
  /** Standard input of the command; empty when absent. */
  readonly stdin?: string;
  /**
   * How a result comes back: one JSON line ({@link SandboxSocketResult}), or `framed`
   * ({@link encodeFramedResult}), which a client that is not Node reads without a JSON parser.
   * Refusals are a JSON line either way. @default 'json'
   */
  readonly reply?: 'json' | 'framed';
}

/** The fields of every request that say whose sandbox it is for. */
export interface SandboxSocketTarget {
  /** The protocol version, {@link SANDBOX_SOCKET_PROTOCOL_VERSION}. */
  readonly v: typeof SANDBOX_SOCKET_PROTOCOL_VERSION;
  /** A host session key such as `agent:main:telegram:direct:123`. */
  readonly sessionKey?: string;
  /** The platform of the message, e.g. `telegram`; names a user with `userId`, a conversation with `chatId`. */
  readonly platform?: string;
  /** The sender's raw id on `platform`; the platform's adapter canonicalises it. */
  readonly userId?: string;
  /** The chat the message came from; names the sandbox of a conversation without a user. */
  readonly chatId?: string;
  /** The task of the legacy layout, used when the session names nobody. @default 'default' */
  readonly taskId?: string;
  /**
   * The host profile the message came to (Hermes 0.21+ `HERMES_SESSION_PROFILE`); absent or
   * `default` for the default one. The same user in two profiles has two sandboxes.
   */
  readonly profile?: string;
  /**
   * The variables of the host's own scope for this request (a profile's secrets, Hermes 0.21+
   * multiplexing): forwarded and user variables then come from them alone, never from the
   * server's environment. At most 1024.
   */
  readonly variables?: Readonly<Record<string, string>>;
  /**
   * The request comes from a process that serves many people (a gateway): when the session names
   * no platform, user, chat or key it is refused (`SESSION_UNATTRIBUTABLE`), never run in the
   * task's sandbox that all such commands would share. @default false
   */
  readonly sessionRequired?: boolean;
  /**
   * The client keeps its side of the connection open until it has the answer, so the end of its
   * side means it left (killed, or Ctrl-C): berth serve then stops what it asked for (the command
   * is killed as at its timeout). Without it a client may end its side after the request and still
   * read the answer, and only a connection closed on both sides stops the work. @default false
   */
  readonly stopOnLeave?: boolean;
}

/**
 * Copies a file the gateway owns on the host (an attachment it saved) into the sandbox at
 * `path` (in `/workspace` or `/root`; see docs/files.md). Answered by {@link SandboxSocketFileResult}.
 */
export interface SandboxSocketPutFileRequest extends SandboxSocketTarget {
  readonly op: 'put-file';
  /** The absolute host path of the file; opened without following a link. */
  readonly source: string;
  /** Where it goes in the sandbox, e.g. `/workspace/attachments/doc_ab12_notes.txt`. */
  readonly path: string;
}

/**
 * Copies a file named for delivery out of the sandbox into a new private folder under the host
 * folder `target`. Answered by {@link SandboxSocketFileResult} with `hostPath`.
 */
export interface SandboxSocketGetFileRequest extends SandboxSocketTarget {
  readonly op: 'get-file';
  /** The path as the agent wrote it: `/workspace/…`, `/root/…`, `/tmp/…`, `~/…` or relative to `/workspace`. */
  readonly path: string;
  /** An absolute host folder of the gateway's own, created (mode 0700) when missing. */
  readonly target: string;
}

/** A request to move a file between the host and a sandbox. */
export type SandboxSocketFileRequest = SandboxSocketPutFileRequest | SandboxSocketGetFileRequest;

/** Any request `berth serve` takes. */
export type SandboxSocketAnyRequest = SandboxSocketRequest | SandboxSocketFileRequest;

/** A file that went between the host and a sandbox. */
export interface SandboxSocketFileResult {
  readonly v: typeof SANDBOX_SOCKET_PROTOCOL_VERSION;
  /** The file's path in the sandbox. */
  readonly path: string;
  /** Its size in bytes. */
  readonly bytes: number;
  /** `get-file` only: the new host copy. */
  readonly hostPath?: string;
  /** The scope of the sandbox, e.g. `user:telegram:123`. */
  readonly scope: string;
}

/** What a command produced, secrets masked as the plugin masks them. */
export interface SandboxSocketResult {
  readonly v: typeof SANDBOX_SOCKET_PROTOCOL_VERSION;
  readonly exitCode: number;
  readonly stdout: string;
  readonly stderr: string;
  /** True when the command was killed at its timeout (exit code 124). */
  readonly timedOut: boolean;
  /** True when output was cut to `docker_output_limit` (the cut is stated inside the output). */
  readonly truncated: boolean;
  readonly durationMs: number;
  /** The scope the command ran in, e.g. `user:telegram:123` or `task:default`. */
  readonly scope: string;
}

/**
 * Why a request was not run: `code` is stable (a Berth error's own, or `INTERNAL` for a failure
 * that was not one), `message` is one line naming the culprit.
 */
export interface SandboxSocketErrorResponse {
  readonly v: typeof SANDBOX_SOCKET_PROTOCOL_VERSION;
  readonly error: { readonly code: SocketErrorCode; readonly message: string };
}

/** The one JSON line `berth serve` answers with. */
export type SandboxSocketResponse = SandboxSocketResult | SandboxSocketFileResult | SandboxSocketErrorResponse;

/** The first word of a framed result's header line. */
export const FRAMED_RESULT_TAG = 'BERTH1';

/**
 * A result as `reply: 'framed'` sends it: one ASCII header line
 * `BERTH1 EXIT TIMED_OUT TRUNCATED STDOUT_BYTES STDERR_BYTES` (the flags 0 or 1), then the
 * UTF-8 bytes of stdout and of stderr, nothing else. Lengths, not markers, end each part, so no
 * output can be mistaken for the frame.
 */
export function encodeFramedResult(result: Pick<SandboxSocketResult, 'exitCode' | 'timedOut' | 'truncated' | 'stdout' | 'stderr'>): Buffer {
  const stdout = Buffer.from(result.stdout, 'utf8');
  const stderr = Buffer.from(result.stderr, 'utf8');
  // As the Node client reads a JSON result: a status outside 0-255 is 1.
  const exitCode = Number.isInteger(result.exitCode) && result.exitCode >= 0 && result.exitCode <= 255 ? result.exitCode : 1;
  const header = `${FRAMED_RESULT_TAG} ${exitCode} ${result.timedOut ? 1 : 0} ${result.truncated ? 1 : 0} ${stdout.length} ${stderr.length}\n`;
  return Buffer.concat([Buffer.from(header, 'latin1'), stdout, stderr]);
}
