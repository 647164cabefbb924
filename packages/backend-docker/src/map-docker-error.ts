import { BerthError, EngineUnavailableError, SandboxError } from '@berth/core';

/**
 * The one place where engine answers become Berth errors. Everything else asks these
 * functions instead of reading status codes: 404 gone, 304 already done, 409 conflict, and a
 * socket that does not answer.
 */

/** The HTTP status an engine answered with, when the error carries one. */
export function engineStatus(error: unknown): number | undefined {
  const status = (error as { statusCode?: unknown } | null)?.statusCode;
  return typeof status === 'number' ? status : undefined;
}

/** The object (container, exec, image, network) does not exist (404). */
export function isGone(error: unknown): boolean {
  return engineStatus(error) === 404;
}

/** The engine had nothing to do: already started, already stopped (304). */
export function isAlreadyDone(error: unknown): boolean {
  return engineStatus(error) === 304;
}

/** The name is taken or the object is in a conflicting state: another process got there first, or removal is in progress (409). */
export function isConflict(error: unknown): boolean {
  return engineStatus(error) === 409;
}

const CONNECTION_CODES = new Set(['ECONNREFUSED', 'ENOENT', 'EACCES', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENOTFOUND']);

/** The engine's socket or address could not be reached (refused, absent, not permitted). */
export function isEngineUnreachable(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && CONNECTION_CODES.has(code) && engineStatus(error) === undefined;
}

/** The first line of an engine message, bounded, for a one-line error. */
export function engineMessage(error: unknown): string {
  const raw = error instanceof Error ? error.message : String(error);
  // dockerode prefixes "(HTTP code 409) conflict - "; keep the engine's own words.
  const text = raw
    .replace(/^\(HTTP code \d+\)\s*[^-]*-\s*/, '')
    .split('\n')[0]!
    .trim();
  return text.length > 240 ? `${text.slice(0, 240)}…` : text;
}

/** What an engine call was doing, for the message. */
export interface EngineErrorContext {
  /** `docker` or `podman`. */
  readonly engine: string;
  /** The socket path or URL the client talks to. */
  readonly endpoint: string;
  /** A verb phrase such as `start container berth-telegram-1-ab12`. */
  readonly action: string;
}

/**
 * The one place where a Docker-compatible engine's answers become Berth errors: whatever an
 * engine call threw, as a one-line `BerthError`: `EngineUnavailableError`
 * naming the socket, or a `SandboxError` with code `SANDBOX_GONE` (404, or a container that is
 * not running), `SANDBOX_CONFLICT` (409) or `ENGINE_ERROR`. BerthErrors pass through unchanged.
 * `status` is the status to read the answer by (an engine that answers differently from Docker
 * passes the one Docker would have answered).
 */
export function mapDockerError(error: unknown, context: EngineErrorContext, status: number | undefined = engineStatus(error)): BerthError {
  if (error instanceof BerthError) return error;
  if (isEngineUnreachable(error)) {
    const code = (error as { code: string }).code;
    const hint =
      code === 'EACCES'
        ? 'give the gateway access to it'
        : `start the ${context.engine} engine, or point ${context.engine === 'podman' ? 'socketPath' : 'DOCKER_HOST or socketPath'} at a running one`;
    return new EngineUnavailableError(
      context.endpoint,
      `could not ${context.action}: the ${context.engine} engine at ${context.endpoint} did not answer (${code}); ${hint}`,
      { cause: error },
    );
  }
  if (status === 404)
    return new SandboxError(
      'SANDBOX_GONE',
      `could not ${context.action}: it does not exist on the ${context.engine} engine (${engineMessage(error)}); the next command recreates it`,
      { cause: error },
    );
  // A container that stopped between Berth's look and its exec: Docker 20.10 answers 500, newer
  // engines 409, Podman (4.3) 500 "can only create exec sessions on running containers", which
  // its mapping reads as 409. Either way the next attempt starts it again, so it counts as gone.
  if ((status === 500 || status === 409) && /is not running|container not running|exec sessions on running containers/i.test(engineMessage(error))) {
    return new SandboxError(
      'SANDBOX_GONE',
      `could not ${context.action}: the container is not running (${engineMessage(error)}); the next command starts it again`,
      { cause: error },
    );
  }
  if (status === 409)
    return new SandboxError(
      'SANDBOX_CONFLICT',
      `could not ${context.action}: the ${context.engine} engine reports a conflict (${engineMessage(error)}); retry, or remove the conflicting container`,
      { cause: error },
    );
  return new SandboxError(
    'ENGINE_ERROR',
    `could not ${context.action}: the ${context.engine} engine answered ${status ?? 'with an error'} (${engineMessage(error)})`,
    { cause: error },
  );
}
