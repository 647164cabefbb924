import type { ExecChannel } from '@berth/core/driver';
import { buildKillRequest, buildWatchRequest, KILLER_INIT } from './shell-protocol.js';

/**
 * A second long-lived shell per sandbox whose only job is killing a timed-out command's
 * process tree. It exists before it is needed because under a fork bomb the engine can no
 * longer start a new process in the container, while this shell's builtins still run.
 */
/** What the kill shell prints once it runs. */
const READY_ANSWER = '__BERTH_KILLER_READY__\n';

/**
 * Bytes the kill shell may print besides its ready answer before it is retired. It prints
 * nothing else (its requests send all output to /dev/null), so more comes only from a user who
 * writes into its FIFOs under /run/berth: read, it would cost the gateway a core for nothing.
 */
export const KILLER_STRAY_LIMIT = 4 * 1024;

export class KillerShell {
  private closed = false;
  private stray = 0;

  /** Settles once the shell has answered: its process runs, it is not still being started. */
  readonly ready: Promise<void>;

  constructor(private readonly channel: ExecChannel) {
    channel.onClose(() => (this.closed = true));
    let answered = '';
    this.ready = new Promise<void>((resolve, reject) => {
      // Output is otherwise never read, but drained (so the engine never blocks on a full pipe)
      // and counted: past the limit the shell is retired, like a session with stray output, and
      // whatever writes into its pipes from then on reaches nobody.
      channel.onStdout((chunk) => {
        if (answered.length < READY_ANSWER.length) {
          const needed = READY_ANSWER.length - answered.length;
          answered += chunk.toString('latin1', 0, Math.min(chunk.length, needed));
          if (answered === READY_ANSWER) resolve();
          if (chunk.length > needed) this.count(chunk.length - needed);
          return;
        }
        this.count(chunk.length);
      });
      channel.onClose(() => reject(new Error('the kill shell ended before it answered')));
    });
    this.ready.catch(() => undefined);
    channel.onStderr((chunk) => this.count(chunk.length));
    channel.write(`${KILLER_INIT}echo ${READY_ANSWER.trim()}\n`);
  }

  /** False once its connection ended, or it was retired for what it printed. */
  get alive(): boolean {
    return !this.closed;
  }

  private count(bytes: number): void {
    this.stray += bytes;
    if (this.stray <= KILLER_STRAY_LIMIT || this.closed) return;
    // Retired, not dead: it stops watching first, or its end would kill the running command as
    // if the gateway had died.
    this.channel.write(buildWatchRequest(''));
    this.close();
  }

  /** Kills the command running in the session whose state folder is `stateDir`. */
  kill(stateDir: string): void {
    this.channel.write(buildKillRequest(stateDir));
  }

  /** Makes `stateDir`'s session the one whose command dies with this shell's connection. */
  watch(stateDir: string): void {
    this.channel.write(buildWatchRequest(stateDir));
  }

  /** Ends the shell (told to exit first: Podman's exec API keeps its stdin open, see ShellSession.close). */
  close(): void {
    if (!this.closed) this.channel.write('exit\n');
    this.closed = true;
    this.channel.end();
    this.channel.destroy();
  }
}
