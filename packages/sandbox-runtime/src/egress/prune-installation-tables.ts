import { readdirSync } from 'node:fs';
import { BRIDGE_NAME_PREFIX, INSTALLATION_TABLE_PREFIX } from './egress-names.js';
import { nft } from './nft.js';

/** The network interfaces of the host (its own network namespace). */
const hostInterfaces = (): string[] => {
  try {
    return readdirSync('/sys/class/net');
  } catch {
    return [];
  }
};

/** Whether a sandbox bridge of the installation tagged `tag` (`bth<tag>…`) is on this host. */
export const hasInstallationBridge = (tag: string): boolean => hostInterfaces().some((name) => name.startsWith(`${BRIDGE_NAME_PREFIX}${tag}`));

/** How long an installation's table must have been seen without a bridge before it is removed. */
export const PRUNE_AFTER_MS = 60_000;
/** Installation tables seen without any bridge, and since when (this process's view). */
const bridgeless = new Map<string, number>();

/**
 * Removes the tables of installations that have had no sandbox bridge on this host for
 * {@link PRUNE_AFTER_MS} (their sandboxes and networks are gone, or the installation is): each
 * would otherwise stay for ever. A table that just appeared, before its installation made its
 * first bridge, is left alone; one removed anyway costs that installation its exceptions, never
 * more, until its next refresh puts it back.
 */
export async function pruneInstallationTables(keep: string, now = Date.now()): Promise<string[]> {
  const tables = (await nft(['list', 'tables']))
    .split('\n')
    .map((line) => /^table inet (berth_inst_[0-9a-f]{6})$/.exec(line.trim())?.[1])
    .filter((name): name is string => name !== undefined);
  const interfaces = hostInterfaces();
  const removed: string[] = [];
  for (const table of tables) {
    const prefix = `${BRIDGE_NAME_PREFIX}${table.slice(INSTALLATION_TABLE_PREFIX.length)}`;
    if (table === keep || interfaces.some((name) => name.startsWith(prefix))) {
      bridgeless.delete(table);
      continue;
    }
    const since = bridgeless.get(table);
    if (since === undefined) {
      bridgeless.set(table, now);
      continue;
    }
    if (now - since < PRUNE_AFTER_MS) continue;
    try {
      await nft(['delete', 'table', 'inet', table]);
      removed.push(table);
    } catch {
      // Removed by another gateway at the same moment.
    }
    bridgeless.delete(table);
  }
  for (const table of bridgeless.keys()) if (!tables.includes(table)) bridgeless.delete(table);
  return removed;
}
