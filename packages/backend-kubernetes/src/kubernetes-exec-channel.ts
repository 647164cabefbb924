import { PassThrough } from 'node:stream';
import type { ExecChannel } from '@berth/core/driver';
import { createExecChannelEvents, writableTo } from '@berth/sandbox-runtime/driver';
import { Exec, type KubeConfig, type V1Status } from '@kubernetes/client-node';
import { CONTAINER_NAME } from './to-kubernetes-objects.js';

/** The socket client-node's Exec gives back (the `ws` package's). */
type ExecSocket = Awaited<ReturnType<Exec['exec']>>;

/** The exit code in an exec's final status: 0 on Success, the `ExitCode` cause on NonZeroExitCode. */
export function exitCodeOf(status: V1Status | undefined): number | undefined {
  if (!status) return undefined;
  if (status.status === 'Success') return 0;
  const cause = status.details?.causes?.find((entry) => entry.reason === 'ExitCode');
  const code = cause?.message === undefined ? Number.NaN : Number(cause.message);
  return Number.isInteger(code) ? code : undefined;
}

/** The sub-protocol that can end stdin without ending the connection (Kubernetes 1.29 and later). */
const HALF_CLOSE_PROTOCOL = 'v5.channel.k8s.io';

/**
 * An exec channel over the Kubernetes exec WebSocket (client-node's `Exec`), stdin open, no
 * terminal. Channel 0 carries stdin, 1 and 2 the output, 3 the final status with the exit code.
 * On `v4.channel.k8s.io` — all that Kubernetes before 1.29 speaks — stdin cannot be ended on its
 * own: closing it closes the socket, and the command's output and exit code are lost. So `end()`
 * sends the half-close only on v5 and otherwise leaves stdin open; `destroy()` closes. The
 * runtime's sessions never need it: they frame everything they send.
 */
export async function openKubernetesExecChannel(options: {
  kubeConfig: KubeConfig;
  namespace: string;
  pod: string;
  command: readonly string[];
  /** Registers the channel with the Pod watch; returns how to stop. Called with the channel's own close. */
  watch: (gone: () => void) => () => void;
}): Promise<ExecChannel & { readonly protocol: string }> {
  let status: V1Status | undefined;
  let settleExit: (code: number | undefined) => void = () => undefined;
  const exit = new Promise<number | undefined>((resolve) => (settleExit = resolve));
  let unwatch: () => void = () => undefined;
  const events = createExecChannelEvents(() => {
    unwatch();
    settleExit(exitCodeOf(status));
  });
  const stdin = new PassThrough();
  const socket: ExecSocket = await new Exec(options.kubeConfig).exec(
    options.namespace,
    options.pod,
    CONTAINER_NAME,
    [...options.command],
    writableTo(events.stdout),
    writableTo(events.stderr),
    stdin,
    false,
    (value) => {
      status = value;
    },
  );
  socket.on('close', events.close);
  // An error is followed by close; it carries nothing the caller can act on.
  socket.on('error', () => undefined);
  unwatch = options.watch(() => {
    socket.terminate();
    events.close();
  });
  return {
    protocol: socket.protocol,
    write(data) {
      if (!events.closed) stdin.write(typeof data === 'string' ? Buffer.from(data, 'utf8') : Buffer.from(data));
    },
    end() {
      if (!events.closed && socket.protocol === HALF_CLOSE_PROTOCOL) stdin.end();
    },
    destroy() {
      socket.close();
      events.close();
    },
    ...events.listeners,
    exitCode: () => exit,
  };
}
