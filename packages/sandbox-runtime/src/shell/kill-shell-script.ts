import killShell from './kill-shell.sh';
import { programText } from './program-file.js';
import { quoteShell } from './shell-words.js';

/**
 * The kill shell's program (shell/kill-shell.sh). Defines `__berth_kill DIR`, which kills the
 * process tree of the command running in the session whose state folder is DIR: every descendant
 * found through /proc, and the processes in the session's process group made since the command
 * started (those it left to init, which no longer descend from it). The session's group is
 * stopped first, its shell with it for a moment, so nothing forks while the walk runs, and
 * continued after; the walk and the kill go in rounds until one finds no new process (a stop
 * lands when its process next enters the kernel: a fork under way may finish). Builtins only, so it works while a fork bomb holds every pid the container may
 * have. When the kill shell's stdin ends (its connection to the gateway is gone), it kills the
 * command of the session it watches.
 */
export const KILLER_INIT = programText(killShell);

/** Asks a killer shell to kill the running command of the session with state folder `stateDir`. */
export function buildKillRequest(stateDir: string): string {
  return `__berth_kill ${quoteShell(stateDir)}\n`;
}

/**
 * Tells a killer shell which session is current: when its own connection ends (the gateway
 * died, or closed it), it kills that session's running command, so no command outlives the
 * gateway that gave it a timeout.
 */
export function buildWatchRequest(stateDir: string): string {
  return `__berth_session=${quoteShell(stateDir)}\n`;
}
