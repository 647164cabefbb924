import path from 'node:path';
import { expandHome, type SandboxInfo, type TerminalConfig } from '@berth/core';
import {
  AUDIT_TAIL_MIB,
  createAuditTail,
  createSandboxMeterReader,
  meterSource,
  type AuditReading,
  type MeterSource,
  type SandboxMeter,
} from '@berth/sandbox-runtime';
import { createBerth } from '../create-berth.js';
import type { CliIo } from './cli-io.js';
import { formatTable } from './format-table.js';
import { loadCliConfig } from './load-cli-config.js';
import type { CliOptions } from './parse-cli-arguments.js';
import { stringifyForDisplay } from './sandbox-record.js';
import { TOP_TABLE_HEADERS, topRows, topTableRow, type MeterReadings, type TopRow } from './top-rows.js';

/** The refresh of the live table, seconds. @default 2 */
export const TOP_INTERVAL_SECONDS = 2;
/** Between the two readings of `--once`, ms (as `docker stats --no-stream` samples). */
const ONCE_SAMPLE_MS = 1000;
// Clear the screen and go home: the live table redraws in place on a terminal only.
const CLEAR = '\u001b[H\u001b[2J';

/** The lines under the table: what is missing and why, and how far the counts reach. */
export function topFooter(options: {
  readonly source: MeterSource;
  readonly config: Pick<TerminalConfig, 'audit_file' | 'user_commands_per_minute' | 'user_concurrent_commands' | 'user_cpu_seconds_per_day'>;
  readonly audit: AuditReading | undefined;
  readonly rows: readonly TopRow[];
  /** Set when the engine reported CPU and memory (a cluster's metrics API): what the rest lacks. */
  readonly engineOnly?: string;
}): string[] {
  const { source, config, audit, rows } = options;
  const lines: string[] = [];
  const running = rows.filter((row) => row.state === 'running').length;
  lines.push(`${rows.length} sandboxes, ${running} running; CPU is % of one core; sorted by CPU, then memory against its limit`);
  if (options.engineOnly !== undefined) lines.push(`PROCS and NET IN/OUT are "-": ${options.engineOnly}`);
  else if ('missing' in source) lines.push(`CPU, MEMORY, PROCS and NET IN/OUT are "-": ${source.missing}`);
  if (config.audit_file === undefined) {
    lines.push('CMDS/H and NEAR are "-": commands per hour and per-user limits need terminal.audit_file (docs/observability.md)');
  } else if (audit?.error !== undefined) {
    lines.push(`CMDS/H and NEAR are "-": the audit file ${config.audit_file} cannot be read (${audit.error}); run berth top as the user the gateway runs as`);
  } else {
    if (audit?.coveredSince !== undefined)
      lines.push(
        `CMDS/H counts from ${new Date(audit.coveredSince).toISOString().slice(11, 19)} UTC only (the audit file's last ${AUDIT_TAIL_MIB} MiB): ≥ marks it`,
      );
    if (config.user_concurrent_commands > 0 || config.user_cpu_seconds_per_day > 0)
      lines.push(
        'NEAR shows user_concurrent_commands and user_cpu_seconds_per_day once the audit file records a refusal: the gateway counts them in its own memory',
      );
  }
  return lines;
}

/** An error's first line, short. */
const firstLine = (error: unknown): string => (error instanceof Error ? error.message : String(error)).split('\n')[0]!.slice(0, 200);

/** The engine's report as meters by container id: CPU (cores, a rate) and memory; the rest unknown. */
function engineMeters(
  sandboxes: readonly SandboxInfo[],
  usage: ReadonlyMap<string, { readonly cpuCores: number; readonly memoryBytes: number }>,
): Map<string, SandboxMeter> {
  const meters = new Map<string, SandboxMeter>();
  for (const info of sandboxes) {
    const reported = usage.get(info.containerName);
    if (!reported) continue;
    meters.set(info.containerId, {
      cpuSeconds: null,
      cpuCores: reported.cpuCores,
      memoryBytes: reported.memoryBytes,
      memoryLimitBytes: null,
      pids: null,
      pidsLimit: null,
      network: null,
    });
  }
  return meters;
}

/** Waits `ms`, or less once `stop` fires. */
function pause(ms: number, stopped: { value: boolean; wake?: () => void }): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    stopped.wake = () => {
      clearTimeout(timer);
      resolve();
    };
  });
}

/**
 * `berth top`: one row per sandbox with what it uses now, hottest first. Every refresh is one
 * listing of the engine and reads of the kernel's files (no call per sandbox). `--once` prints
 * one table (or, with `--json`, an array) from two readings a second apart; otherwise it redraws
 * every `--interval` seconds until Ctrl-C. `refreshes` ends the live table early (tests).
 */
export async function runTopCommand(io: CliIo, options: CliOptions, refreshes = Number.POSITIVE_INFINITY): Promise<number> {
  const { config } = loadCliConfig(io, options.config);
  const berth = await createBerth({ config, environment: io.environment, resolveFrom: io.cwd });
  const { backend } = berth;
  const stopped: { value: boolean; wake?: () => void } = { value: false };
  const unlisten = io.onInterrupt?.(() => {
    stopped.value = true;
    stopped.wake?.();
  });
  try {
    const description = await backend.describe({ runtimeVersions: false }).catch((error: unknown) => error as Error);
    const source: MeterSource =
      description instanceof Error ? { missing: `the engine did not describe itself (${description.message})` } : meterSource(description);
    const tail = config.audit_file === undefined ? undefined : createAuditTail(path.resolve(expandHome(config.audit_file)));
    const reader = 'parent' in source ? createSandboxMeterReader(source) : () => new Map<string, SandboxMeter>();
    const readMeters = (): { at: number; meters: ReadonlyMap<string, SandboxMeter> } => ({ at: performance.now(), meters: reader() });
    // Where this host cannot read the sandboxes' cgroups, the engine's own report (a cluster's metrics API), when it has one.
    const fromEngine = 'missing' in source && backend.usage ? backend.usage.bind(backend) : undefined;

    let before = readMeters();
    await pause(options.once ? ONCE_SAMPLE_MS : Math.min(ONCE_SAMPLE_MS, (options.interval ?? TOP_INTERVAL_SECONDS) * 1000), stopped);
    for (let refresh = 0; !stopped.value && refresh < refreshes; refresh++) {
      const sandboxes = await backend.list();
      let after = readMeters();
      let shown = source;
      let engineOnly: string | undefined;
      if (fromEngine) {
        const usage = await fromEngine().catch((error: unknown) => ({ missing: `the engine's report failed (${firstLine(error)})` }));
        if ('missing' in usage) shown = usage;
        else {
          after = { at: after.at, meters: engineMeters(sandboxes, usage.sandboxes) };
          engineOnly = `the ${backend.name} engine's metrics report CPU and memory only`;
        }
      }
      const readings: MeterReadings = { before, after };
      const audit = tail?.read();
      const rows = topRows({ sandboxes, readings, audit, config, now: Date.now() });
      before = after;
      const footer = topFooter({ source: shown, config, audit, rows, ...(engineOnly === undefined ? {} : { engineOnly }) });
      if (options.json) {
        io.stdout.write(`${stringifyForDisplay(rows)}\n`);
        for (const line of footer.slice(1)) io.stderr.write(`berth top: ${line}\n`);
        return 0;
      }
      const table =
        rows.length === 0
          ? 'no sandboxes\n'
          : formatTable(
              TOP_TABLE_HEADERS,
              rows.map((row) => topTableRow(row, { atLeast: audit?.coveredSince !== undefined })),
            );
      if (options.once) {
        io.stdout.write(`${table}${footer.join('\n')}\n`);
        return 0;
      }
      const heading = `berth top: every ${options.interval ?? TOP_INTERVAL_SECONDS} s, Ctrl-C to leave; ${new Date().toISOString().slice(11, 19)} UTC\n`;
      io.stdout.write(`${io.stdout.isTTY ? CLEAR : ''}${heading}${table}${footer.join('\n')}\n${io.stdout.isTTY ? '' : '\n'}`);
      if (refresh + 1 < refreshes) await pause((options.interval ?? TOP_INTERVAL_SECONDS) * 1000, stopped);
    }
    return 0;
  } finally {
    unlisten?.();
    await berth.close();
  }
}
