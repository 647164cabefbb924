/**
 * Podman's Docker-compatible API answers a few conflicts with 500 where Docker answers 409.
 * The shared engine layer reads conflicts through `isConflict` (backend-docker's
 * map-engine-error.ts, the one mapping of status codes); rewriting the status here, before
 * the error reaches that layer, lets the one mapping serve both engines.
 */

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

/** Rewrites (in place) the status of a Podman error to Docker's, and returns it. */
export function normalizePodmanError(error: unknown): unknown {
  const status = dockerStatusOf(error);
  if (status !== undefined && status !== (error as { statusCode: number }).statusCode) {
    (error as { statusCode: number; podmanStatusCode?: number }).podmanStatusCode = (error as { statusCode: number }).statusCode;
    (error as { statusCode: number }).statusCode = status;
  }
  return error;
}
