import { SandboxError } from '@berth/core';
import type { DriverProcessList, ExecChannel } from '@berth/core/driver';
import type { Connection } from './kubernetes-connection.js';
import { openKubernetesExecChannel } from './kubernetes-exec-channel.js';
import { kubernetesStatus } from './map-kubernetes-error.js';
import { podEnded } from './pod-watch.js';
import { parseId, readPod, sleep, stateOf } from './sandbox-pods.js';

// Commands in a sandbox's Pod over the exec WebSocket (the runtime's channels), and what the
// driver can say of the Pod's processes.

/** The engine's own process in a pod (its pause container's, where the pod shares its process namespace). */
const ENGINE_PROCESS = /^\/pause$/;

/**
 * The processes of the sandbox's Pod as the driver can list them: none when it has no running
 * Pod; else only the engine's own process named, since the pod's processes are seen from inside
 * alone (the runtime lists them through an exec channel and decides).
 */
export async function listPodProcesses(connected: Connection, namespace: string, name: string): Promise<DriverProcessList> {
  const pod = await readPod(connected.core, namespace, name);
  if (!pod || stateOf(pod) !== 'running') return { commands: [] };
  return { engineProcess: ENGINE_PROCESS };
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
