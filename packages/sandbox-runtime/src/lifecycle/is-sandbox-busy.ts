import { randomBytes } from 'node:crypto';
import type { ProcessIds, SandboxDriverV1 } from '@berth/core/driver';
import { KEEP_ALIVE_COMMAND } from '../sandbox-spec.js';
import { fillTemplate, programLine } from '../shell/program-file.js';
import { RUNNING_PROBE, SESSION_PROCESS } from '../shell/shell-protocol.js';
import processListing from './list-processes.sh';

// Whether a sandbox is busy is the runtime's decision, made here from the shape of its own
// launcher: a driver only lists the processes (`listProcesses`), and the runtime runs what it
// needs in the sandbox itself (RUNNING_PROBE, the listing from inside) through `openChannel`.
// Change KEEP_ALIVE_COMMAND and what counts as idle follows, for every driver at once; and what
// cannot be told counts as busy here, nowhere else (sandboxIsBusy).

/** The listing from inside (list-processes.sh), one line. */
const LISTING = programLine(processListing);

/** The most a program the busy check runs in a sandbox may print; past it, the sandbox counts as busy. */
const IN_SANDBOX_OUTPUT_LIMIT = 4 * 2 ** 20;

/** How long a program the busy check runs in a sandbox may take before the sandbox counts as busy. */
const IN_SANDBOX_TIMEOUT_MS = 10_000;

/** The launcher's command line as a process list shows it, up to its first statement (`/bin/sh -c trap "exit 0" TERM INT HUP;`). */
const LAUNCHER_START = `${KEEP_ALIVE_COMMAND[0]} ${KEEP_ALIVE_COMMAND[1]} ${KEEP_ALIVE_COMMAND[2].slice(0, KEEP_ALIVE_COMMAND[2].indexOf(';') + 1)}`;

/** The sleep the launcher waits in between requests (`sleep 3600`). */
const LAUNCHER_SLEEP = /\bsleep \d+\b/.exec(KEEP_ALIVE_COMMAND[2])![0];

/**
 * Whether a process of a sandbox is no work of its user's: the launcher (and its forks, and an
 * engine's init running it), the launcher's sleep, a session's shell waiting for a command, or
 * one of the engine's own processes (`engineProcess`: its init, a pod's pause).
 */
export function isIdleProcess(command: string, engineProcess?: RegExp): boolean {
  return command.includes(LAUNCHER_START) || command === LAUNCHER_SLEEP || SESSION_PROCESS.test(command) || (engineProcess?.test(command) ?? false);
}

/** The processes of a running sandbox, for {@link isSandboxBusy}. */
export interface SandboxProcessList {
  /** Each process's command line, its arguments joined by spaces. */
  readonly commands: readonly string[];
  /** Each process's ids, in the order of `commands`, when the listing knows them. */
  readonly ids?: readonly ProcessIds[];
  /** The engine's own processes in a sandbox, which are never the user's work (its init, a pod's pause). */
  readonly engineProcess?: RegExp;
}

/**
 * Whether some process of the list is work of its user's. By command line, every process but the
 * idle ones ({@link isIdleProcess}) is, and a second launcher sleep is (a user's `sleep 3600`).
 * With the ids known, an idle-looking process is idle only where the sandbox's own would be: the
 * launcher's sleep is the launcher's child, one for each launcher; a session's shell leads its
 * own process group (the launcher starts it with setsid, an engine's exec as a session of its
 * own), and has at most one shell of its own besides, the spare that waits for the next command.
 * A `(sleep 3600; …) &` job or a loop of builtins in the background forks a session's shell and
 * stays in its group, wherever it is moved when its command ends: work.
 */
function hasWork(processes: SandboxProcessList): boolean {
  const { commands, engineProcess } = processes;
  if (commands.some((command) => !isIdleProcess(command, engineProcess))) return true;
  const ids = processes.ids?.length === commands.length ? processes.ids : undefined;
  if (!ids) return commands.filter((command) => command === LAUNCHER_SLEEP).length > 1;
  const commandOf = new Map(ids.map((entry, index) => [entry.pid, commands[index]!]));
  const leads = (entry: ProcessIds): boolean => entry.pgid === entry.pid;
  const leaderOf = new Map(ids.map((entry) => [entry.pid, entry]));
  const children = new Map<number, number>();
  const another = (parent: number): boolean => {
    const count = (children.get(parent) ?? 0) + 1;
    children.set(parent, count);
    return count > 1;
  };
  return commands.some((command, index) => {
    const entry = ids[index]!;
    if (command === LAUNCHER_SLEEP) return !(commandOf.get(entry.ppid) ?? '').includes(LAUNCHER_START) || another(entry.ppid);
    if (!SESSION_PROCESS.test(command) || leads(entry)) return false;
    // Not a session's shell itself: only the spare, the one shell child of a session's shell.
    const parent = leaderOf.get(entry.ppid);
    return !parent || !leads(parent) || !SESSION_PROCESS.test(commandOf.get(parent.pid) ?? '') || another(entry.ppid);
  });
}

/**
 * Whether a running sandbox is busy: any work ({@link hasWork}) is; with only idle processes, a
 * session's shell may still run a command made of builtins, which looks the same as one waiting,
 * so `commandRunning` (RUNNING_PROBE run in the sandbox: true unless it exits 1) tells. A driver
 * that ran the probe with its listing passes the answer (true is busy whatever the list says);
 * one that runs it apart passes a function, asked only when a session's shell is there.
 */
export async function isSandboxBusy(processes: SandboxProcessList, commandRunning: boolean | (() => Promise<boolean>)): Promise<boolean> {
  if (commandRunning === true) return true;
  if (hasWork(processes)) return true;
  if (!processes.commands.some((command) => SESSION_PROCESS.test(command))) return false;
  return typeof commandRunning === 'function' ? commandRunning() : commandRunning;
}

/**
 * The process list read from inside a sandbox, for engines whose own listing does not show the
 * sandbox's processes (a Kubernetes pod; gVisor, whose processes live in its own kernel): a
 * program for `/bin/sh -c` that prints each process's command line (NULs and newlines as spaces)
 * and runs {@link RUNNING_PROBE}, and the reading of its output. Run it in one exec; an exit code
 * other than 0 means unknown, which callers take for busy.
 */
export function insideProcessListing(): {
  readonly script: string;
  read(stdout: string): { commands: string[]; ids: ProcessIds[]; running: boolean };
} {
  // The listing marks its own lines, so that it does not count itself.
  const marker = `berth-busy-${randomBytes(4).toString('hex')}`;
  return {
    script: fillTemplate(LISTING, { RUNNING_PROBE, MARKER: marker }),
    read: (stdout) => {
      const lines = stdout.split('\n').map((line) => line.trim());
      const commands: string[] = [];
      const ids: ProcessIds[] = [];
      for (const line of lines) {
        // `pid ppid pgid command line`; a process that ended while listed (a zombie too) has an empty one.
        const match = /^(\d+) (\d+) (\d+) (.*)$/.exec(line);
        const command = match?.[4]?.trim();
        if (!match || !command || command.includes(marker) || /^tr /.test(command)) continue;
        commands.push(command);
        ids.push({ pid: Number(match[1]), ppid: Number(match[2]), pgid: Number(match[3]) });
      }
      // A whole line: the listing's own command line, which it prints too, holds the same words.
      return { commands, ids, running: lines.includes(`${marker}-running`) };
    },
  };
}

/**
 * Runs `command` in the sandbox through the driver's exec channel; its stdout and exit code
 * (undefined when cut: after the time bound, or past the output bound, which its user can fill).
 */
async function runInSandbox(driver: SandboxDriverV1, id: string, command: readonly string[]): Promise<{ stdout: string; exitCode: number | undefined }> {
  const channel = await driver.openChannel(id, command);
  let stdout = '';
  let cut = false;
  channel.onStdout((chunk) => {
    if (cut) return;
    stdout += chunk.toString('utf8');
    if (stdout.length > IN_SANDBOX_OUTPUT_LIMIT) {
      cut = true;
      channel.destroy();
    }
  });
  channel.onStderr(() => undefined);
  const closed = new Promise<void>((resolve) => channel.onClose(resolve));
  const timer = setTimeout(() => channel.destroy(), IN_SANDBOX_TIMEOUT_MS);
  await closed;
  clearTimeout(timer);
  return { stdout, exitCode: cut ? undefined : await channel.exitCode() };
}

/**
 * Whether the driver's running sandbox `id` is busy: the one place that asks. The driver lists
 * its processes; where its engine cannot see them, the runtime lists them from inside
 * ({@link insideProcessListing}, one exec with the probe); else it runs {@link RUNNING_PROBE}
 * when a session's shell could hide a command. Unknown means busy — a driver without a process
 * list, a listing or probe that fails or is cut after 10 s — so no work is destroyed on a guess.
 */
export async function sandboxIsBusy(driver: SandboxDriverV1, id: string): Promise<boolean> {
  if (!driver.capabilities.processList) return true;
  try {
    const { commands, ids, engineProcess } = await driver.listProcesses(id);
    if (commands === undefined) {
      const listing = insideProcessListing();
      const { stdout, exitCode } = await runInSandbox(driver, id, ['/bin/sh', '-c', listing.script]);
      if (exitCode !== 0) return true;
      const inside = listing.read(stdout);
      return await isSandboxBusy({ commands: inside.commands, ids: inside.ids, ...(engineProcess ? { engineProcess } : {}) }, inside.running);
    }
    return await isSandboxBusy(
      { commands, ...(ids ? { ids } : {}), ...(engineProcess ? { engineProcess } : {}) },
      async () => (await runInSandbox(driver, id, ['/bin/sh', '-c', RUNNING_PROBE])).exitCode !== 1,
    );
  } catch {
    return true;
  }
}
