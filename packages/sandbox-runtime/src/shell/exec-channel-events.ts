import { Writable } from 'node:stream';
import type { ExecChannel } from '@berth/core/driver';

/** The listener bookkeeping every `ExecChannel` has, whatever carries its bytes. */
export interface ExecChannelEvents {
  /** Hands a chunk of the command's stdout to its listeners. */
  readonly stdout: (chunk: Buffer) => void;
  /** Hands a chunk of the command's stderr to its listeners. */
  readonly stderr: (chunk: Buffer) => void;
  /** Ends the channel, once: `beforeClose`, then the close listeners. Later calls do nothing. */
  readonly close: () => void;
  /** Whether `close()` ran. */
  readonly closed: boolean;
  /** `onStdout`, `onStderr` and `onClose`, as the channel hands them out. */
  readonly listeners: Pick<ExecChannel, 'onStdout' | 'onStderr' | 'onClose'>;
}

/** The listeners of one channel; `beforeClose` releases what the channel holds, before its close listeners run. */
export function createExecChannelEvents(beforeClose?: () => void): ExecChannelEvents {
  const stdoutListeners: Array<(chunk: Buffer) => void> = [];
  const stderrListeners: Array<(chunk: Buffer) => void> = [];
  const closeListeners: Array<() => void> = [];
  let closed = false;
  return {
    stdout: (chunk) => {
      for (const listener of stdoutListeners) listener(chunk);
    },
    stderr: (chunk) => {
      for (const listener of stderrListeners) listener(chunk);
    },
    close: () => {
      if (closed) return;
      closed = true;
      beforeClose?.();
      for (const listener of closeListeners.splice(0)) listener();
    },
    get closed() {
      return closed;
    },
    listeners: {
      onStdout: (listener) => void stdoutListeners.push(listener),
      onStderr: (listener) => void stderrListeners.push(listener),
      onClose: (listener) => {
        if (closed) listener();
        else closeListeners.push(listener);
      },
    },
  };
}

/** A writable stream that hands every chunk written to it to `emit` (for a demultiplexer that writes into streams). */
export function writableTo(emit: (chunk: Buffer) => void): Writable {
  return new Writable({
    write(chunk: Buffer, _encoding, done) {
      emit(chunk);
      done();
    },
  });
}
