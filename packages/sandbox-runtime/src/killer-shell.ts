import type { ExecChannel } from '@berth/core';
import { buildKillRequest, buildWatchRequest, KILLER_INIT } from './shell-protocol.js';

/**
 * A second long-lived shell per sandbox whose only job is killing a timed-out command's
 * process tree. It exists before it is needed because under a fork bomb the engine can no
 * longer start a new process in the container, while this shell's builtins still run.
 */
/** What the kill shell prints once it runs. */
const READY_ANSWER = '__BERTH_KILLER_READY__\n';

export class KillerShell {
  private closed = false;

  /** Settles once the shell has answered: its process runs, it is not still being started. */
  readonly ready: Promise<void>;

  constructor(private readonly channel: ExecChannel) {
    channel.onClose(() => (this.closed = true));
    let answered = '';
    this.ready = new Promise<void>((resolve, reject) => {
      // Output is otherwise never read; draining it keeps the engine from blocking on a full pipe.
      channel.onStdout((chunk) => {
        if (answered.length < READY_ANSWER.length) {
          answered += chunk.toString('latin1');
          if (answered.startsWith(READY_ANSWER)) resolve();
        }
      });
      channel.onClose(() => reject(new Error('the kill shell ended before it answered')));
    });
    this.ready.catch(() => undefined);
    channel.onStderr(() => undefined);
    channel.write(`${KILLER_INIT}echo ${READY_ANSWER.trim()}\n`);
  }

  /** False once its connection ended. */
  get alive(): boolean {
    return !this.closed;
  }

  /** Kills the command running in the session whose state folder is `stateDir`. */
  kill(stateDir: string): void {
    this.channel.write(buildKillRequest(stateDir));
  }

  /** Makes `stateDir`'s session the one whose command dies with this shell's connection. */
  watch(stateDir: string): void {
    this.channel.write(buildWatchRequest(stateDir));
  }

  /** Ends the shell. */
  close(): void {
    this.channel.end();
    this.channel.destroy();
  }
}
