import { mapDockerError, type EngineErrorContext } from '@berth/backend-docker';
import type { BerthError } from '@berth/core';

/** Podman's `cause` texts (libpod's define errors) that mean what Docker's 409 means. */
export const PODMAN_CONFLICT_CAUSES: readonly string[] = [
  // createContainer with a taken name: another gateway created the sandbox first.
  'that name is already in use',
  // exec in, or unpause, a container that is not running: it was stopped under the session.
  'container state improper',
  // remove while another remove runs.
  'container is being removed',
];

/** The engine's `cause` text from a dockerode error: its parsed JSON body, else the message. */
function causeOf(error: { json?: unknown; message?: unknown }): string {
  const json = error.json as { cause?: unknown; message?: unknown } | null | undefined;
  if (json && typeof json.cause === 'string') return json.cause;
  return typeof error.message === 'string' ? error.message : '';
}

/** The status Docker would have answered for this Podman error, or the error's own status. */
export function dockerStatusOf(error: unknown): number | undefined {
  if (!error || typeof error !== 'object') return undefined;
  const status = (error as { statusCode?: unknown }).statusCode;
  if (typeof status !== 'number') return undefined;
  if (status === 500) {
    const cause = causeOf(error as { json?: unknown; message?: unknown });
    if (PODMAN_CONFLICT_CAUSES.some((text) => cause.includes(text))) return 409;
  }
  return status;
}

/**
 * The one place where Podman's answers become Berth errors: Podman's compatible API answers a
 * few conflicts with 500 where Docker answers 409; read with Docker's status, the error then
 * takes Docker's mapping. The engine's error itself is left as it was (it is the cause).
 */
export function mapPodmanError(error: unknown, context: EngineErrorContext): BerthError {
  return mapDockerError(error, context, dockerStatusOf(error));
}
