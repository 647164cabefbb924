import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { glob, readFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { CoreV1Api, KubeConfig, RbacAuthorizationV1Api, type V1Pod } from '@kubernetes/client-node';
import { kubernetesRole } from '../kubernetes-role.js';

const run = promisify(execFile);

/** The local image the set-up builds and the kubelet finds on its Docker Engine; no registry is needed. */
export const TEST_IMAGE = process.env.BERTH_TEST_IMAGE ?? 'localhost/berth-busybox:latest';
/** Where scripts/kubernetes.sh keeps the test cluster's kubeconfigs. */
const CLUSTER_DIR = process.env.BERTH_KUBERNETES_DIR ?? '/var/lib/berth/kubernetes';
/** An admin of the test cluster: makes namespaces, binds the Role, looks from outside. */
export const ADMIN_KUBECONFIG = process.env.BERTH_TEST_KUBECONFIG ?? path.join(CLUSTER_DIR, 'admin.kubeconfig');
/** The user the driver runs as: it holds nothing but the Role of docs/backend-kubernetes.md. */
export const DRIVER_KUBECONFIG = process.env.BERTH_TEST_DRIVER_KUBECONFIG ?? path.join(CLUSTER_DIR, 'berth.kubeconfig');
export const DRIVER_USER = process.env.BERTH_TEST_DRIVER_USER ?? 'berth';
/** The test cluster's class, backed by the controller-manager's hostPath provisioner. */
export const STORAGE_CLASS = process.env.BERTH_TEST_STORAGE_CLASS ?? 'berth-hostpath';

/** One test file's world on the cluster: a namespace of its own with the Role bound in it. */
export interface ClusterHarness {
  readonly runId: string;
  readonly namespace: string;
  /** The admin's client, to look from outside and inject faults. */
  readonly admin: CoreV1Api;
  readonly adminConfig: KubeConfig;
  /** The driver user's client configuration. */
  readonly driverConfig: KubeConfig;
  /** The sandbox's Pod, by a driver id (`name@uid`) or name; `undefined` when there is none. */
  pod(idOrName: string): Promise<V1Pod | undefined>;
  /** Deletes a Pod at once, as `kubectl delete pod --grace-period=0 --force` does. */
  deletePod(idOrName: string): Promise<void>;
  /** What Docker (the kubelet's engine here) stores for the Pod's containers. */
  dockerRecordOf(uid: string): Promise<Array<{ Config: { Env?: string[]; Labels?: Record<string, string> } }>>;
  /** The pids limit the node applies to the Pod (its pod cgroup), when this machine is the node. */
  pidsLimitOf(uid: string): Promise<number | undefined>;
  cleanup(): Promise<void>;
}

/** The Pod name in a sandbox id (`name@uid`) or a name. */
const podNameOf = (idOrName: string): string => idOrName.split('@')[0]!;

/** Fails with a message saying how to start the cluster, instead of skipping. */
async function loadAdmin(): Promise<KubeConfig> {
  const config = new KubeConfig();
  try {
    config.loadFromString(await readFile(ADMIN_KUBECONFIG, 'utf8'));
    const nodes = await config.makeApiClient(CoreV1Api).listNode();
    const ready = nodes.items.some((node) => node.status?.conditions?.some((condition) => condition.type === 'Ready' && condition.status === 'True'));
    if (!ready) throw new Error('no node is Ready');
  } catch (error) {
    throw new Error(
      `no Kubernetes test cluster answers through ${ADMIN_KUBECONFIG} (${(error as Error).message.split('\n')[0]}); ` +
        "start it with bash scripts/kubernetes.sh up, or point BERTH_TEST_KUBECONFIG at a cluster admin's kubeconfig",
    );
  }
  return config;
}

export async function createClusterHarness(label: string): Promise<ClusterHarness> {
  const adminConfig = await loadAdmin();
  const admin = adminConfig.makeApiClient(CoreV1Api);
  const rbac = adminConfig.makeApiClient(RbacAuthorizationV1Api);
  const runId = randomBytes(4).toString('hex');
  const namespace = `berth-${label}-${runId}`;
  const driverConfig = new KubeConfig();
  driverConfig.loadFromString(await readFile(DRIVER_KUBECONFIG, 'utf8'));
  await admin.createNamespace({ body: { metadata: { name: namespace, labels: { 'berth.dev/test-run': runId } } } });
  await rbac.createNamespacedRole({ namespace, body: kubernetesRole(namespace) });
  await rbac.createNamespacedRoleBinding({
    namespace,
    body: {
      metadata: { name: 'berth-sandboxes' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'berth-sandboxes' },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: DRIVER_USER }],
    },
  });
  const pod = async (idOrName: string): Promise<V1Pod | undefined> => {
    try {
      return await admin.readNamespacedPod({ name: podNameOf(idOrName), namespace });
    } catch (error) {
      if ((error as { code?: number }).code === 404) return undefined;
      throw error;
    }
  };
  return {
    runId,
    namespace,
    admin,
    adminConfig,
    driverConfig,
    pod,
    async deletePod(idOrName) {
      await admin.deleteNamespacedPod({ name: podNameOf(idOrName), namespace, gracePeriodSeconds: 0 });
    },
    async dockerRecordOf(uid) {
      const ids = (await run('docker', ['ps', '-aq', '--filter', `label=io.kubernetes.pod.uid=${uid}`])).stdout.split('\n').filter(Boolean);
      return ids.length
        ? (JSON.parse((await run('docker', ['inspect', ...ids])).stdout) as Array<{ Config: { Env?: string[]; Labels?: Record<string, string> } }>)
        : [];
    },
    async pidsLimitOf(uid) {
      for await (const file of glob(`/sys/fs/cgroup/pids/*/kubepods/*/pod${uid}/pids.max`)) {
        const value = Number((await readFile(file, 'utf8')).trim());
        return Number.isInteger(value) ? value : undefined;
      }
      return undefined;
    },
    async cleanup() {
      await admin.deleteNamespace({ name: namespace }).catch(() => undefined);
    },
  };
}
