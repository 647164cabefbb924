import { closeSync, openSync, readdirSync, readSync } from 'node:fs';
import path from 'node:path';
import type { BackendDescription } from '@berth/core';
import { CHILD_NAME } from './fair-share.js';

// What each sandbox uses right now, read from the host's kernel files alone (`berth top`): its
// own cgroup under the shared bound's parent (CPU time, memory, pids, each against its own
// limit) and the network counters of its namespace, through one of its processes' /proc entry.
// The names read are the kernel's (cgroup folders, pids), never a path a user controls, and no
// file inside a user's folders is opened. One folder listing per hierarchy and a few small reads
// per sandbox: no engine call.

/** One sandbox's counters at one moment; `null` where the kernel did not say. */
export interface SandboxMeter {
  /** CPU seconds since its cgroup was made (cgroup v1 `cpuacct.usage`, v2 `cpu.stat` `usage_usec`). */
  readonly cpuSeconds: number | null;
  /** CPU cores in use, where the engine reports a rate rather than a total (a cluster's metrics API). */
  readonly cpuCores?: number | null;
  /** Memory in use, less the page cache the kernel may drop (`inactive_file`), as `docker stats` counts it. */
  readonly memoryBytes: number | null;
  /** Its own memory limit; `null` for none. */
  readonly memoryLimitBytes: number | null;
  readonly pids: number | null;
  /** Its own pids limit; `null` for none. */
  readonly pidsLimit: number | null;
  /** Bytes its network namespace received and sent on every interface but `lo`. */
  readonly network: { readonly receivedBytes: number; readonly sentBytes: number } | null;
}

/** Where the sandboxes' cgroups are read on this host, or why they cannot be. */
export type MeterSource = { readonly parent: string; readonly version: 1 | 2 } | { readonly missing: string };

/**
 * Where `berth top` reads usage, from the backend's description: the shared bound's parent on a
 * local engine with cgroupfs; otherwise one line saying what is missing and why.
 */
export function meterSource(description: Pick<BackendDescription, 'engine' | 'cgroups' | 'sharedBound'>): MeterSource {
  if (description.engine === 'kubernetes')
    return { missing: "on Kubernetes, usage comes from the cluster's resource metrics API (kubectl top's), which this backend does not report" };
  const cgroups = description.cgroups;
  if (!cgroups)
    return { missing: `the ${description.engine} engine's cgroups are not this host's (a rootless or remote engine), so usage cannot be read here` };
  const parent = description.sharedBound?.parent;
  if (cgroups.manager === 'systemd') {
    // The engine puts each sandbox in a scope under the slice it was given as its parent.
    if (!parent || !SLICE.test(parent))
      return {
        missing: `the ${description.engine} engine uses systemd's cgroup manager and the sandboxes' parent is no slice; set terminal.docker_cgroup_parent to auto`,
      };
    return { parent: sliceFolder(parent), version: cgroups.version };
  }
  if (!parent) return { missing: 'terminal.docker_cgroup_parent is "": sandboxes share no bound, under which berth top reads their usage; set it to auto' };
  return { parent, version: cgroups.version };
}

/** A systemd slice's name: no path, no empty level. */
const SLICE = /^[A-Za-z0-9_:@]+(?:-[A-Za-z0-9_:@]+)*\.slice$/;

/**
 * Where systemd makes the cgroup of slice `slice`: each dash is a level below
 * (`berth-a1b2c3.slice` is `berth.slice/berth-a1b2c3.slice`; systemd.slice(5)).
 */
export function sliceFolder(slice: string): string {
  const parts = slice.slice(0, -'.slice'.length).split('-');
  return parts.map((_, index) => `${parts.slice(0, index + 1).join('-')}.slice`).join('/');
}

/** One buffer for every read: the files are small and the reads synchronous. */
const buffer = Buffer.alloc(64 * 1024);

/** A small kernel file's text; `undefined` when it cannot be read. */
function readSmall(file: string): string | undefined {
  let descriptor: number | undefined;
  try {
    descriptor = openSync(file, 'r');
    let length = 0;
    for (;;) {
      const read = readSync(descriptor, buffer, length, buffer.length - length, null);
      if (read === 0 || length + read >= buffer.length) return buffer.toString('utf8', 0, length + read);
      length += read;
    }
  } catch {
    return undefined;
  } finally {
    if (descriptor !== undefined) closeSync(descriptor);
  }
}

/** A count, `max` (or v1's page-rounded "no limit") as `null`; `undefined` when unreadable. */
function readLimit(file: string): number | null | undefined {
  const text = readSmall(file)?.trim();
  if (text === undefined || text === '') return undefined;
  if (text === 'max') return null;
  const value = Number(text);
  if (!Number.isFinite(value) || value < 0) return undefined;
  return value >= 2 ** 60 ? null : value;
}

function readCount(file: string): number | null {
  const value = readLimit(file);
  return value === undefined || value === null ? null : value;
}

/** The patterns of the stat lines read, made once (a refresh reads two per sandbox). */
const STAT_LINES = new Map<string, RegExp>();

function statValue(text: string | undefined, key: string): number | undefined {
  let pattern = STAT_LINES.get(key);
  if (!pattern) {
    pattern = new RegExp(`^${key} (\\d+)$`, 'm');
    STAT_LINES.set(key, pattern);
  }
  const match = text === undefined ? null : pattern.exec(text);
  return match ? Number(match[1]) : undefined;
}

/** Bytes received and sent on every interface but `lo`, from a `/proc/PID/net/dev` text. */
export function parseNetDev(text: string): { receivedBytes: number; sentBytes: number } | null {
  let receivedBytes = 0;
  let sentBytes = 0;
  let interfaces = 0;
  for (const line of text.split('\n')) {
    const colon = line.indexOf(':');
    if (colon < 0) continue;
    const name = line.slice(0, colon).trim();
    const fields = line
      .slice(colon + 1)
      .trim()
      .split(/\s+/)
      .map(Number);
    // Receive: bytes packets errs drop fifo frame compressed multicast; then transmit's bytes.
    if (name === '' || fields.length < 16 || fields.some((field) => !Number.isFinite(field))) continue;
    interfaces++;
    if (name === 'lo') continue;
    receivedBytes += fields[0]!;
    sentBytes += fields[8]!;
  }
  return interfaces === 0 ? null : { receivedBytes, sentBytes };
}

/** The first pid `cgroup.procs` names: the kernel's number, or `undefined` (anything else is never opened). */
function firstPid(cgroupFolder: string, read: (file: string) => string | undefined): string | undefined {
  const first = read(path.join(cgroupFolder, 'cgroup.procs'))?.split('\n', 1)[0]?.trim();
  return first && /^[1-9][0-9]{0,9}$/.test(first) ? first : undefined;
}

/**
 * The network counters of the namespace of the first process in `cgroupFolder`. The pid is read
 * again afterwards and must still be the cgroup's first: a process that ended between the two
 * reads may have had its pid reused by a process of another sandbox or of the host, whose
 * counters would be shown as this sandbox's. Then the reading is `null` for this refresh.
 * `read` reads a small file (tests change the tree between reads).
 */
export function readNetwork(cgroupFolder: string, procRoot: string, read = readSmall): SandboxMeter['network'] {
  const pid = firstPid(cgroupFolder, read);
  if (pid === undefined) return null;
  const text = read(path.join(procRoot, pid, 'net', 'dev'));
  if (text === undefined || firstPid(cgroupFolder, read) !== pid) return null;
  return parseNetDev(text);
}

/**
 * The network counters of every sandbox under the bound folder `folder` (any of v1's hierarchies,
 * or v2's one; each has `cgroup.procs`) whose container id is in `containerIds`, by id, from one
 * listing (a metrics scrape).
 */
export function readSandboxesNetwork(
  folder: string,
  containerIds: ReadonlySet<string>,
  procRoot = '/proc',
): Map<string, { readonly receivedBytes: number; readonly sentBytes: number }> {
  const found = new Map<string, { receivedBytes: number; sentBytes: number }>();
  if (containerIds.size === 0) return found;
  let names: string[];
  try {
    names = readdirSync(folder);
  } catch {
    return found;
  }
  for (const name of names) {
    const id = CHILD_NAME.exec(name)?.[1];
    if (id === undefined || !containerIds.has(id)) continue;
    const network = readNetwork(path.join(folder, name), procRoot);
    if (network) found.set(id, network);
  }
  return found;
}

/** How often the reader reads what changes seldom, ms (`berth top` refreshes every 2 s). */
export const METER_REREAD_MS = {
  /** A sandbox's own memory and pids limits: set at creation, changed only by an engine update. */
  limits: 30_000,
  /** Its network counters (totals, not rates): two opens and a recheck of its first pid. */
  network: 6_000,
  /**
   * The page cache it could drop (`memory.stat`'s `inactive_file`), taken off the memory it uses,
   * which is read every time: the largest file read, and v1's kernel sums it over the hierarchy.
   */
  pageCache: 6_000,
} as const;

/** What the reader keeps of one child cgroup between readings. */
interface Remembered {
  pageCacheAt: number;
  inactiveBytes: number;
  limitsAt: number;
  memoryLimitBytes: number | null;
  pidsLimit: number | null;
  networkAt: number;
  network: SandboxMeter['network'];
}

/** Reads every sandbox's counters now, by container id (see `createSandboxMeterReader`). */
export type SandboxMeterReader = () => Map<string, SandboxMeter>;

/**
 * A reader of every sandbox under the bound `source` names, by container id. A child that is no
 * container (the engine's own) or that goes away while read is left out or has `null`s. Usage
 * (CPU, memory, pids) is read at every call; the limits, network counters and page cache only
 * every `METER_REREAD_MS` per child (they cost `berth top` half its reads with 100 sandboxes),
 * and anew for a child not seen at the last call. Reads under `cgroupRoot` and
 * `procRoot` (tests give fake trees); `now` is the clock (tests).
 */
export function createSandboxMeterReader(
  source: { readonly parent: string; readonly version: 1 | 2 },
  options: { readonly cgroupRoot?: string; readonly procRoot?: string; readonly now?: () => number } = {},
): SandboxMeterReader {
  const cgroupRoot = options.cgroupRoot ?? '/sys/fs/cgroup';
  const procRoot = options.procRoot ?? '/proc';
  const now = options.now ?? Date.now;
  const name = source.parent.replace(/^\/+/, '');
  const v2 = source.version === 2;
  const memory = v2 ? path.join(cgroupRoot, name) : path.join(cgroupRoot, 'memory', name);
  const pids = v2 ? memory : path.join(cgroupRoot, 'pids', name);
  const cpu = v2 ? memory : path.join(cgroupRoot, 'cpuacct', name);
  let remembered = new Map<string, Remembered>();

  return () => {
    const meters = new Map<string, SandboxMeter>();
    let children: string[];
    try {
      children = readdirSync(memory, { withFileTypes: true })
        .filter((entry) => entry.isDirectory())
        .map((entry) => entry.name);
    } catch {
      remembered = new Map();
      return meters;
    }
    const at = now();
    const kept = new Map<string, Remembered>();
    for (const child of children) {
      const id = CHILD_NAME.exec(child)?.[1];
      if (!id) continue;
      const used = readCount(path.join(memory, child, v2 ? 'memory.current' : 'memory.usage_in_bytes'));
      const cpuSeconds = v2
        ? (statValue(readSmall(path.join(cpu, child, 'cpu.stat')), 'usage_usec') ?? Number.NaN) / 1e6
        : (readCount(path.join(cpu, child, 'cpuacct.usage')) ?? Number.NaN) / 1e9;
      const fresh: Remembered = remembered.get(child) ?? {
        pageCacheAt: -Infinity,
        inactiveBytes: 0,
        limitsAt: -Infinity,
        memoryLimitBytes: null,
        pidsLimit: null,
        networkAt: -Infinity,
        network: null,
      };
      if (at - fresh.pageCacheAt >= METER_REREAD_MS.pageCache) {
        fresh.pageCacheAt = at;
        fresh.inactiveBytes = statValue(readSmall(path.join(memory, child, 'memory.stat')), v2 ? 'inactive_file' : 'total_inactive_file') ?? 0;
      }
      if (at - fresh.limitsAt >= METER_REREAD_MS.limits) {
        fresh.limitsAt = at;
        fresh.memoryLimitBytes = readLimit(path.join(memory, child, v2 ? 'memory.max' : 'memory.limit_in_bytes')) ?? null;
        fresh.pidsLimit = readLimit(path.join(pids, child, 'pids.max')) ?? null;
      }
      if (at - fresh.networkAt >= METER_REREAD_MS.network) {
        fresh.networkAt = at;
        fresh.network = readNetwork(path.join(pids, child), procRoot);
      }
      kept.set(child, fresh);
      meters.set(id, {
        cpuSeconds: Number.isFinite(cpuSeconds) ? cpuSeconds : null,
        memoryBytes: used === null ? null : Math.max(0, used - fresh.inactiveBytes),
        memoryLimitBytes: fresh.memoryLimitBytes,
        pids: readCount(path.join(pids, child, 'pids.current')),
        pidsLimit: fresh.pidsLimit,
        network: fresh.network,
      });
    }
    // A child gone from the listing is forgotten: one made anew under its name is read afresh.
    remembered = kept;
    return meters;
  };
}

/** Every sandbox's counters now, read once (no reading is kept). */
export function readSandboxMeters(
  source: { readonly parent: string; readonly version: 1 | 2 },
  roots: { readonly cgroupRoot?: string; readonly procRoot?: string } = {},
): Map<string, SandboxMeter> {
  return createSandboxMeterReader(source, roots)();
}
