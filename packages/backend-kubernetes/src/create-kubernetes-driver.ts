import { SandboxError } from '@berth/core';
import type { DriverSandbox, SandboxDriverV1, SandboxSpec } from '@berth/core/driver';
import type { KubeConfig } from '@kubernetes/client-node';
import { createKubernetesConnector, type Connection } from './kubernetes-connection.js';
import {
  holdsAll,
  INSTALLATION_KEY,
  MANAGED_BY_KEY,
  MANAGED_BY_VALUE,
  SCOPE_KEY,
  scopeLabelValue,
  selectorOf,
  toKubernetesLabels,
} from './kubernetes-labels.js';
import { isConflict } from './map-kubernetes-error.js';
import { listPodProcesses, openPodChannel } from './pod-exec.js';
import { probeNetworkPolicy, type NetworkPolicyProbe } from './probe-network-policy.js';
import { createClaim, deleteKeptClaims, dropRecord, readClaim, recordOf } from './sandbox-claims.js';
import { deletePod, parseId, readPod, runPod, toSandbox } from './sandbox-pods.js';
import { readPodUsage } from './pod-metrics.js';
import { buildNetworkPolicies, buildSandboxClaim, buildSandboxPod, type ClusterObjectOptions } from './to-kubernetes-objects.js';

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

/** The Kubernetes driver, with what `berth doctor` and tests also use. */
export type KubernetesDriver = SandboxDriverV1 & {
  connection(): Promise<Connection>;
  readonly namespace: string;
  /** Whether the cluster enforces NetworkPolicy, found with two short-lived probe pods (`berth doctor`). */
  probeNetworkPolicy(): Promise<NetworkPolicyProbe>;
};

/**
 * The Kubernetes driver: each sandbox is a PersistentVolumeClaim holding its workspace and home,
 * and, while it runs, a hardened Pod that mounts it. The claim is the sandbox's record (its labels
 * and the Pod it starts as, in annotations), so stopping deletes only the Pod and a stopped
 * sandbox is still listed, restarted with its files and adopted by the next gateway. Commands
 * reach the Pod over the exec WebSocket; variables only ever travel on its stdin.
 */
export function createKubernetesDriver(options: KubernetesDriverOptions = {}): KubernetesDriver {
  const namespace = options.namespace ?? 'berth';
  const objects: ClusterObjectOptions = {
    diskMb: options.diskMb ?? 51200,
    ...(options.storageClass ? { storageClass: options.storageClass } : {}),
    ...(options.installation ? { installation: options.installation } : {}),
    ...(options.imagePullPolicy ? { imagePullPolicy: options.imagePullPolicy } : {}),
  };
  const startTimeoutMs = options.startTimeoutMs ?? 180_000;
  const { connection, call, close } = createKubernetesConnector(options, namespace);
  let policies: Promise<void> | undefined;
  let probe: Promise<NetworkPolicyProbe> | undefined;

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
            const why = 'it does not exist, or the Role in docs/backend-kubernetes.md is not bound to the user there';
            throw new SandboxError(
              'ENGINE_ERROR',
              `this user may not read namespace ${namespace}: ${why}; create the namespace and bind the Role, or set terminal.kubernetes_namespace`,
              {
                cause: error,
              },
            );
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
      probe ??= probeNetworkPolicy({
        core: connected.core,
        kubeConfig: connected.cluster.kubeConfig,
        namespace,
        image: options.probeImage,
        ensurePolicies: () => ensurePolicies(connected),
      }).catch((error: unknown) => {
        probe = undefined;
        throw error;
      });
      return probe.catch(
        (error: unknown): NetworkPolicyProbe => ({ enforced: undefined, detail: `the probe could not run (${(error as Error).message.split('\n')[0]})` }),
      );
    },

    // Images are the nodes' business: a kubelet pulls when a Pod starts, and a missing one is
    // reported then (ImageNotFoundError). A namespaced user cannot see which images nodes hold.
    hasImage: async () => true,
    prepareImage: async () => undefined,

    inspect: (nameOrId) =>
      call(`inspect sandbox ${nameOrId}`, async ({ core }) => {
        const { name } = parseId(nameOrId);
        const claim = await readClaim(core, namespace, name);
        const record = claim ? recordOf(claim) : undefined;
        if (!record) return undefined;
        return toSandbox(name, record.labels, await readPod(core, namespace, name));
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
        return createClaim(connected.core, namespace, spec.name, claim);
      }),

    start: (id) =>
      call(`start sandbox ${id}`, async ({ core }) => {
        const { name } = parseId(id);
        const claim = await readClaim(core, namespace, name);
        const record = claim ? recordOf(claim) : undefined;
        if (!record) throw new SandboxError('SANDBOX_GONE', `sandbox ${name} is not in namespace ${namespace} any more; the next command recreates it`);
        await runPod(core, namespace, name, record.pod, { startTimeoutMs, storageClass: objects.storageClass });
      }),

    stop: (id, graceSeconds) => call(`stop sandbox ${id}`, ({ core }) => deletePod(core, namespace, parseId(id).name, graceSeconds)),

    // Nothing pauses a Pod.
    unpause: async () => undefined,

    remove: (id) =>
      call(`remove sandbox ${id}`, async ({ core }) => {
        const { name } = parseId(id);
        await deletePod(core, namespace, name, 0);
        await dropRecord(core, namespace, name);
      }),

    rename: async (id) => {
      throw new SandboxError(
        'ENGINE_ERROR',
        `sandbox ${id} cannot be renamed: Kubernetes objects keep their names and a claim's files cannot move; ` +
          'remove it (berth rm) to let Berth make the sandbox again',
      );
    },

    // One list of the namespace's PodMetrics for every sandbox (pod-metrics.ts).
    usage: async () => readPodUsage((await connection()).cluster.kubeConfig, namespace),

    listProcesses: (id) => call(`list the processes of ${id}`, (connected) => listPodProcesses(connected, namespace, parseId(id).name)),

    openChannel: (id, command, channelOptions) =>
      call(`run a command in sandbox ${id}`, (connected) => openPodChannel(connected, namespace, id, command, channelOptions)),

    purgeStorage: (scopeKey) =>
      call(`delete the claim of ${scopeKey}`, ({ core }) =>
        deleteKeptClaims(core, namespace, {
          ...toKubernetesLabels(options.labels ?? {}),
          [MANAGED_BY_KEY]: MANAGED_BY_VALUE,
          [SCOPE_KEY]: scopeLabelValue(scopeKey),
          ...(options.installation ? { [INSTALLATION_KEY]: options.installation } : {}),
        }),
      ),

    close,
  };
  return driver;
}
