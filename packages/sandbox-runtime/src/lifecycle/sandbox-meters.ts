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
    return { missing: "on Kubernetes, usage comes from the cluster's metrics API (kubectl top), which berth top does not read yet" };
  const cgroups = description.cgroups;
  if (!cgroups)
    return { missing: `the ${description.engine} engine's cgroups are not this host's (a rootless or remote engine), so usage cannot be read here` };
  if (cgroups.manager === 'systemd')
    return { missing: `the ${description.engine} engine uses systemd's cgroup manager, whose sandbox cgroups berth top does not read yet` };
  const parent = description.sharedBound?.parent;
  if (!parent) return { missing: 'terminal.docker_cgroup_parent is "": sandboxes share no bound, under which berth top reads their usage; set it to auto' };
  return { parent, version: cgroups.version };
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

function statValue(text: string | undefined, key: string): number | undefined {
  const match = text === undefined ? null : new RegExp(`^${key} (\\d+)$`, 'm').exec(text);
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

/** The network counters of the namespace of the first process in `cgroupFolder`. */
function readNetwork(cgroupFolder: string, procRoot: string): SandboxMeter['network'] {
  const first = readSmall(path.join(cgroupFolder, 'cgroup.procs'))?.split('\n', 1)[0]?.trim();
  // The kernel's pid, a number; anything else is not opened.
  if (!first || !/^[1-9][0-9]{0,9}$/.test(first)) return null;
  const text = readSmall(path.join(procRoot, first, 'net', 'dev'));
  return text === undefined ? null : parseNetDev(text);
}

/**
 * Every sandbox under the bound `source` names with its counters now, by container id. A child
 * that is no container (the engine's own) or that goes away while read is left out or has
 * `null`s. Reads under `cgroupRoot` and `procRoot` (tests give fake trees).
 */
export function readSandboxMeters(
  source: { readonly parent: string; readonly version: 1 | 2 },
  roots: { readonly cgroupRoot?: string; readonly procRoot?: string } = {},
): Map<string, SandboxMeter> {
  const cgroupRoot = roots.cgroupRoot ?? '/sys/fs/cgroup';
  const procRoot = roots.procRoot ?? '/proc';
  const name = source.parent.replace(/^\/+/, '');
  const v2 = source.version === 2;
  const memory = v2 ? path.join(cgroupRoot, name) : path.join(cgroupRoot, 'memory', name);
  const pids = v2 ? memory : path.join(cgroupRoot, 'pids', name);
  const cpu = v2 ? memory : path.join(cgroupRoot, 'cpuacct', name);
  const meters = new Map<string, SandboxMeter>();
  let children: string[];
  try {
    children = readdirSync(memory, { withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .map((entry) => entry.name);
  } catch {
    return meters;
  }
  for (const child of children) {
    const id = CHILD_NAME.exec(child)?.[1];
    if (!id) continue;
    const memoryStat = readSmall(path.join(memory, child, 'memory.stat'));
    const used = readCount(path.join(memory, child, v2 ? 'memory.current' : 'memory.usage_in_bytes'));
    const inactive = statValue(memoryStat, v2 ? 'inactive_file' : 'total_inactive_file') ?? 0;
    const cpuSeconds = v2
      ? (statValue(readSmall(path.join(cpu, child, 'cpu.stat')), 'usage_usec') ?? Number.NaN) / 1e6
      : (readCount(path.join(cpu, child, 'cpuacct.usage')) ?? Number.NaN) / 1e9;
    meters.set(id, {
      cpuSeconds: Number.isFinite(cpuSeconds) ? cpuSeconds : null,
      memoryBytes: used === null ? null : Math.max(0, used - inactive),
      memoryLimitBytes: readLimit(path.join(memory, child, v2 ? 'memory.max' : 'memory.limit_in_bytes')) ?? null,
      pids: readCount(path.join(pids, child, 'pids.current')),
      pidsLimit: readLimit(path.join(pids, child, 'pids.max')) ?? null,
      network: readNetwork(path.join(pids, child), procRoot),
    });
  }
  return meters;
}
