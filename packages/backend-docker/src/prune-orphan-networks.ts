import type Dockerode from 'dockerode';
import { isProcessIdentityGone, LABELS, MANAGED_BY } from '@berth/sandbox-runtime/driver';

/** How old a network without its sandbox must be before it counts as an orphan. */
const ORPHAN_AGE_MS = 10 * 60_000;

/**
 * Orphans: Berth's networks whose sandbox is gone without Berth removing it (`docker rm -f`, a
 * gateway killed between making the network and the container). Each holds a /29 of the pool
 * and a bridge on the host, so they are removed in the background whenever a network is made.
 * Only a network older than ORPHAN_AGE_MS, so that one another gateway process has just made
 * for a container it is about to create is left alone; one removed by mistake is made again
 * by the next prepare(). The returned function prunes among the networks it is given, one
 * pruning at a time, and never throws.
 */
export function orphanNetworkPruner(
  docker: () => Dockerode,
  /** Whether a network is the ready spare, which is left alone however old it is. */
  isSpare: (name: string) => boolean,
): (networks: Dockerode.NetworkInspectInfo[]) => Promise<void> {
  let pruning = false;
  return async (networks) => {
    if (pruning) return;
    pruning = true;
    try {
      // Old enough that no live process is about to use it, or made by a process that is gone
      // (a killed gateway's spare: its maker can never take it).
      const ours = networks.filter(
        (network) =>
          network.Labels?.[LABELS.managedBy] === MANAGED_BY &&
          (Date.now() - Date.parse(network.Created) > ORPHAN_AGE_MS || isProcessIdentityGone(network.Labels[LABELS.maker] ?? '')),
      );
      if (ours.length === 0) return;
      const referenced = new Set(
        (await docker().listContainers({ all: true })).flatMap((container) => [
          ...(container.Names ?? []).map((name) => name.replace(/^\//, '')),
          ...(container.Labels?.[LABELS.network] ? [container.Labels[LABELS.network]] : []),
        ]),
      );
      for (const network of ours) {
        if (referenced.has(network.Name) || isSpare(network.Name)) continue;
        // Refused when a container (one made by hand, say) still uses it: then it stays.
        await docker()
          .getNetwork(network.Id)
          .remove()
          .catch(() => undefined);
      }
    } catch {
      // The next network made tries again.
    } finally {
      pruning = false;
    }
  };
}
