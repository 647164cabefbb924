import type { BackendDescription, TerminalConfig } from '@berth/core';
import { capacityReport, describeRunningCap, readBoundShares, SHARE_FLOOR_PIDS, type HostSize } from '@berth/sandbox-runtime';
import type { DoctorCheck } from './doctor-report.js';

/** The running sandboxes' limits added up against the host: memory, CPUs, pids against pid_max. */
export function capacityCheck(config: TerminalConfig, host: HostSize, sharedBound?: BackendDescription['sharedBound']): DoctorCheck {
  if (config.docker_max_running === 'auto' && sharedBound?.enforced)
    return { name: 'capacity', status: 'ok', detail: describeRunningCap(config, host, sharedBound) };
  const report = capacityReport(config, host);
  const cap = config.docker_max_running === 'auto' ? `${report.maxRunning} at once (docker_max_running: auto)` : `${report.maxRunning} at once`;
  const sums =
    `their limits add up to ${report.memoryMb.sum} of ${report.memoryMb.host} MB of memory, ${report.cpus.sum} of ${report.cpus.host} CPUs and ` +
    `${report.pids.sum} of ${report.pids.host} pids (pid_max); at most ${config.docker_max_sandboxes || 'any number of'} sandboxes ` +
    'exist (docker_max_sandboxes)';
  if (report.maxRunning === 0) {
    return {
      name: 'capacity',
      status: 'warning',
      detail: `docker_max_running is 0: any number of sandboxes run at once, each with ${config.container_memory} MB and ${config.docker_pids_limit} pids`,
      fix: 'set terminal.docker_max_running to auto',
    };
  }
  if (report.memoryMb.sum > report.memoryMb.host || report.pids.sum > report.pids.host) {
    return {
      name: 'capacity',
      status: 'problem',
      detail: `up to ${cap}: ${sums}, more than the host has`,
      fix: 'lower terminal.docker_max_running (or set it to auto), container_memory or docker_pids_limit',
    };
  }
  return { name: 'capacity', status: 'ok', detail: `up to ${cap}: ${sums}` };
}

/** How many sandboxes `sharesCheck` names one by one; the rest are counted. */
const SHARES_NAMED = 10;

/**
 * Each running sandbox's fair share of the shared bound and what it holds (all its memory: tmpfs
 * and page cache too), read from the host's cgroups; the largest first, over its share said.
 * Undefined where the bound is not enforced on this host.
 */
export async function sharesCheck(
  config: TerminalConfig,
  sharedBound?: BackendDescription['sharedBound'],
  cgroupRoot?: string,
): Promise<DoctorCheck | undefined> {
  if (!sharedBound?.enforced || !sharedBound.parent) return undefined;
  const read = await readBoundShares(
    { parent: sharedBound.parent, memoryMb: sharedBound.memoryMb, pids: sharedBound.pids },
    { memoryBytes: config.docker_share_floor * 2 ** 20, pids: Math.min(SHARE_FLOOR_PIDS, config.docker_pids_limit) },
    cgroupRoot,
  ).catch(() => undefined);
  if (!read) return undefined;
  const { shares, holdings } = read;
  const mb = (bytes: number): number => Math.round(bytes / 2 ** 20);
  if (holdings.length === 0) return { name: 'shares', status: 'ok', detail: `no sandbox runs under ${sharedBound.parent}` };
  const sorted = [...holdings].sort((a, b) => b.memoryBytes - a.memoryBytes);
  const each = sorted.slice(0, SHARES_NAMED).map((holding) => {
    const over = holding.memoryBytes > shares.memoryBytes || holding.pids > shares.pids ? ' (over its share)' : '';
    return `${holding.id.slice(0, 12)} ${mb(holding.memoryBytes)} MB, ${holding.pids} pids${over}`;
  });
  const more = sorted.length > SHARES_NAMED ? `; and ${sorted.length - SHARES_NAMED} more` : '';
  return {
    name: 'shares',
    status: 'ok',
    detail:
      `${holdings.length} sandboxes under ${sharedBound.parent}, each one's share ${mb(shares.memoryBytes)} MB and ${shares.pids} pids ` +
      `(when the bound runs short, the one holding the most gives way); in use (container id): ${each.join('; ')}${more}`,
  };
}

/**
 * The frozen sandboxes (idle past `lifetime_seconds`, `docker_freeze_seconds`): how many, and
 * what memory they still hold (read from the shared bound where it is enforced on this host),
 * since a frozen sandbox's memory stays held until it is stopped.
 */
export async function frozenCheck(
  config: TerminalConfig,
  sandboxes: readonly { readonly state: string; readonly containerId: string }[],
  sharedBound?: BackendDescription['sharedBound'],
  cgroupRoot?: string,
): Promise<DoctorCheck> {
  if (config.docker_freeze_seconds === 0) {
    return { name: 'frozen', status: 'ok', detail: 'freezing is off (docker_freeze_seconds: 0): idle sandboxes stop at lifetime_seconds' };
  }
  const frozen = sandboxes.filter((sandbox) => sandbox.state === 'paused');
  const when =
    `idle sandboxes are frozen at lifetime_seconds (${config.lifetime_seconds} s) and stopped once frozen for docker_freeze_seconds ` +
    `(${config.docker_freeze_seconds} s), or sooner by docker_max_running, which counts them as running`;
  if (frozen.length === 0) return { name: 'frozen', status: 'ok', detail: `no sandbox is frozen; ${when}` };
  const read =
    sharedBound?.enforced && sharedBound.parent
      ? await readBoundShares(
          { parent: sharedBound.parent, memoryMb: sharedBound.memoryMb, pids: sharedBound.pids },
          { memoryBytes: 0, pids: 0 },
          cgroupRoot,
        ).catch(() => undefined)
      : undefined;
  const ids = new Set(frozen.map((sandbox) => sandbox.containerId));
  const held = read?.holdings.filter((holding) => ids.has(holding.id)).reduce((sum, holding) => sum + holding.memoryBytes, 0);
  const memory =
    held === undefined
      ? `their memory stays held while frozen (up to container_memory, ${config.container_memory} MB, each)`
      : `holding ${Math.round(held / 2 ** 20)} MB of the shared bound's ${sharedBound!.memoryMb} MB while frozen`;
  return { name: 'frozen', status: 'ok', detail: `${frozen.length} sandbox${frozen.length === 1 ? ' is' : 'es are'} frozen, ${memory}; ${when}` };
}

/**
 * The warm pool (`docker_pool_size`, docs/sandbox-runtime.md): what it holds ready, and what that
 * costs; on Kubernetes, that the key does nothing.
 */
export function poolCheck(config: TerminalConfig, backendName: string): DoctorCheck {
  const size = config.docker_pool_size;
  if (size === 0) return { name: 'pool', status: 'ok', detail: "no warm pool (docker_pool_size: 0): a new user's sandbox is made for their first command" };
  if (backendName === 'kubernetes') {
    return {
      name: 'pool',
      status: 'warning',
      detail: `docker_pool_size (${size}) has no effect on Kubernetes: a new user's Pod is made for their first command`,
      fix: 'remove docker_pool_size (docs/backend-kubernetes.md)',
    };
  }
  return {
    name: 'pool',
    status: 'ok',
    detail:
      `a serving process (the plugin, berth serve) keeps ${size} started sandbox${size === 1 ? '' : 'es'} ready for new users, ` +
      'each handed to one new user for good; they count in docker_max_sandboxes and the running caps, and are made only while there is room',
  };
}
