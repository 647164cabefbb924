import type { SandboxInfo, TerminalConfig } from '@berth/core';
import type { AuditReading, AuditTally, SandboxMeter } from '@berth/sandbox-runtime';
import { escapeForDisplay } from '@berth/core';
import { sandboxOwner, toSandboxRecord } from './sandbox-record.js';

// `berth top`'s rows: a sandbox from the engine's one listing, its meters read twice from the
// kernel (CPU % is the CPU time between them over the wall time), the audit file's counts, and
// which per-user limit it is near. Pure: top-command.ts reads, this computes and formats.

/** A share of a per-user limit at which `berth top` says a sandbox is near it. */
export const NEAR_SHARE = 0.8;
/** How long a refusal at a per-user limit says its user is at it (the commands-per-minute window). */
const REFUSAL_FRESH_MS = 60_000;

/** One per-user limit a sandbox's user is near or at. */
export interface NearLimit {
  /** The key, e.g. `user_commands_per_minute`. */
  readonly limit: 'user_commands_per_minute' | 'user_concurrent_commands' | 'user_cpu_seconds_per_day';
  /** What was seen, e.g. `25 of 30 in the last minute`, or `refused at 23:04:11`. */
  readonly detail: string;
}

/** One sandbox as `berth top --once --json` prints it (docs/cli.md). */
export interface TopRow {
  readonly scope: string;
  readonly kind: 'user' | 'task';
  readonly platform: string | null;
  readonly user: string | null;
  readonly task: string | null;
  /** The host profile the sandbox belongs to; `null` for the default one. */
  readonly profile: string | null;
  /** The engine's name, as the audit file's `sandbox` names it. */
  readonly sandbox: string;
  readonly containerId: string;
  readonly state: string;
  /** CPU time over wall time between two readings, in % of one core (200 is two cores busy). */
  readonly cpuPercent: number | null;
  readonly memory: { readonly usedMb: number; readonly limitMb: number | null } | null;
  readonly processes: { readonly current: number; readonly limit: number | null } | null;
  /** Its own disk against `container_disk`, as `berth ls` says. */
  readonly disk: { readonly usedMb: number; readonly limitMb: number } | null;
  readonly network: { readonly receivedBytes: number; readonly sentBytes: number } | null;
  /** Commands that ran (or failed) in the last hour, from the audit file; `null` without one. */
  readonly commandsLastHour: number | null;
  /** ISO time of its last command. */
  readonly lastCommand: string | null;
  readonly lastCommandSecondsAgo: number | null;
  readonly near: readonly NearLimit[];
}

/** Two readings of the meters and the wall time (ms, monotonic) each was read at. */
export interface MeterReadings {
  readonly before: { readonly at: number; readonly meters: ReadonlyMap<string, SandboxMeter> };
  readonly after: { readonly at: number; readonly meters: ReadonlyMap<string, SandboxMeter> };
}

const MB = 2 ** 20;
const round = (value: number, digits = 1): number => Math.round(value * 10 ** digits) / 10 ** digits;

function cpuPercent(id: string, readings: MeterReadings): number | null {
  const cores = readings.after.meters.get(id)?.cpuCores;
  if (cores != null) return round(cores * 100);
  const before = readings.before.meters.get(id)?.cpuSeconds;
  const after = readings.after.meters.get(id)?.cpuSeconds;
  const seconds = (readings.after.at - readings.before.at) / 1000;
  // Less than before: the sandbox restarted between the readings.
  if (before == null || after == null || seconds <= 0 || after < before) return null;
  return round(((after - before) / seconds) * 100);
}

function nearLimits(
  tally: AuditTally | undefined,
  config: Pick<TerminalConfig, 'user_commands_per_minute' | 'user_concurrent_commands' | 'user_cpu_seconds_per_day'>,
  now: number,
): NearLimit[] {
  if (!tally) return [];
  const near: NearLimit[] = [];
  const refusedAt = (code: string, since: number): number | undefined => {
    const time = tally.refusals.get(code);
    return time !== undefined && time >= since ? time : undefined;
  };
  const clock = (time: number): string => new Date(time).toISOString().slice(11, 19);
  const perMinute = config.user_commands_per_minute;
  if (perMinute > 0) {
    const refused = refusedAt('USER_RATE_LIMIT', now - REFUSAL_FRESH_MS);
    if (refused !== undefined) near.push({ limit: 'user_commands_per_minute', detail: `refused at ${clock(refused)} UTC` });
    else if (tally.lastMinute >= NEAR_SHARE * perMinute)
      near.push({ limit: 'user_commands_per_minute', detail: `${tally.lastMinute} of ${perMinute} in the last minute` });
  }
  const atOnce = refusedAt('USER_CONCURRENCY_LIMIT', now - REFUSAL_FRESH_MS);
  if (config.user_concurrent_commands > 0 && atOnce !== undefined) near.push({ limit: 'user_concurrent_commands', detail: `refused at ${clock(atOnce)} UTC` });
  // A refusal today (UTC): the day's CPU time is used up until midnight.
  const cpuDay = refusedAt('USER_CPU_LIMIT', Math.floor(now / 86_400_000) * 86_400_000);
  if (config.user_cpu_seconds_per_day > 0 && cpuDay !== undefined) near.push({ limit: 'user_cpu_seconds_per_day', detail: `refused at ${clock(cpuDay)} UTC` });
  return near;
}

/** The rows of `sandboxes`, hottest first: by CPU %, then by memory against its limit. */
export function topRows(options: {
  readonly sandboxes: readonly SandboxInfo[];
  readonly readings: MeterReadings;
  readonly audit: AuditReading | undefined;
  readonly config: Pick<TerminalConfig, 'user_commands_per_minute' | 'user_concurrent_commands' | 'user_cpu_seconds_per_day'>;
  readonly now: number;
}): TopRow[] {
  const { readings, audit, now } = options;
  const rows = options.sandboxes.map((info): TopRow => {
    const record = toSandboxRecord(info);
    const meter = info.state === 'running' ? readings.after.meters.get(info.containerId) : undefined;
    const tally = audit?.tallies.get(info.containerName);
    const last = info.lastUsed === undefined ? null : Date.parse(info.lastUsed);
    return {
      scope: info.scopeKey,
      kind: info.kind,
      platform: record.platform,
      user: record.user,
      task: record.task,
      profile: record.profile,
      sandbox: info.containerName,
      containerId: info.containerId,
      state: info.state,
      cpuPercent: meter ? cpuPercent(info.containerId, readings) : null,
      memory:
        meter?.memoryBytes == null
          ? null
          : { usedMb: round(meter.memoryBytes / MB), limitMb: meter.memoryLimitBytes === null ? null : round(meter.memoryLimitBytes / MB) },
      processes: meter?.pids == null ? null : { current: meter.pids, limit: meter.pidsLimit },
      disk: record.disk,
      network: meter?.network ?? null,
      commandsLastHour: audit === undefined || audit.error !== undefined ? null : (tally?.lastHour ?? 0),
      lastCommand: record.lastUsed,
      lastCommandSecondsAgo: last === null || !Number.isFinite(last) ? null : Math.max(0, Math.round((now - last) / 1000)),
      near: audit === undefined ? [] : nearLimits(tally, options.config, now),
    };
  });
  const memoryShare = (row: TopRow): number => (row.memory?.limitMb ? row.memory.usedMb / row.memory.limitMb : 0);
  return rows.sort((a, b) => (b.cpuPercent ?? -1) - (a.cpuPercent ?? -1) || memoryShare(b) - memoryShare(a) || (a.scope < b.scope ? -1 : 1));
}

/** Headers matching {@link topTableRow}. */
export const TOP_TABLE_HEADERS = ['WHO', 'STATE', 'CPU', 'MEMORY', 'PROCS', 'DISK', 'NET IN/OUT', 'CMDS/H', 'LAST CMD', 'NEAR'] as const;

/** Bytes as a terminal shows them: `512 B`, `1.5 kB`, `12.3 MB`, `4.0 GB`. */
export function formatBytes(bytes: number): string {
  if (bytes < 1000) return `${bytes} B`;
  const units = ['kB', 'MB', 'GB', 'TB'];
  let value = bytes / 1000;
  let unit = 0;
  while (value >= 1000 && unit < units.length - 1) {
    value /= 1000;
    unit++;
  }
  return `${value.toFixed(1)} ${units[unit]}`;
}

/** An age as `45s`, `12m`, `3h`, `2d`. */
export function formatAge(seconds: number): string {
  if (seconds < 60) return `${seconds}s`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)}m`;
  if (seconds < 86_400) return `${Math.floor(seconds / 3600)}h`;
  return `${Math.floor(seconds / 86_400)}d`;
}

const SHORT_LIMIT: Record<NearLimit['limit'], string> = {
  user_commands_per_minute: 'cmds/min',
  user_concurrent_commands: 'at once',
  user_cpu_seconds_per_day: 'cpu/day',
};

/** The table cells of a row; `atLeast` marks counts the audit file's budget may have cut. */
export function topTableRow(row: TopRow, options: { readonly atLeast: boolean }): string[] {
  const owner = sandboxOwner(row);
  const memory = row.memory ? `${Math.round(row.memory.usedMb)}${row.memory.limitMb === null ? '' : `/${Math.round(row.memory.limitMb)}`} MB` : '-';
  const processes = row.processes ? `${row.processes.current}${row.processes.limit === null ? '' : `/${row.processes.limit}`}` : '-';
  const near = row.near.map((item) =>
    item.detail.startsWith('refused') ? `${SHORT_LIMIT[item.limit]} refused` : `${SHORT_LIMIT[item.limit]} ${item.detail.split(' in ')[0]}`,
  );
  return [
    owner,
    escapeForDisplay(row.state),
    row.cpuPercent === null ? '-' : `${row.cpuPercent.toFixed(1)}%`,
    memory,
    processes,
    row.disk ? `${row.disk.usedMb}/${row.disk.limitMb} MB` : '-',
    row.network ? `${formatBytes(row.network.receivedBytes)} / ${formatBytes(row.network.sentBytes)}` : '-',
    row.commandsLastHour === null ? '-' : `${options.atLeast ? '≥' : ''}${row.commandsLastHour}`,
    row.lastCommandSecondsAgo === null ? '-' : `${formatAge(row.lastCommandSecondsAgo)} ago`,
    near.length === 0 ? '' : near.join(', '),
  ];
}
