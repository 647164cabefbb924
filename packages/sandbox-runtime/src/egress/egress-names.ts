import { createHash, createHmac } from 'node:crypto';
import { loadInstallationKey, readInstallationKey } from '@berth/core/driver';

// The names the egress policy knows things by on the host: the nftables table of a pool, the
// table of an installation, and the bridges of an installation's sandbox networks.

/**
 * The TCP port of the egress proxy (docs/brokered-secrets.md) on each sandbox network's gateway:
 * the same for every installation (each listens only on its own sandboxes' gateways), one above
 * the usual proxy port, so that a proxy the host already runs on 3128 does not clash.
 */
export const EGRESS_PROXY_PORT = 3129;

/** The first letters of every Berth sandbox bridge's interface name. */
export const BRIDGE_NAME_PREFIX = 'bth';

/** The nftables table of a pool, the same for every installation on it (earlier releases' one table per pool, by name). */
export const egressTableName = (pool: string): string => `berth_${createHash('sha256').update(pool).digest('hex').slice(0, 10)}`;

/** The first letters of every installation table's name; the rest is its {@link installationTag}. */
export const INSTALLATION_TABLE_PREFIX = 'berth_inst_';

/** The nftables table of one installation: its exceptions, for its own sandboxes' bridges. */
export const installationTableName = (tag: string): string => `${INSTALLATION_TABLE_PREFIX}${tag}`;

const poolTag = (pool: string): string => createHash('sha256').update(`pool:${pool}`).digest('hex').slice(0, 6);
const keyTag = (key: Buffer): string => createHmac('sha256', key).update('berth egress installation').digest('hex').slice(0, 6);

/**
 * Six hex digits that tell one installation's sandbox bridges and egress table from another's
 * on the host: keyed with the sandbox root's installation key, so they are stable across
 * restarts and releases. Without a sandbox root (a runtime used on its own), a digest of the pool.
 */
export function installationTag(options: { sandboxRoot?: string | undefined; pool: string }): string {
  if (options.sandboxRoot === undefined) return poolTag(options.pool);
  return keyTag(loadInstallationKey(options.sandboxRoot));
}

/**
 * {@link installationTag} when the installation already has its key, else `undefined`; creates
 * nothing. Without a key there is no sandbox of the installation, hence no bridge and no table
 * of its tag: what only describes (`berth ls`, `doctor`) says so without making one.
 */
export function existingInstallationTag(options: { sandboxRoot?: string | undefined; pool: string }): string | undefined {
  if (options.sandboxRoot === undefined) return poolTag(options.pool);
  const key = readInstallationKey(options.sandboxRoot);
  return key === undefined ? undefined : keyTag(key);
}

/**
 * The interface name of a sandbox network's bridge: `bth`, the installation's tag and six hex
 * digits of the network's name (15 characters, Linux's limit). The installation's egress table
 * knows its sandboxes by this prefix, so nothing has to be kept in step as networks come and go.
 */
export function sandboxBridgeName(tag: string, networkName: string): string {
  return `${BRIDGE_NAME_PREFIX}${tag}${createHash('sha256').update(networkName).digest('hex').slice(0, 6)}`;
}
