import type { HostLogger } from '@berth/core';
import type { SandboxDriverV1 } from '@berth/core/driver';
import { LABELS, MANAGED_BY } from '../sandbox-spec.js';
import type { Reclaim } from './fair-share-guard.js';
import type { SandboxEntry } from './sandbox-entry.js';

/** How long the engine is given to see a sandbox whose processes were killed exit by itself, ms. */
export const EXIT_WAIT_MS = 5_000;
const EXIT_POLL_MS = 100;

/** What {@link createReclaim} needs of the runtime. */
export interface GiveWayParts {
  readonly driver: SandboxDriverV1;
  readonly entries: () => Iterable<SandboxEntry>;
  /** Ends the entry's shells (they die with the sandbox). */
  readonly dropShells: (entry: SandboxEntry) => void;
  /** After the stop: the entry's brokered variables and proxy let go, and the event recorded. */
  readonly stopped: (entry: SandboxEntry) => Promise<void>;
  readonly logger?: HostLogger | undefined;
}

/**
 * The fair-share guard's way of making a sandbox give way (fair-share-guard.ts, Reclaim): its
 * processes die at once from the host (what they hold is free now), its user is told why with
 * their next result, and the engine ends the rest (its /tmp) without the guard waiting.
 *
 * Its first process is among those killed, so the engine sees it exit by itself: it is asked to
 * stop only if it has not within EXIT_WAIT_MS. A stop sent at once met Podman's own clean-up of
 * that exit (`podman container cleanup`, run by conmon): the stop held the container's lock while
 * waiting for conmon, conmon waited for its clean-up, the clean-up for the lock — seen for over
 * two minutes, the user's next command waiting behind it.
 */
export function createReclaim(parts: GiveWayParts): Reclaim {
  const { driver, logger } = parts;
  const exited = async (id: string): Promise<boolean> => {
    for (const deadline = Date.now() + EXIT_WAIT_MS; Date.now() < deadline; ) {
      const state = (await driver.inspect(id).catch(() => undefined))?.state;
      if (state === undefined || state === 'stopped') return true;
      await new Promise((resolve) => setTimeout(resolve, EXIT_POLL_MS));
    }
    return false;
  };
  return async (id, why, killNow) => {
    // An inspect that fails (an engine slow under the very load the guard answers) throws: the
    // guard looks again at its next tick. Only an answer that names no sandbox of Berth's (gone,
    // or another's container under the parent) leaves it out of every later choice.
    const found = await driver.inspect(id);
    if (found?.labels[LABELS.managedBy] !== MANAGED_BY) return false;
    await killNow();
    // Frozen (idle, docker_freeze_seconds): the kills land once it is thawed (cgroup v1's freezer holds them).
    if (found.state === 'paused') await driver.unpause(found.id).catch(() => undefined);
    const entry = [...parts.entries()].find((candidate) => candidate.containerId === found.id);
    if (entry) {
      entry.reclaimed = why;
      parts.dropShells(entry);
      entry.running = false;
      entry.frozenAt = undefined;
    }
    const stopped = (async () => {
      if (!(await exited(found.id)))
        await driver.stop(found.id, 1).catch((error: unknown) => logger?.warn(`berth: could not stop ${found.name}: ${(error as Error).message}`));
      if (entry) await parts.stopped(entry).catch(() => undefined);
    })();
    // Its user's next command starts it again only once this is done (sandbox-lifecycle.ts).
    if (entry) {
      entry.givingWay = stopped;
      void stopped.finally(() => {
        if (entry.givingWay === stopped) entry.givingWay = undefined;
      });
    }
    return { stopped };
  };
}
