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
 * many wait in all. Every sandbox's queue is bounded, and only running commands count against
 * maxConnections, so one user's pile of requests never locks anyone else out. The waiting
 * places are shared fairly: a sandbox may hold at most its share of them (`maxQueued` over the
 * sandboxes that have requests waiting, itself counted), and a sandbox's first waiting request
 * is always taken, even when the others filled `maxQueued` — so a few tenants that fill the
 * queue never starve one that asks for little. The most requests ever held is `maxQueued` plus
 * one per sandbox in flight (at most `maxInFlight`).
 */
export function createServeAdmission(limits: { maxInFlight: number; maxQueuedPerScope: number; maxQueued: number }): ServeAdmission {
  const { maxInFlight, maxQueuedPerScope, maxQueued } = limits;
  // Per sandbox: its requests in flight (the running one and those waiting behind it).
  const perScope = new Map<string, number>();
  let queued = 0;
  let queuingScopes = 0;
  const admit = (scopeKey: string): SandboxSocketRequestError | undefined => {
    const count = perScope.get(scopeKey) ?? 0;
    if (count === 0) {
      if (perScope.size >= maxInFlight)
        return new SandboxSocketRequestError('SERVER_BUSY', `${maxInFlight} sandboxes are running commands already; retry in a moment`);
    } else {
      const waiting = count - 1;
      if (waiting >= maxQueuedPerScope) {
        return new SandboxSocketRequestError(
          'SERVER_BUSY',
          `this sandbox already has ${maxQueuedPerScope} commands waiting behind the one it runs; retry once some have finished`,
        );
      }
      const share = Math.max(1, Math.floor(maxQueued / (queuingScopes + (waiting === 0 ? 1 : 0))));
      if (waiting >= share) {
        return new SandboxSocketRequestError(
          'SERVER_BUSY',
          `this sandbox already has ${waiting} commands waiting, its share while other sandboxes wait too; retry once some have finished`,
        );
      }
      // Each sandbox's first waiting place is not counted against maxQueued (there are at most maxInFlight of them).
      if (waiting > 0 && queued - queuingScopes >= maxQueued)
        return new SandboxSocketRequestError('SERVER_BUSY', `${maxQueued} commands are waiting already; retry in a moment`);
      if (waiting === 0) queuingScopes++;
      queued++;
    }
    perScope.set(scopeKey, count + 1);
    return undefined;
  };
  const release = (scopeKey: string): void => {
    const count = perScope.get(scopeKey) ?? 1;
    if (count > 1) queued--;
    if (count === 2) queuingScopes--;
    if (count <= 1) perScope.delete(scopeKey);
    else perScope.set(scopeKey, count - 1);
  };
  return { admit, release };
}
