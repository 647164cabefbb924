import { ImageNotFoundError, SandboxError } from '@berth/core';
import type { DriverSandbox } from '@berth/core/driver';
import type { CoreV1Api, V1Pod } from '@kubernetes/client-node';
import { isConflict, isNotFound, unlessNotFound } from './map-kubernetes-error.js';

// A sandbox's Pod: the handle and state the runtime sees, and how a Pod is read, run and deleted.

/** Why a container cannot start because of its image. */
const IMAGE_FAILURES = new Set(['ErrImagePull', 'ImagePullBackOff', 'ErrImageNeverPull', 'InvalidImageName']);
/** Why a container cannot start for a reason of its own (bad settings, a runtime that refuses). */
const CONTAINER_FAILURES = new Set(['CreateContainerConfigError', 'CreateContainerError', 'RunContainerError', 'CrashLoopBackOff']);

export const sleep = (milliseconds: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, milliseconds));

/** A sandbox's handle: its name, and the uid of the Pod it runs as (none while stopped). */
export function parseId(id: string): { name: string; uid: string | undefined } {
  const at = id.indexOf('@');
  return at < 0 ? { name: id, uid: undefined } : { name: id.slice(0, at), uid: id.slice(at + 1) };
}

export function stateOf(pod: V1Pod | undefined): DriverSandbox['state'] {
  if (!pod || pod.metadata?.deletionTimestamp) return 'stopped';
  const phase = pod.status?.phase;
  if (phase === 'Succeeded' || phase === 'Failed') return 'stopped';
  if (phase === 'Running' && pod.status?.containerStatuses?.[0]?.ready) return 'running';
  return 'other';
}

const idOf = (name: string, pod: V1Pod | undefined): string =>
  pod && !pod.metadata?.deletionTimestamp && pod.metadata?.uid ? `${name}@${pod.metadata.uid}` : name;

/** The sandbox the runtime sees: a claim's name and labels, and its Pod if it has one. */
export const toSandbox = (name: string, labels: Record<string, string>, pod: V1Pod | undefined): DriverSandbox => ({
  id: idOf(name, pod),
  name,
  state: stateOf(pod),
  labels,
});

export function readPod(core: CoreV1Api, namespace: string, name: string): Promise<V1Pod | undefined> {
  return unlessNotFound(core.readNamespacedPod({ name, namespace }));
}

/**
 * Deletes the Pod. With a grace period the kubelet signals its processes and finishes in its
 * own time (8 to 14 s on the test cluster, though the shell leaves at once): this waits the
 * grace period and a little, and leaves a Pod that still terminates to finish — it counts as
 * stopped, and a start finishes it at once. Without grace the object is gone when this returns.
 */
export async function deletePod(core: CoreV1Api, namespace: string, name: string, graceSeconds: number): Promise<void> {
  try {
    await core.deleteNamespacedPod({ name, namespace, gracePeriodSeconds: graceSeconds });
  } catch (error) {
    if (!isNotFound(error)) throw error;
    return;
  }
  const deadline = Date.now() + (graceSeconds === 0 ? 60 : graceSeconds + 2) * 1000;
  while (Date.now() < deadline) {
    if (!(await readPod(core, namespace, name))) return;
    await sleep(100);
  }
  if (graceSeconds === 0)
    throw new SandboxError(
      'ENGINE_ERROR',
      `pod ${name} in namespace ${namespace} was still there 60 s after its deletion; look at the node's kubelet, then retry`,
    );
}

/** Why a Pod that does not run yet will not: an image, a container setting, no node, no volume. */
function startFailure(pod: V1Pod, image: string, waitedMs: number, storageClass: string | undefined): Error | undefined {
  const waiting = pod.status?.containerStatuses?.[0]?.state?.waiting;
  if (waiting?.reason && IMAGE_FAILURES.has(waiting.reason)) {
    const reason = `${waiting.reason}: ${(waiting.message ?? '').split('\n')[0]}`;
    return new ImageNotFoundError(
      image,
      `image ${image} cannot be pulled for pod ${pod.metadata?.name} (${reason}); ` +
        'push it where the nodes can pull it, or set terminal.docker_image to one they have',
    );
  }
  if (waiting?.reason && CONTAINER_FAILURES.has(waiting.reason)) {
    const reason = `${waiting.reason}: ${(waiting.message ?? '').split('\n')[0]}`;
    return new SandboxError('ENGINE_ERROR', `pod ${pod.metadata?.name} cannot start its container (${reason}); check the terminal: settings it names`);
  }
  const scheduled = pod.status?.conditions?.find((condition) => condition.type === 'PodScheduled');
  if (scheduled?.status === 'False' && waitedMs > 20_000) {
    const message = scheduled.message ?? scheduled.reason ?? 'unschedulable';
    const claimWait = /persistentvolumeclaim|unbound/i.test(message);
    const storage = storageClass ?? '(the default)';
    return new SandboxError(
      'ENGINE_ERROR',
      claimWait
        ? `pod ${pod.metadata?.name} waits for its claim (${message}); ` +
            `the storage class ${storage} has no provisioner that binds it — set terminal.kubernetes_storage_class to one that does`
        : `no node can run pod ${pod.metadata?.name} (${message}); lower terminal.container_cpu or container_memory, or add nodes`,
    );
  }
  return undefined;
}

/**
 * Runs the sandbox's Pod, as its claim records it, until it is ready: made when missing, a stop
 * still finishing or a Pod that ended deleted first; a Pod that will not run (its image, its
 * container, no node, no volume) or one not ready within `startTimeoutMs` is deleted and refused.
 */
export async function runPod(
  core: CoreV1Api,
  namespace: string,
  name: string,
  body: V1Pod,
  options: { startTimeoutMs: number; storageClass: string | undefined },
): Promise<void> {
  const { startTimeoutMs } = options;
  const image = body.spec?.containers?.[0]?.image ?? '';
  const started = Date.now();
  while (Date.now() - started < startTimeoutMs) {
    const pod = await readPod(core, namespace, name);
    if (!pod) {
      try {
        await core.createNamespacedPod({ namespace, body });
      } catch (error) {
        // Another process started it first, or the old one is still being deleted.
        if (!isConflict(error)) throw error;
      }
    } else if (pod.metadata?.deletionTimestamp) {
      // A stop still finishing: the sandbox is wanted again, so end the old Pod now.
      await deletePod(core, namespace, name, 0);
      continue;
    } else {
      const phase = pod.status?.phase;
      if (phase === 'Succeeded' || phase === 'Failed') {
        await deletePod(core, namespace, name, 0);
        continue;
      }
      if (stateOf(pod) === 'running') return;
      const failure = startFailure(pod, image, Date.now() - started, options.storageClass);
      if (failure) {
        // Not left pulling or crashing in the background: the next command tries afresh.
        await deletePod(core, namespace, name, 0).catch(() => undefined);
        throw failure;
      }
    }
    await sleep(100);
  }
  await deletePod(core, namespace, name, 0).catch(() => undefined);
  throw new SandboxError(
    'ENGINE_ERROR',
    `pod ${name} did not run within ${Math.round(startTimeoutMs / 1000)} s (kubectl -n ${namespace} describe pod ${name} says why); retry the command`,
  );
}
