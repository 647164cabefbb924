import type { Duplex } from 'node:stream';
import type Dockerode from 'dockerode';
import type { ExecChannel } from '@berth/core/driver';
import { createExecChannelEvents, writableTo } from '@berth/sandbox-runtime/driver';

/** How long a dropped channel's connection stays open for the engine to take what was written to it. */
const DESTROY_GRACE_MS = 5_000;

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
      // Nothing more is read or reported from here on, but the connection is dropped only once
      // the engine has taken what was written (a shell's `exit`) and the end of stdin. Podman
      // gives up an exec's pending stdin when writing its output fails first: a connection
      // dropped at once under a flood of output left the shell running for the sandbox's
      // lifetime (seen under gVisor, where every shell is an exec). Paused, the flood waits in
      // the socket's buffers and costs the gateway nothing.
      events.close();
      stream.removeAllListeners('data');
      stream.pause();
      if (stream.destroyed) return;
      stream.end();
      const timer = setTimeout(() => stream.destroy(), DESTROY_GRACE_MS);
      timer.unref();
      stream.once('close', () => clearTimeout(timer));
    },
    ...events.listeners,
    async exitCode() {
      const info = await exec.inspect();
      return typeof info.ExitCode === 'number' ? info.ExitCode : undefined;
    },
  };
}
