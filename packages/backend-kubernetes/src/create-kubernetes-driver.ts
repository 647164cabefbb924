import { randomBytes } from 'node:crypto';
import { ImageNotFoundError, SandboxError, type DriverSandbox, type ExecChannel, type SandboxDriverV1, type SandboxSpec } from '@berth/core';
import { CoreV1Api, NetworkingV1Api, VersionApi, type KubeConfig, type V1PersistentVolumeClaim, type V1Pod } from '@kubernetes/client-node';
import { isSandboxBusy, RUNNING_PROBE } from '@berth/sandbox-runtime';
import { findKubernetesCluster, type KubernetesCluster } from './find-kubernetes-cluster.js';
import { openKubernetesExecChannel } from './kubernetes-exec-channel.js';
import { holdsAll, INSTALLATION_KEY, LABELS_ANNOTATION, MANAGED_BY_KEY, MANAGED_BY_VALUE, POD_ANNOTATION, runtimeLabelsOf, SCOPE_KEY, scopeLabelValue, selectorOf, toKubernetesLabels } from './kubernetes-labels.js';
import { isConflict, isNotFound, kubernetesStatus, mapKubernetesError } from './map-kubernetes-error.js';
import { PodWatch, podEnded } from './pod-watch.js';
import { probeNetworkPolicy, type NetworkPolicyProbe } from './probe-network-policy.js';
import { buildNetworkPolicies, buildSandboxClaim, buildSandboxPod, type ClusterObjectOptions } from './to-kubernetes-objects.js';

/** The engine's own process in a pod (its pause container's, where the pod shares its process namespace). */
const ENGINE_PROCESS = /^\/pause$/;
/** Why a container cannot start because of its image. */
const IMAGE_FAILURES = new Set(['ErrImagePull', 'ImagePullBackOff', 'ErrImageNeverPull', 'InvalidImageName']);
/** Why a container cannot start for a reason of its own (bad settings, a runtime that refuses). */
const CONTAINER_FAILURES = new Set(['CreateContainerConfigError', 'CreateContainerError', 'RunContainerError', 'CrashLoopBackOff']);

/** Options of {@link createKubernetesDriver}. */
export interface KubernetesDriverOptions {
  /** The namespace every sandbox lives in (`terminal.kubernetes_namespace`). @default 'berth' */
  readonly namespace?: string;
  /** `terminal.kubernetes_kubeconfig`. @default `$KUBECONFIG`, `~/.kube/config`, the pod's service account */
  readonly kubeconfig?: string;
  /** `terminal.kubernetes_context`. @default the kubeconfig's current context */
  readonly context?: string;
  /** A ready client configuration; wins over `kubeconfig` and `context`. */
  readonly kubeConfig?: KubeConfig;
  /** The gateway's environment, for kubeconfig discovery. @default process.env */
  readonly environment?: Readonly<Record<string, string | undefined>>;
  /** `terminal.kubernetes_storage_class`. @default the cluster's default storage class */
  readonly storageClass?: string;
  /** Each sandbox's claim, in megabytes (`container_disk`). @default 51200 */
  readonly diskMb?: number;
  /** Label value that tells this installation's claims from another's in a shared namespace. */
  readonly installation?: string;
  /** Labels the runtime adds to every sandbox (its `labels` option), so purge looks only at those. */
  readonly labels?: Readonly<Record<string, string>>;
  /** @default 'IfNotPresent' */
  readonly imagePullPolicy?: 'IfNotPresent' | 'Always' | 'Never';
  /** The cluster enforces NetworkPolicy (the deny-ingress policy holds), so isolation can be claimed. @default false */
  readonly networkPolicyEnforced?: boolean;
  /** The image `describe()` probes NetworkPolicy with (it needs busybox's `nc`); no probe without. */
  readonly probeImage?: string;
  /** Milliseconds a Pod may take to run. @default 180000 */
  readonly startTimeoutMs?: number;
}

interface Connection {
  readonly cluster: KubernetesCluster;
  readonly core: CoreV1Api;
  readonly networking: NetworkingV1Api;
  readonly version: VersionApi;
  readonly watch: PodWatch;
}

const sleep = (milliseconds: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, milliseconds));

/** A sandbox's handle: its name, and the uid of the Pod it runs as (none while stopped). */
function parseId(id: string): { name: string; uid: string | undefined } {
  const at = id.indexOf('@');
  return at < 0 ? { name: id, uid: undefined } : { name: id.slice(0, at), uid: id.slice(at + 1) };
}

function stateOf(pod: V1Pod | undefined): DriverSandbox['state'] {
  if (!pod || pod.metadata?.deletionTimestamp) return 'stopped';
  const phase = pod.status?.phase;
  if (phase === 'Succeeded' || phase === 'Failed') return 'stopped';
  if (phase === 'Running' && pod.status?.containerStatuses?.[0]?.ready) return 'running';
  return 'other';
}

const idOf = (name: string, pod: V1Pod | undefined): string => (pod && !pod.metadata?.deletionTimestamp && pod.metadata?.uid ? `${name}@${pod.metadata.uid}` : name);

/** The record a claim holds, when it is a sandbox's (not only files kept after a removal). */
function recordOf(claim: V1PersistentVolumeClaim): { labels: Record<string, string>; pod: V1Pod } | undefined {
  const annotations = claim.metadata?.annotations;
  const labels = runtimeLabelsOf(annotations);
  const pod = annotations?.[POD_ANNOTATION];
  if (!labels || !pod) return undefined;
  try {
    return { labels, pod: JSON.parse(pod) as V1Pod };
  } catch {
    return undefined;
  }
}

/**
 * The Kubernetes driver: each sandbox is a PersistentVolumeClaim holding its workspace and home,
 * and, while it runs, a hardened Pod that mounts it. The claim is the sandbox's record (its labels
 * and the Pod it starts as, in annotations), so stopping deletes only the Pod and a stopped
 * sandbox is still listed, restarted with its files and adopted by the next gateway. Commands
 * reach the Pod over the exec WebSocket; variables only ever travel on its stdin.
 */
/** The Kubernetes driver, with what `berth doctor` and tests also use. */
export type KubernetesDriver = SandboxDriverV1 & {
  connection(): Promise<Connection>;
  readonly namespace: string;
  /** Whether the cluster enforces NetworkPolicy, found with two short-lived probe pods (`berth doctor`). */
  probeNetworkPolicy(): Promise<NetworkPolicyProbe>;
};

export function createKubernetesDriver(options: KubernetesDriverOptions = {}): KubernetesDriver {
  const namespace = options.namespace ?? 'berth';
  const objects: ClusterObjectOptions = {
    diskMb: options.diskMb ?? 51200,
    ...(options.storageClass ? { storageClass: options.storageClass } : {}),
    ...(options.installation ? { installation: options.installation } : {}),
    ...(options.imagePullPolicy ? { imagePullPolicy: options.imagePullPolicy } : {}),
  };
  const startTimeoutMs = options.startTimeoutMs ?? 180_000;
  let connecting: Promise<Connection> | undefined;
  let policies: Promise<void> | undefined;
  let probe: Promise<NetworkPolicyProbe> | undefined;

  const connection = (): Promise<Connection> => {
    connecting ??= Promise.resolve()
      .then(() => {
        const cluster = findKubernetesCluster({
          ...(options.kubeConfig ? { kubeConfig: options.kubeConfig } : {}),
          ...(options.kubeconfig ? { kubeconfig: options.kubeconfig } : {}),
          ...(options.context ? { context: options.context } : {}),
          ...(options.environment ? { environment: options.environment } : {}),
        });
        const core = cluster.kubeConfig.makeApiClient(CoreV1Api);
        return {
          cluster,
          core,
          networking: cluster.kubeConfig.makeApiClient(NetworkingV1Api),
          version: cluster.kubeConfig.makeApiClient(VersionApi),
          watch: new PodWatch({ kubeConfig: cluster.kubeConfig, core, namespace, labelSelector: `${MANAGED_BY_KEY}=${MANAGED_BY_VALUE}` }),
        };
      })
      .catch((error: unknown) => {
        connecting = undefined;
        throw error;
      });
    return connecting;
  };

  /** Runs one cluster call, mapping what it throws in the one place. */
  const call = async <T>(action: string, work: (connected: Connection) => Promise<T>): Promise<T> => {
    const connected = await connection();
    try {
      return await work(connected);
    } catch (error) {
      throw mapKubernetesError(error, { endpoint: connected.cluster.endpoint, namespace, action });
    }
  };

  const readClaim = async (core: CoreV1Api, name: string): Promise<V1PersistentVolumeClaim | undefined> => {
    try {
      return await core.readNamespacedPersistentVolumeClaim({ name, namespace });
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw error;
    }
  };

  const readPod = async (core: CoreV1Api, name: string): Promise<V1Pod | undefined> => {
    try {
      return await core.readNamespacedPod({ name, namespace });
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw error;
    }
  };

  /**
   * Deletes the Pod. With a grace period the kubelet signals its processes and finishes in its
   * own time (8 to 14 s on the test cluster, though the shell leaves at once): this waits the
   * grace period and a little, and leaves a Pod that still terminates to finish — it counts as
   * stopped, and a start finishes it at once. Without grace the object is gone when this returns.
   */
  const deletePod = async (core: CoreV1Api, name: string, graceSeconds: number): Promise<void> => {
    try {
      await core.deleteNamespacedPod({ name, namespace, gracePeriodSeconds: graceSeconds });
    } catch (error) {
      if (!isNotFound(error)) throw error;
      return;
    }
    const deadline = Date.now() + (graceSeconds === 0 ? 60 : graceSeconds + 2) * 1000;
    while (Date.now() < deadline) {
      if (!(await readPod(core, name))) return;
      await sleep(100);
    }
    if (graceSeconds === 0) throw new SandboxError('ENGINE_ERROR', `pod ${name} in namespace ${namespace} was still there 60 s after its deletion; look at the node's kubelet, then retry`);
  };

  /** The namespace's NetworkPolicies, made once per driver (an existing one is left as it is). */
  const ensurePolicies = (connected: Connection): Promise<void> => {
    policies ??= (async () => {
      for (const policy of buildNetworkPolicies()) {
        try {
          await connected.networking.createNamespacedNetworkPolicy({ namespace, body: policy });
        } catch (error) {
          if (!isConflict(error)) throw error;
        }
      }
    })().catch((error: unknown) => {
      policies = undefined;
      throw error;
    });
    return policies;
  };

  /** Why a Pod that does not run yet will not: an image, a container setting, no node, no volume. */
  const startFailure = (pod: V1Pod, image: string, waitedMs: number): Error | undefined => {
    const waiting = pod.status?.containerStatuses?.[0]?.state?.waiting;
    if (waiting?.reason && IMAGE_FAILURES.has(waiting.reason)) {
      return new ImageNotFoundError(image, `image ${image} cannot be pulled for pod ${pod.metadata?.name} (${waiting.reason}: ${(waiting.message ?? '').split('\n')[0]}); push it where the nodes can pull it, or set terminal.docker_image to one they have`);
    }
    if (waiting?.reason && CONTAINER_FAILURES.has(waiting.reason)) {
      return new SandboxError('ENGINE_ERROR', `pod ${pod.metadata?.name} cannot start its container (${waiting.reason}: ${(waiting.message ?? '').split('\n')[0]}); check the terminal: settings it names`);
    }
    const scheduled = pod.status?.conditions?.find((condition) => condition.type === 'PodScheduled');
    if (scheduled?.status === 'False' && waitedMs > 20_000) {
      const message = scheduled.message ?? scheduled.reason ?? 'unschedulable';
      const claimWait = /persistentvolumeclaim|unbound/i.test(message);
      return new SandboxError(
        'ENGINE_ERROR',
        claimWait
          ? `pod ${pod.metadata?.name} waits for its claim (${message}); the storage class ${objects.storageClass ?? '(the default)'} has no provisioner that binds it — set terminal.kubernetes_storage_class to one that does`
          : `no node can run pod ${pod.metadata?.name} (${message}); lower terminal.container_cpu or container_memory, or add nodes`,
      );
    }
    return undefined;
  };

  const toSandbox = (name: string, labels: Record<string, string>, pod: V1Pod | undefined): DriverSandbox => ({ id: idOf(name, pod), name, state: stateOf(pod), labels });

  /** Strips a claim's record, keeping its files and the labels purge selects it by. */
  const dropRecord = async (core: CoreV1Api, name: string): Promise<void> => {
    for (let attempt = 0; attempt < 5; attempt++) {
      const claim = await readClaim(core, name);
      if (!claim || !recordOf(claim)) return;
      const annotations = { ...claim.metadata?.annotations };
      delete annotations[LABELS_ANNOTATION];
      delete annotations[POD_ANNOTATION];
      try {
        await core.replaceNamespacedPersistentVolumeClaim({ name, namespace, body: { ...claim, metadata: { ...claim.metadata, annotations } } });
        return;
      } catch (error) {
        if (!isConflict(error)) throw error;
      }
    }
    throw new SandboxError('SANDBOX_CONFLICT', `claim ${name} kept changing while Berth removed its sandbox; retry`);
  };

  /** One command in a running Pod, its output collected (for the busy check and the probe). */
  const runInPod = async (connected: Connection, pod: V1Pod, command: readonly string[], timeoutMs: number): Promise<{ stdout: string; exitCode: number | undefined }> => {
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
  };

  const driver: KubernetesDriver = {
    specificationVersion: 'v1',
    engine: 'kubernetes',
    namespace,
    capabilities: { networkIsolation: options.networkPolicyEnforced === true, hostFolders: false, processList: true, networkNone: false },
    specRevision: 'kubernetes-1',
    connection,

    ping: () =>
      call(`reach the Kubernetes API and namespace ${namespace}`, async ({ core, version }) => {
        await version.getCode();
        try {
          await core.readNamespace({ name: namespace });
        } catch (error) {
          const status = (error as { code?: unknown }).code;
          if (status === 403) {
            throw new SandboxError('ENGINE_ERROR', `this user may not read namespace ${namespace}: it does not exist, or the Role in docs/backend-kubernetes.md is not bound to the user there; create the namespace and bind the Role, or set terminal.kubernetes_namespace`, { cause: error });
          }
          throw error;
        }
      }),

    // Cheap: the runtime asks it too (for the engine host's size, which a cluster does not have
    // in one piece, so none is given). The NetworkPolicy probe is a method of its own.
    async describe() {
      const connected = await connection();
      const found = await call('read the Kubernetes version', ({ version }) => version.getCode());
      await driver.ping();
      return {
        engine: 'kubernetes',
        endpoint: connected.cluster.endpoint,
        discovery: `${connected.cluster.discovery}, namespace ${namespace}`,
        version: found.gitVersion,
        apiVersion: `${found.major}.${found.minor}`,
        warnings: [
          "Kubernetes has no per-pod pids limit: terminal.docker_pids_limit is not applied; set the kubelet's podPidsLimit on every node",
          "terminal.docker_nofile and docker_nproc cannot be set on a pod; the container runtime's own limits apply",
          "terminal.docker_network: false keeps the pod's interface; only a NetworkPolicy (where enforced) and an empty resolver cut it off",
        ],
      };
    },

    async probeNetworkPolicy() {
      const connected = await connection();
      if (!options.probeImage) return { enforced: undefined, detail: 'no image to probe with' };
      probe ??= probeNetworkPolicy({ core: connected.core, kubeConfig: connected.cluster.kubeConfig, namespace, image: options.probeImage, ensurePolicies: () => ensurePolicies(connected) }).catch((error: unknown) => {
        probe = undefined;
        throw error;
      });
      return probe.catch((error: unknown): NetworkPolicyProbe => ({ enforced: undefined, detail: `the probe could not run (${(error as Error).message.split('\n')[0]})` }));
    },

    // Images are the nodes' business: a kubelet pulls when a Pod starts, and a missing one is
    // reported then (ImageNotFoundError). A namespaced user cannot see which images nodes hold.
    hasImage: async () => true,
    prepareImage: async () => undefined,

    inspect: (nameOrId) =>
      call(`inspect sandbox ${nameOrId}`, async ({ core }) => {
        const { name } = parseId(nameOrId);
        const claim = await readClaim(core, name);
        const record = claim ? recordOf(claim) : undefined;
        if (!record) return undefined;
        return toSandbox(name, record.labels, await readPod(core, name));
      }),

    list: (labels) =>
      call('list sandboxes', async ({ core }) => {
        const claims = await core.listNamespacedPersistentVolumeClaim({ namespace, labelSelector: selectorOf(labels) });
        const pods = await core.listNamespacedPod({ namespace, labelSelector: `${MANAGED_BY_KEY}=${MANAGED_BY_VALUE}` });
        const podByName = new Map(pods.items.map((pod) => [pod.metadata?.name ?? '', pod]));
        const found: DriverSandbox[] = [];
        for (const claim of claims.items) {
          const record = recordOf(claim);
          const name = claim.metadata?.name;
          if (!record || !name || !holdsAll(record.labels, labels)) continue;
          found.push(toSandbox(name, record.labels, podByName.get(name)));
        }
        return found;
      }),

    create: (spec: SandboxSpec) =>
      call(`create sandbox ${spec.name}`, async (connected) => {
        const pod = buildSandboxPod(spec, objects);
        const claim = buildSandboxClaim(spec, pod, objects);
        await ensurePolicies(connected);
        try {
          await connected.core.createNamespacedPersistentVolumeClaim({ namespace, body: claim });
          return spec.name;
        } catch (error) {
          if (!isConflict(error)) throw error;
        }
        // The claim exists: another process's sandbox (theirs to run), or files a removed
        // sandbox left, which this one takes over.
        const existing = await readClaim(connected.core, spec.name);
        if (!existing || recordOf(existing)) return undefined;
        try {
          await connected.core.replaceNamespacedPersistentVolumeClaim({
            name: spec.name,
            namespace,
            body: { ...existing, metadata: { ...existing.metadata, labels: { ...existing.metadata?.labels, ...claim.metadata!.labels }, annotations: { ...existing.metadata?.annotations, ...claim.metadata!.annotations } } },
          });
          return spec.name;
        } catch (error) {
          if (isConflict(error)) return undefined;
          throw error;
        }
      }),

    start: (id) =>
      call(`start sandbox ${id}`, async ({ core }) => {
        const { name } = parseId(id);
        const claim = await readClaim(core, name);
        const record = claim ? recordOf(claim) : undefined;
        if (!record) throw new SandboxError('SANDBOX_GONE', `sandbox ${name} is not in namespace ${namespace} any more; the next command recreates it`);
        const image = record.pod.spec?.containers?.[0]?.image ?? '';
        const started = Date.now();
        while (Date.now() - started < startTimeoutMs) {
          const pod = await readPod(core, name);
          if (!pod) {
            try {
              await core.createNamespacedPod({ namespace, body: record.pod });
            } catch (error) {
              // Another process started it first, or the old one is still being deleted.
              if (!isConflict(error)) throw error;
            }
          } else if (pod.metadata?.deletionTimestamp) {
            // A stop still finishing: the sandbox is wanted again, so end the old Pod now.
            await deletePod(core, name, 0);
            continue;
          } else {
            const phase = pod.status?.phase;
            if (phase === 'Succeeded' || phase === 'Failed') {
              await deletePod(core, name, 0);
              continue;
            }
            if (stateOf(pod) === 'running') return;
            const failure = startFailure(pod, image, Date.now() - started);
            if (failure) {
              // Not left pulling or crashing in the background: the next command tries afresh.
              await deletePod(core, name, 0).catch(() => undefined);
              throw failure;
            }
          }
          await sleep(100);
        }
        await deletePod(core, name, 0).catch(() => undefined);
        throw new SandboxError('ENGINE_ERROR', `pod ${name} did not run within ${Math.round(startTimeoutMs / 1000)} s (kubectl -n ${namespace} describe pod ${name} says why); retry the command`);
      }),

    stop: (id, graceSeconds) => call(`stop sandbox ${id}`, ({ core }) => deletePod(core, parseId(id).name, graceSeconds)),

    // Nothing pauses a Pod.
    unpause: async () => undefined,

    remove: (id) =>
      call(`remove sandbox ${id}`, async ({ core }) => {
        const { name } = parseId(id);
        await deletePod(core, name, 0);
        await dropRecord(core, name);
      }),

    rename: async (id) => {
      throw new SandboxError('ENGINE_ERROR', `sandbox ${id} cannot be renamed: Kubernetes objects keep their names and a claim's files cannot move; remove it (berth rm) to let Berth make the sandbox again`);
    },

    async isBusy(id) {
      try {
        return await call(`list the processes of ${id}`, async (connected) => {
          const pod = await readPod(connected.core, parseId(id).name);
          if (!pod || stateOf(pod) !== 'running') return false;
          // One line per process: its command line, NULs and newlines as spaces; this probe marks itself.
          const marker = `berth-busy-${randomBytes(4).toString('hex')}`;
          // A session's shell, a waiting spare and a command made only of builtins all look like /bin/sh: the sessions' pid files tell (the last line).
          const script = `for p in /proc/[0-9]*; do [ -r "$p/cmdline" ] && { tr '\\0\\n' '  ' < "$p/cmdline"; echo; }; done; if (${RUNNING_PROBE}); then echo ${marker}-running; fi; : ${marker}`;
          const { stdout, exitCode } = await runInPod(connected, pod, ['/bin/sh', '-c', script], 10_000);
          if (exitCode !== 0) return true;
          const commands = stdout
            .split('\n')
            .map((line) => line.trim())
            .filter((line) => line && !line.includes(marker) && !/^tr /.test(line));
          // The runtime decides; this driver lists, with the runtime's probe in the same exec.
          return isSandboxBusy({ commands, engineProcess: ENGINE_PROCESS }, stdout.includes(`${marker}-running`));
        });
      } catch {
        // Unknown means busy: never destroy work on a guess.
        return true;
      }
    },

    openChannel: (id, command, channelOptions) =>
      call(`run a command in sandbox ${id}`, async (connected) => {
        const { name, uid } = parseId(id);
        const pod = await readPod(connected.core, name);
        const watched = { uid: pod?.metadata?.uid ?? '', restarts: pod?.status?.containerStatuses?.[0]?.restartCount ?? 0 };
        if (!pod || (uid !== undefined && uid !== watched.uid) || podEnded(pod, watched) || stateOf(pod) !== 'running') {
          throw new SandboxError('SANDBOX_GONE', `sandbox ${name} has no running pod${uid && pod && uid !== watched.uid ? ' (it was replaced)' : ''}; the next command starts it again`);
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
            if (attempt >= 10) throw new SandboxError('SANDBOX_GONE', `the kubelet would not run a command in pod ${name} (500 on the exec upgrade, 11 times); the next command starts it again`, { cause: error });
            await sleep(300);
          }
        }
      }),

    purgeStorage: (scopeKey) =>
      call(`delete the claim of ${scopeKey}`, async ({ core }) => {
        const selector = {
          ...toKubernetesLabels(options.labels ?? {}),
          [MANAGED_BY_KEY]: MANAGED_BY_VALUE,
          [SCOPE_KEY]: scopeLabelValue(scopeKey),
          ...(options.installation ? { [INSTALLATION_KEY]: options.installation } : {}),
        };
        const claims = await core.listNamespacedPersistentVolumeClaim({ namespace, labelSelector: Object.entries(selector).map(([key, value]) => `${key}=${value}`).join(',') });
        for (const claim of claims.items) {
          const name = claim.metadata?.name;
          // A claim that is a sandbox again belongs to whoever made it meanwhile.
          if (!name || recordOf(claim)) continue;
          try {
            await core.deleteNamespacedPersistentVolumeClaim({ name, namespace });
          } catch (error) {
            if (!isNotFound(error)) throw error;
          }
          const deadline = Date.now() + 60_000;
          while ((await readClaim(core, name)) && Date.now() < deadline) await sleep(100);
        }
      }),

    async close() {
      if (!connecting) return;
      const connected = await connecting.catch(() => undefined);
      connected?.watch.close();
      connecting = undefined;
    },
  };
  return driver;
}

