import { SandboxError } from '@berth/core';
import type { ExecChannel } from '@berth/core/driver';
import type { V1Pod } from '@kubernetes/client-node';
import { insideProcessListing, isSandboxBusy } from '@berth/sandbox-runtime/driver';
import type { Connection } from './kubernetes-connection.js';
import { openKubernetesExecChannel } from './kubernetes-exec-channel.js';
import { kubernetesStatus } from './map-kubernetes-error.js';
import { podEnded } from './pod-watch.js';
import { parseId, readPod, sleep, stateOf } from './sandbox-pods.js';

// Commands in a sandbox's Pod over the exec WebSocket: the runtime's channels, and the process
// list the busy check reads.

/** The engine's own process in a pod (its pause container's, where the pod shares its process namespace). */
const ENGINE_PROCESS = /^\/pause$/;

/** One command in a running Pod, its output collected (for the busy check and the probe). */
async function runInPod(
  connected: Connection,
  namespace: string,
  pod: V1Pod,
  command: readonly string[],
  timeoutMs: number,
): Promise<{ stdout: string; exitCode: number | undefined }> {
  const name = pod.metadata!.name!;
  const channel = await openKubernetesExecChannel({ kubeConfig: connected.cluster.kubeConfig, namespace, pod: name, command, watch: () => () => undefined });
  let stdout = '';
  channel.onStdout((chunk) => (stdout += chunk.toString('utf8')));
  channel.onStderr(() => undefined);
  const closed = new Promise<void>((resolve) => channel.onClose(resolve));
  const timer = setTimeout(() => channel.destroy(), timeoutMs);
  await closed;
  clearTimeout(timer);
  return { stdout, exitCode: await channel.exitCode() };
}

/** Whether the sandbox's running Pod is busy: its processes listed, and the runtime's probe run, in one exec; the runtime decides. */
export async function isPodBusy(connected: Connection, namespace: string, name: string): Promise<boolean> {
  const pod = await readPod(connected.core, namespace, name);
  if (!pod || stateOf(pod) !== 'running') return false;
  // One exec lists the processes and runs the runtime's probe; a session's shell, a waiting spare
  // and a command made only of builtins all look like /bin/sh, which the probe tells apart.
  const listing = insideProcessListing();
  const { stdout, exitCode } = await runInPod(connected, namespace, pod, ['/bin/sh', '-c', listing.script], 10_000);
  if (exitCode !== 0) return true;
  const { commands, running } = listing.read(stdout);
  // The runtime decides; this driver lists, with the runtime's probe in the same exec.
  return isSandboxBusy({ commands, engineProcess: ENGINE_PROCESS }, running);
}

/**
 * A channel to `command` in the sandbox's running Pod (the one `id` names, when it names one),
 * which ends when that Pod does; `SANDBOX_GONE` when there is none.
 */
export async function openPodChannel(
  connected: Connection,
  namespace: string,
  id: string,
  command: readonly string[],
  channelOptions: { workingDir?: string } | undefined,
): Promise<ExecChannel> {
  const { name, uid } = parseId(id);
  const pod = await readPod(connected.core, namespace, name);
  const watched = { uid: pod?.metadata?.uid ?? '', restarts: pod?.status?.containerStatuses?.[0]?.restartCount ?? 0 };
  if (!pod || (uid !== undefined && uid !== watched.uid) || podEnded(pod, watched) || stateOf(pod) !== 'running') {
    throw new SandboxError(
      'SANDBOX_GONE',
      `sandbox ${name} has no running pod${uid && pod && uid !== watched.uid ? ' (it was replaced)' : ''}; the next command starts it again`,
    );
  }
  // The exec API has no working directory: a shell changes to it, then becomes the command.
  const argv = channelOptions?.workingDir ? ['/bin/sh', '-c', 'cd -- "$0" && exec "$@"', channelOptions.workingDir, ...command] : [...command];
  // A kubelet that has just replaced a pod of the same name may still route the exec to the
  // old one and answer 500 for a moment: try again briefly, then call the sandbox gone.
  for (let attempt = 0; ; attempt++) {
    try {
      const channel: ExecChannel = await openKubernetesExecChannel({
        kubeConfig: connected.cluster.kubeConfig,
        namespace,
        pod: name,
        command: argv,
        watch: (gone) => connected.watch.add({ name, ...watched, gone }),
      });
      return channel;
    } catch (error) {
      if (kubernetesStatus(error) !== 500) throw error;
      if (attempt >= 10) {
        throw new SandboxError(
          'SANDBOX_GONE',
          `the kubelet would not run a command in pod ${name} (500 on the exec upgrade, 11 times); the next command starts it again`,
          { cause: error },
        );
      }
      await sleep(300);
    }
  }
}
