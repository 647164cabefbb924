import type { HostLogger } from '@berth/core';
import type { SandboxDriverV1 } from '@berth/core/driver';
import { LABELS, MANAGED_BY } from '../sandbox-spec.js';
import type { Reclaim } from './fair-share-guard.js';
import type { SandboxEntry } from './sandbox-entry.js';
import { waitAtMost } from '../wait-at-most.js';

/** How long the engine is given to see a sandbox whose processes were killed exit by itself, ms. */
export const EXIT_WAIT_MS = 5_000;
const EXIT_POLL_MS = 100;
/** How long the engine is given to say whose container an unknown one under the bound is, ms. */
const INSPECT_WAIT_MS = 2_000;

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
      // An inspect that does not answer counts against the deadline too (the engine may wait for
      // the bound); one that fails counts as gone.
      const inspecting = driver.inspect(id).catch(() => undefined);
      if (await waitAtMost(inspecting, Math.max(0, deadline - Date.now()))) {
        const state = (await inspecting)?.state;
        if (state === undefined || state === 'stopped') return true;
      }
      await new Promise((resolve) => setTimeout(resolve, EXIT_POLL_MS));
    }
    return false;
  };
  return async (id, why, killNow) => {
    // A sandbox of this process's is known to be Berth's without asking the engine: the kills
    // come first, from the host. The engine may not answer while the bound is full (Podman's
    // clean-up of an exited container runs under the bound, holding locks its API waits for),
    // and a guard waiting on it would leave the bound full for good.
    let entry = [...parts.entries()].find((candidate) => candidate.containerId === id);
    let paused = entry?.frozenAt !== undefined;
    let name = entry?.name ?? id.slice(0, 12);
    if (!entry) {
      // Another process's, or an operator's container under the parent: asked, for a while. An
      // inspect the engine fails or does not answer in time throws: the guard looks again at its
      // next tick. Only an answer that names no sandbox of Berth's leaves it out of every later choice.
      const inspecting = driver.inspect(id);
      if (!(await waitAtMost(inspecting, INSPECT_WAIT_MS))) {
        inspecting.catch(() => undefined);
        throw new Error(`the engine did not say within ${INSPECT_WAIT_MS} ms whose container ${id.slice(0, 12)} is`);
      }
      const found = await inspecting;
      if (found?.labels[LABELS.managedBy] !== MANAGED_BY) return false;
      paused = found.state === 'paused';
      name = found.name;
      entry = [...parts.entries()].find((candidate) => candidate.containerId === found.id);
    }
    await killNow();
    // Frozen (idle, docker_freeze_seconds): the kills land once it is thawed (cgroup v1's freezer holds them).
    if (paused) void driver.unpause(id).catch(() => undefined);
    if (entry) {
      entry.reclaimed = why;
      parts.dropShells(entry);
      entry.running = false;
      entry.frozenAt = undefined;
    }
    const stopped = (async () => {
      if (!(await exited(id))) await driver.stop(id, 1).catch((error: unknown) => logger?.warn(`berth: could not stop ${name}: ${(error as Error).message}`));
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
