import { Writable, type Duplex } from 'node:stream';
import type Dockerode from 'dockerode';
import type { ExecChannel } from '@berth/core';

/**
 * Starts `command` in a container through the engine's exec API, stdin open, no TTY, and
 * demultiplexes its stdout and stderr with docker-modem's demuxer. No variables are passed
 * to the exec: they go over stdin, so the exec's stored configuration holds none.
 */
export async function openExecChannel(docker: Dockerode, containerId: string, command: readonly string[], options: { workingDir?: string } = {}): Promise<ExecChannel> {
  const exec = await docker.getContainer(containerId).exec({
    Cmd: [...command],
    AttachStdin: true,
    AttachStdout: true,
    AttachStderr: true,
    Tty: false,
    ...(options.workingDir ? { WorkingDir: options.workingDir } : {}),
  });
  const stream = (await exec.start({ hijack: true, stdin: true })) as Duplex;
  const stdoutListeners: Array<(chunk: Buffer) => void> = [];
  const stderrListeners: Array<(chunk: Buffer) => void> = [];
  const closeListeners: Array<() => void> = [];
  let closed = false;
  const sink = (listeners: Array<(chunk: Buffer) => void>): Writable =>
    new Writable({
      write(chunk: Buffer, _encoding, callback) {
        for (const listener of listeners) listener(chunk);
        callback();
      },
    });
  docker.modem.demuxStream(stream, sink(stdoutListeners), sink(stderrListeners));
  const close = (): void => {
    if (closed) return;
    closed = true;
    for (const listener of closeListeners.splice(0)) listener();
  };
  stream.on('end', close);
  stream.on('close', close);
  // A dropped connection is reported through close; the error itself carries nothing more.
  stream.on('error', close);
  return {
    write(data) {
      if (!closed) stream.write(data);
    },
    end() {
      if (!closed) stream.end();
    },
    destroy() {
      stream.destroy();
      close();
    },
    onStdout(listener) {
      stdoutListeners.push(listener);
    },
    onStderr(listener) {
      stderrListeners.push(listener);
    },
    onClose(listener) {
      if (closed) listener();
      else closeListeners.push(listener);
    },
    async exitCode() {
      const info = await exec.inspect();
      return typeof info.ExitCode === 'number' ? info.ExitCode : undefined;
    },
  };
}
