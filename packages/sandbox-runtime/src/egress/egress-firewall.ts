import { SandboxError, type HostLogger } from '@berth/core';
import { cidrWithin } from '@berth/core/driver';
import { egressTableName, existingInstallationTag, installationTableName, installationTag } from './egress-names.js';
import { egressRuleset, installationRuleset } from './egress-rulesets.js';
import { findNft, nft, tableExists } from './nft.js';
import { hasInstallationBridge, pruneInstallationTables } from './prune-installation-tables.js';
import { hostAddresses, hostResolvers, learnedAddressProblem, resolveEgressEntry, UNKNOWN_TTL_SECONDS, type EgressException } from './resolve-egress-entry.js';

// The names, the rulesets, the resolving of exceptions and the pruning live in files of their
// own; this module stays the one the rest of the runtime (and its index) imports them from.
export {
  BRIDGE_NAME_PREFIX,
  EGRESS_PROXY_PORT,
  egressTableName,
  INSTALLATION_TABLE_PREFIX,
  installationTableName,
  installationTag,
  sandboxBridgeName,
} from './egress-names.js';
export { BLOCKED_RANGES, egressRuleset, ENGINE_BRIDGE_PATTERNS, EXACT_EXCEPTION_MARK, installationRuleset, RANGE_EXCEPTION_MARK } from './egress-rulesets.js';
export { hasInstallationBridge, PRUNE_AFTER_MS, pruneInstallationTables } from './prune-installation-tables.js';
export {
  hostResolvers,
  learnedAddressProblem,
  resolveEgressEntry,
  resolveEgressException,
  UNKNOWN_TTL_SECONDS,
  type EgressException,
} from './resolve-egress-entry.js';

/**
 * The egress policy: a sandbox reaches the internet, but not the gateway host's own addresses,
 * other sandboxes, private ranges (RFC 1918, CGNAT), link-local (cloud metadata), loopback,
 * multicast or reserved ranges — unless `docker_egress_allow` lists them. DNS to the host's own
 * resolvers and to the sandbox's own network gateway stays open.
 *
 * Enforced on the engine host by nftables, in two kinds of tables of Berth's own:
 *
 * - the pool's table (`berth_<digest of the pool>`), the same for every installation on that
 *   pool: it refuses everything the policy refuses to every source in `docker_network_pool`,
 *   and lets through only what an installation's table marked as one of its exceptions. Its
 *   order makes sure no exception ever reopens the pool (other sandboxes), a Berth bridge of
 *   another pool, the host itself (only an exception naming one address opens a host address),
 *   or link-local (only an exception naming one address opens one: ranges never do); nor does a
 *   range reach a packet the host DNAT'd (a published port) or another engine's containers.
 * - one table per installation (`berth_inst_<tag>`, an installation being a sandbox root with its
 *   own installation key): it marks the packets of that installation's own sandboxes (their
 *   bridges are named `bth<tag>…`, see {@link sandboxBridgeName}) that the sandbox sent to one
 *   of its exceptions (the packet's original destination, before any DNAT). Two installations
 *   on one pool each keep their own exceptions; a table that is missing (not yet installed,
 *   pruned, retired with the installation's last sandbox) lets no exception through — the policy
 *   fails closed — and a new sandbox gets it back before it starts ({@link EgressFirewall.confirm}).
 *
 * Base chains hook `forward` and `input` just before the usual filter chains, so neither Docker's
 * nor netavark's own rule ordering (re-asserted at each restart) can bypass them: a `reject` in any
 * base chain is final, whatever the others accept. IPv6 is turned off in the sandboxes themselves
 * (a sysctl), so there is no IPv6 path to police. Host names among the exceptions are resolved
 * again on a schedule (their TTL, within {@link MIN_REFRESH_SECONDS}…{@link MAX_REFRESH_SECONDS});
 * one that does not resolve is logged and skipped, never a reason to stop every sandbox. An
 * address a name resolves to opens what a range would, and never link-local, loopback, the host's
 * own addresses or the pool: checked at every refresh, a skipped one said once in a warning.
 */
export interface EgressFirewall {
  /** Why the policy is not enforced here, or `undefined` when it is (or networking is off). */
  readonly unenforced: string | undefined;
  /** Installs (or re-installs) the tables; once per process, again after a failure. */
  ensure(): Promise<void>;
  /**
   * Puts the installation's table back when it went missing since {@link ensure} (removed by
   * {@link retire} in another process of the installation): asked once a new sandbox's network,
   * its bridge, exists, just before the sandbox starts.
   */
  confirm(): Promise<void>;
  /**
   * Removes the installation's table once it has no sandbox left (`inUse` says false, and no
   * bridge of its tag is on the host), so that a CLI's last `berth rm` leaves no table nothing
   * owns; the pool's table stays. A bridge of the installation that appeared meanwhile (another
   * process making a sandbox) gets the table back at once. Returns whether it was removed.
   */
  retire(inUse: () => Promise<boolean>): Promise<boolean>;
  /** Stops re-resolving host names; the tables stay (the sandboxes keep running). */
  close(): void;
  /**
   * The exceptions in force now (`docker_egress_allow`, names as last resolved): what the egress
   * proxy, which runs outside the firewall, applies to its own connections too. Empty before
   * {@link ensure} resolved them.
   */
  exceptions(): readonly EgressException[];
}

/** The firewall of an engine that enforces the egress policy itself (a cluster's NetworkPolicy): nothing to do on this host. */
export const ENFORCED_BY_ENGINE: EgressFirewall = {
  unenforced: undefined,
  ensure: async () => undefined,
  confirm: async () => undefined,
  retire: async () => false,
  close: () => undefined,
  exceptions: () => [],
};

/** Shortest wait before a host name is resolved again, seconds (a TTL of 0 is not a reason to spin). */
export const MIN_REFRESH_SECONDS = 10;
/** Longest wait between refreshes, seconds: names are re-resolved at least this often. */
export const MAX_REFRESH_SECONDS = 300;

/**
 * How often the gateway looks for its two tables, seconds: one removed from outside (a reload of
 * the host's firewall flushes every table) is put back within this, so sandboxes are open to the
 * host and private networks for seconds at most, not until the next refresh.
 */
export const TABLE_CHECK_SECONDS = 10;

/** Why the egress policy cannot be enforced by this process, or `undefined`. */
export function egressUnenforcedReason(options: { network: boolean; poolNetworks: boolean; engine: string }): string | undefined {
  if (!options.network) return undefined;
  const risk = 'sandboxes can reach the gateway host, private networks and cloud metadata (169.254.169.254)';
  if (!options.poolNetworks) {
    const why = 'rootless user-mode networking, a remote engine, or a cluster';
    return (
      `the egress policy is not enforced: ${options.engine} sandboxes here are not on networks of terminal.docker_network_pool on this host ` +
      `(${why}); ${risk}`
    );
  }
  if (process.platform !== 'linux') return `the egress policy is not enforced: it needs Linux nftables; ${risk}`;
  if (process.getuid?.() !== 0)
    return `the egress policy is not enforced: firewall rules need root, and the gateway runs as uid ${process.getuid?.()}; ${risk}`;
  if (!findNft()) return `the egress policy is not enforced: nft not found (install nftables); ${risk}`;
  return undefined;
}

/** Builds the egress policy of one runtime. */
export function createEgressFirewall(options: {
  pool: string;
  allow: readonly string[];
  network: boolean;
  poolNetworks: boolean;
  engine: string;
  /** The installation's sandbox root (`{sandbox_dir}/docker`): its tag names its table and bridges. */
  sandboxRoot?: string | undefined;
  logger?: HostLogger | undefined;
  resolvers?: readonly string[];
  /** Allow-list mode (`docker_egress: allowlist`): past the host, only DNS and the exceptions; the rest through the egress proxy. */
  allowlist?: boolean;
}): EgressFirewall {
  const unenforced = egressUnenforcedReason(options);
  const { logger } = options;
  let installed: Promise<void> | undefined;
  let timer: NodeJS.Timeout | undefined;
  let watcher: NodeJS.Timeout | undefined;
  let closed = false;
  // The last exceptions installed, as text, so a refresh that changes nothing installs nothing.
  let current = '';
  let inForce: readonly EgressException[] = [];
  // Names that did not resolve at the last try, so each is logged once until it resolves again.
  const unresolved = new Set<string>();
  // Addresses learned from names that the last refresh skipped (`entry address`), so each is
  // said once while the name keeps resolving to it, not at every refresh.
  let skipped = new Set<string>();

  const resolveAll = async (): Promise<{ exceptions: EgressException[]; refreshSeconds: number }> => {
    let refreshSeconds = MAX_REFRESH_SECONDS;
    const exceptions: EgressException[] = [];
    // Read at every refresh: a name is checked against the host's addresses as they are now.
    const local = hostAddresses();
    const skippedNow = new Set<string>();
    await Promise.all(
      options.allow.map(async (entry) => {
        try {
          const resolved = await resolveEgressEntry(entry);
          if (unresolved.delete(entry)) logger?.info(`berth: terminal.docker_egress_allow: ${entry} resolves again; its exception is in force`);
          for (const exception of resolved.exceptions) {
            const address = exception.cidr.replace(/\/32$/, '');
            const problem = exception.learned
              ? learnedAddressProblem(address, { pool: options.pool, hostAddresses: local })
              : cidrWithin(exception.cidr, options.pool)
                ? { what: `inside terminal.docker_network_pool ${options.pool}, the sandboxes' own addresses, which no exception opens`, fix: 'remove it' }
                : undefined;
            if (problem === undefined) {
              exceptions.push(exception);
              continue;
            }
            const key = `${entry} ${address}`;
            skippedNow.add(key);
            if (!skipped.has(key)) {
              logger?.warn(`berth: terminal.docker_egress_allow: ${entry} resolves to ${address}, ${problem.what}; skipped (${problem.fix})`);
            }
          }
          if (resolved.ttl !== undefined) refreshSeconds = Math.min(refreshSeconds, Math.max(MIN_REFRESH_SECONDS, resolved.ttl));
        } catch (error) {
          refreshSeconds = Math.min(refreshSeconds, UNKNOWN_TTL_SECONDS);
          if (!unresolved.has(entry)) {
            unresolved.add(entry);
            logger?.warn(`berth: ${(error as Error).message}; skipped, and tried again every ${UNKNOWN_TTL_SECONDS} s — the other exceptions are in force`);
          }
        }
      }),
    );
    skipped = skippedNow;
    return { exceptions, refreshSeconds };
  };

  const tableOf = (): string => installationTableName(installationTag({ sandboxRoot: options.sandboxRoot, pool: options.pool }));

  /** Installs the installation's table when its exceptions changed (or always), prunes tables of installations that are gone, schedules the next refresh. */
  const refresh = async (always: boolean): Promise<void> => {
    const tag = installationTag({ sandboxRoot: options.sandboxRoot, pool: options.pool });
    const { exceptions, refreshSeconds } = await resolveAll();
    const text = JSON.stringify(exceptions.map((exception) => `${exception.cidr}:${exception.port ?? ''}:${exception.learned ? 'learned' : ''}`).sort());
    if (always || text !== current) {
      try {
        await nft(
          ['-f', '-'],
          installationRuleset({ tag, exceptions, ...(options.allowlist ? { allowlist: { resolvers: options.resolvers ?? hostResolvers() } } : {}) }),
        );
      } catch (error) {
        throw new SandboxError(
          'EGRESS_RULES_FAILED',
          `could not install the egress rules (nft: ${(error as Error).message}); no sandbox starts with networking until they are in — check ` +
            `nftables, or set terminal.docker_network: false`,
        );
      }
      if (!always) logger?.info(`berth: egress exceptions of table inet ${installationTableName(tag)} changed (${exceptions.length} in force)`);
      current = text;
      inForce = exceptions;
    }
    await pruneInstallationTables(installationTableName(tag)).catch(() => []);
    schedule(refreshSeconds);
  };

  const schedule = (seconds: number): void => {
    if (closed) return;
    clearTimeout(timer);
    timer = setTimeout(() => {
      // A refresh re-installs a table that went missing (the pool's, removed by hand; the
      // installation's, pruned by another gateway), and the installation's when a name moved.
      void (async () => {
        if (!(await tableExists(egressTableName(options.pool)))) await installPool();
        await refresh(!(await tableExists(tableOf())));
      })().catch((error: unknown) => {
        logger?.warn(`berth: ${(error as Error).message}`);
        schedule(UNKNOWN_TTL_SECONDS);
      });
    }, seconds * 1000);
    timer.unref();
  };

  const installPool = async (): Promise<void> => {
    try {
      await nft(['-f', '-'], egressRuleset({ pool: options.pool, resolvers: options.resolvers ?? hostResolvers() }));
    } catch (error) {
      throw new SandboxError(
        'EGRESS_RULES_FAILED',
        `could not install the egress rules (nft: ${(error as Error).message}); no sandbox starts with networking until they are in — check ` +
          `nftables, or set terminal.docker_network: false`,
      );
    }
  };

  /** Puts back a table that went missing: the pool's (said: only something outside removes it), or the installation's (another gateway may prune it). */
  const putBackMissing = async (): Promise<void> => {
    if (closed) return;
    const pool = egressTableName(options.pool);
    if (!(await tableExists(pool))) {
      logger?.warn(`berth: nftables table inet ${pool} (the egress policy of ${options.pool}) was removed from outside; putting it back`);
      await installPool();
    }
    if (!(await tableExists(tableOf()))) await refresh(true);
  };

  const install = async (): Promise<void> => {
    await installPool();
    await refresh(true);
    clearInterval(watcher);
    watcher = setInterval(
      () => void putBackMissing().catch((error: unknown) => logger?.warn(`berth: ${(error as Error).message}`)),
      TABLE_CHECK_SECONDS * 1000,
    );
    watcher.unref();
    logger?.info(
      `berth: egress rules for ${options.pool} in nftables tables inet ${egressTableName(options.pool)} and inet ${tableOf()} ` +
        `(${JSON.parse(current).length} exception(s))`,
    );
  };

  const firewall: EgressFirewall = {
    unenforced,
    ensure() {
      if (!options.network || unenforced) return Promise.resolve();
      installed ??= install().catch((error: unknown) => {
        installed = undefined;
        throw error;
      });
      return installed;
    },
    async confirm() {
      if (!options.network || unenforced || installed === undefined || closed) return;
      await installed;
      if (!(await tableExists(tableOf()))) await refresh(true);
    },
    async retire(inUse) {
      const tag = options.network && !unenforced ? existingInstallationTag({ sandboxRoot: options.sandboxRoot, pool: options.pool }) : undefined;
      if (tag === undefined || closed) return false;
      const table = installationTableName(tag);
      if (hasInstallationBridge(tag) || !(await tableExists(table)) || (await inUse())) return false;
      // This process installs it again (and watches it again) with its next sandbox.
      clearTimeout(timer);
      clearInterval(watcher);
      installed = undefined;
      current = '';
      inForce = [];
      await nft(['delete', 'table', 'inet', table]).catch(() => undefined);
      if (hasInstallationBridge(tag)) await firewall.ensure();
      logger?.info(`berth: removed nftables table inet ${table}: no sandbox of this installation is left`);
      return true;
    },
    close() {
      closed = true;
      clearTimeout(timer);
      clearInterval(watcher);
    },
    exceptions: () => inForce,
  };
  return firewall;
}
