import type { DriverSandbox, ProcessIds } from '@berth/core/driver';
import { LABELS } from '@berth/sandbox-runtime/driver';
import type Dockerode from 'dockerode';

// What a Docker-compatible engine's container records say, read the one way the driver reads them.

/** A container's state as the runtime knows states. */
export function stateOf(state: { Running?: boolean; Paused?: boolean; Status?: string } | string | undefined): DriverSandbox['state'] {
  const status = typeof state === 'string' ? state : state?.Paused ? 'paused' : state?.Running ? 'running' : (state?.Status ?? '');
  switch (status) {
    case 'running':
      return 'running';
    case 'paused':
      return 'paused';
    case 'exited':
    case 'created':
    case 'dead':
    case 'stopped':
    case 'configured':
      return 'stopped';
    default:
      return 'other';
  }
}

/** A container's name without the engine's leading slash. */
export const withoutSlash = (name: string | undefined): string => (name ?? '').replace(/^\//, '');

/**
 * A sandbox's own network: the one its label names, or, for a sandbox of an earlier release, the
 * network named as the container (a container on it says so in `NetworkMode` on Docker).
 */
export function ownNetworkOf(info: Dockerode.ContainerInspectInfo): string | undefined {
  const labelled = info.Config?.Labels?.[LABELS.network];
  if (labelled) return labelled;
  const name = withoutSlash(info.Name);
  return info.HostConfig?.NetworkMode === name ? name : undefined;
}

/**
 * The engine's `top` as a table of columns. Docker splits `ps`'s output into titles and cells;
 * Podman runs `ps` in the sandbox and gives each line whole, its titles one string: split here,
 * the last column (the command line) keeping its spaces.
 */
function topTable(top: { Titles?: string[]; Processes?: string[][] }): { titles: string[]; rows: string[][] } {
  const titles = top.Titles ?? [];
  const rows = top.Processes ?? [];
  if (titles.length !== 1 || !/\S\s+\S/.test(titles[0]!)) return { titles, rows };
  const split = titles[0]!.trim().split(/\s+/);
  return {
    titles: split,
    rows: rows.map((row) => {
      const cells: string[] = [];
      let rest = (row[0] ?? '').trimStart();
      for (let index = 0; index < split.length - 1; index++) {
        const match = /^(\S+)\s+/.exec(rest);
        if (!match) break;
        cells.push(match[1]!);
        rest = rest.slice(match[0].length);
      }
      return [...cells, rest];
    }),
  };
}

/**
 * A sandbox's processes from the engine's `top` (`ps -o pid,ppid,pgid,args`): each command line
 * and, when the engine gave all three id columns as numbers, each process's ids. The columns are
 * found by their titles.
 */
export function readTopListing(top: { Titles?: string[]; Processes?: string[][] }): { commands: string[]; ids?: ProcessIds[] } {
  const { titles, rows } = topTable(top);
  const column = (pattern: RegExp): number => titles.findIndex((title) => pattern.test(title));
  const commandColumn = Math.max(0, column(/^(CMD|COMMAND|ARGS)$/i));
  const [pid, ppid, pgid] = [column(/^PID$/i), column(/^PPID$/i), column(/^PGID$/i)];
  const commands = rows.map((row) => row[commandColumn] ?? row[row.length - 1] ?? '');
  if (pid < 0 || ppid < 0 || pgid < 0) return { commands };
  const ids = rows.map((row) => ({ pid: Number(row[pid]), ppid: Number(row[ppid]), pgid: Number(row[pgid]) }));
  if (ids.some((entry) => !Object.values(entry).every(Number.isSafeInteger))) return { commands };
  return { commands, ids };
}
