import { readFileSync } from 'node:fs';
import os from 'node:os';
import type { SandboxSettings } from '../sandbox-settings.js';

/** How full the shared bound may get (memory or pids) before idle sandboxes are stopped to make room. */
export const PRESSURE_HIGH = 0.85;

/** What the sandboxes' limits must fit in. */
export interface HostSize {
  readonly memoryMb: number;
  readonly cpus: number;
  /** `/proc/sys/kernel/pid_max`: every process of every sandbox takes one. */
  readonly pidMax: number;
}

/** Shares of the host the running sandboxes' limits may add up to (CPU is compressible, memory and pids are not). */
const MEMORY_SHARE = 0.9;
const PID_SHARE = 0.5;
const CPU_OVERCOMMIT = 4;

/** The size of the machine Berth runs on (the engine's, when it is local). */
export function localHostSize(): HostSize {
  let pidMax = 32_768;
  try {
    pidMax = Number.parseInt(readFileSync('/proc/sys/kernel/pid_max', 'utf8'), 10) || pidMax;
  } catch {
    // Not Linux, or no /proc: the kernel's old default.
  }
  return { memoryMb: Math.floor(os.totalmem() / 1024 / 1024), cpus: os.availableParallelism(), pidMax };
}

/**
 * How many sandboxes may run at once with `docker_max_running: auto`: as many as fit, all at
 * their limits, in 90% of the host's memory, half its `pid_max`, and four times its CPUs —
 * at least one. Beyond it the least recently used idle sandbox is stopped (files kept).
 */
export function autoMaxRunning(settings: Pick<SandboxSettings, 'container_memory' | 'container_cpu' | 'docker_pids_limit'>, host: HostSize): number {
  const byMemory = Math.floor((host.memoryMb * MEMORY_SHARE) / settings.container_memory);
  const byPids = Math.floor((host.pidMax * PID_SHARE) / settings.docker_pids_limit);
  const byCpus = Math.floor((host.cpus * CPU_OVERCOMMIT) / settings.container_cpu);
  return Math.max(1, Math.min(byMemory, byPids, byCpus));
}

/** The cap on running sandboxes the settings mean on this host; 0 means none. */
export function maxRunningOf(
  settings: Pick<SandboxSettings, 'docker_max_running' | 'container_memory' | 'container_cpu' | 'docker_pids_limit'>,
  host: HostSize,
): number {
  return settings.docker_max_running === 'auto' ? autoMaxRunning(settings, host) : settings.docker_max_running;
}

/** What `berth doctor` shows: the running sandboxes' limits added up, against the host. */
export function capacityReport(
  settings: Pick<SandboxSettings, 'docker_max_running' | 'container_memory' | 'container_cpu' | 'docker_pids_limit'>,
  host: HostSize,
) {
  const running = maxRunningOf(settings, host);
  return {
    maxRunning: running,
    memoryMb: { sum: running * settings.container_memory, host: host.memoryMb },
    cpus: { sum: running * settings.container_cpu, host: host.cpus },
    pids: { sum: running * settings.docker_pids_limit, host: host.pidMax },
  };
}

/**
 * One line saying how many sandboxes may run at once and why, as `berth doctor` and `berth ls`
 * print it: with `auto` and the shared bound in force, no count (idle sandboxes stop when the
 * bound fills up); else the count and what it comes from.
 */
export function describeRunningCap(
  settings: Pick<SandboxSettings, 'docker_max_running' | 'container_memory' | 'container_cpu' | 'docker_pids_limit'>,
  host: HostSize,
  sharedBound?: { readonly memoryMb: number; readonly pids: number; readonly enforced: boolean },
): string {
  if (settings.docker_max_running === 0) return 'any number of sandboxes may run at once (docker_max_running: 0)';
  if (settings.docker_max_running === 'auto' && sharedBound?.enforced) {
    return (
      `any number of sandboxes may run at once within their shared bound (${sharedBound.memoryMb} MB, ${sharedBound.pids} pids); when it is ` +
      `${Math.round(PRESSURE_HIGH * 100)} % used, the least recently used idle ones that hold memory stop (docker_max_running: auto)`
    );
  }
  const count = maxRunningOf(settings, host);
  return settings.docker_max_running === 'auto'
    ? `${count} sandboxes may run at once: as many as fit the host with their limits added up, since no shared bound holds them (docker_max_running: auto)`
    : `${count} sandboxes may run at once (docker_max_running)`;
}
