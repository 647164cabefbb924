import { SandboxSocketRequestError } from './parse-sandbox-socket-request.js';

/** What `berth serve` admits at once: commands running, and requests waiting per sandbox and in all. */
export interface ServeAdmission {
  /** Takes a place for a request of the sandbox `scopeKey`, or says why there is none (`SERVER_BUSY`). */
  admit(scopeKey: string): SandboxSocketRequestError | undefined;
  /** Gives back the place of a request of `scopeKey` that has been answered. */
  release(scopeKey: string): void;
}

/**
 * Requests in flight per sandbox (its running command and those waiting behind it), and how
 * many wait in all: every sandbox's queue is bounded, and only running commands count against
 * maxConnections, so one user's pile of requests never locks anyone else out.
 */
export function createServeAdmission(limits: { maxInFlight: number; maxQueuedPerScope: number; maxQueued: number }): ServeAdmission {
  const { maxInFlight, maxQueuedPerScope, maxQueued } = limits;
  const perScope = new Map<string, number>();
  let queued = 0;
  const admit = (scopeKey: string): SandboxSocketRequestError | undefined => {
    const count = perScope.get(scopeKey) ?? 0;
    if (count === 0) {
      if (perScope.size >= maxInFlight)
        return new SandboxSocketRequestError('SERVER_BUSY', `${maxInFlight} sandboxes are running commands already; retry in a moment`);
    } else {
      if (count - 1 >= maxQueuedPerScope) {
        return new SandboxSocketRequestError(
          'SERVER_BUSY',
          `this sandbox already has ${maxQueuedPerScope} commands waiting behind the one it runs; retry once some have finished`,
        );
      }
      if (queued >= maxQueued) return new SandboxSocketRequestError('SERVER_BUSY', `${maxQueued} commands are waiting already; retry in a moment`);
      queued++;
    }
    perScope.set(scopeKey, count + 1);
    return undefined;
  };
  const release = (scopeKey: string): void => {
    const count = perScope.get(scopeKey) ?? 1;
    if (count > 1) queued--;
    if (count <= 1) perScope.delete(scopeKey);
    else perScope.set(scopeKey, count - 1);
  };
  return { admit, release };
}
