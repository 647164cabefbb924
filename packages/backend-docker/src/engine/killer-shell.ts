import type { ExecChannel } from './exec-channel.js';
import { buildKillRequest, KILLER_INIT } from './shell-protocol.js';

/**
 * A second long-lived shell per sandbox whose only job is killing a timed-out command's
 * process tree. It exists before it is needed because under a fork bomb the engine can no
 * longer start a new process in the container, while this shell's builtins still run.
 */
export class KillerShell {
  private closed = false;

  constructor(private readonly channel: ExecChannel) {
    channel.onClose(() => (this.closed = true));
    // Output is never read; draining it keeps the engine from blocking on a full pipe.
    channel.onStdout(() => undefined);
    channel.onStderr(() => undefined);
    channel.write(KILLER_INIT);
  }

  /** False once its connection ended. */
  get alive(): boolean {
    return !this.closed;
  }

  /** Kills the command running in the session whose state folder is `stateDir`. */
  kill(stateDir: string): void {
    this.channel.write(buildKillRequest(stateDir));
  }

  /** Ends the shell. */
  close(): void {
    this.channel.end();
    this.channel.destroy();
  }
}
