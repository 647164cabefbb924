import type { Duplex } from 'node:stream';
import type Dockerode from 'dockerode';
import type { ExecChannel } from '@berth/core/driver';
import { createExecChannelEvents, writableTo } from '@berth/sandbox-runtime';

/**
 * Starts `command` in a container through the engine's exec API, stdin open, no TTY, and
 * demultiplexes its stdout and stderr with docker-modem's demuxer. No variables are passed
 * to the exec: they go over stdin, so the exec's stored configuration holds none.
 */
export async function openExecChannel(
  docker: Dockerode,
  containerId: string,
  command: readonly string[],
  options: { workingDir?: string } = {},
): Promise<ExecChannel> {
  const exec = await docker.getContainer(containerId).exec({
    Cmd: [...command],
    AttachStdin: true,
    AttachStdout: true,
    AttachStderr: true,
    Tty: false,
    ...(options.workingDir ? { WorkingDir: options.workingDir } : {}),
  });
  const stream = (await exec.start({ hijack: true, stdin: true })) as Duplex;
  const events = createExecChannelEvents();
  docker.modem.demuxStream(stream, writableTo(events.stdout), writableTo(events.stderr));
  stream.on('end', events.close);
  stream.on('close', events.close);
  // A dropped connection is reported through close; the error itself carries nothing more.
  stream.on('error', events.close);
  return {
    write(data) {
      if (!events.closed) stream.write(data);
    },
    end() {
      if (!events.closed) stream.end();
    },
    destroy() {
      stream.destroy();
      events.close();
    },
    ...events.listeners,
    async exitCode() {
      const info = await exec.inspect();
      return typeof info.ExitCode === 'number' ? info.ExitCode : undefined;
    },
  };
}
