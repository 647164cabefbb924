import { CoreV1Api, NetworkingV1Api, VersionApi } from '@kubernetes/client-node';
import { findKubernetesCluster, type FindKubernetesClusterOptions, type KubernetesCluster } from './find-kubernetes-cluster.js';
import { MANAGED_BY_KEY, MANAGED_BY_VALUE } from './kubernetes-labels.js';
import { mapKubernetesError } from './map-kubernetes-error.js';
import { PodWatch } from './pod-watch.js';

/** One driver's clients of the cluster, and the one watch on Berth's Pods in its namespace. */
export interface Connection {
  readonly cluster: KubernetesCluster;
  readonly core: CoreV1Api;
  readonly networking: NetworkingV1Api;
  readonly version: VersionApi;
  readonly watch: PodWatch;
}

/** A driver's way to the cluster: connected at its first use (and again after a failed attempt), closed with the driver. */
export interface KubernetesConnector {
  connection(): Promise<Connection>;
  /** Runs one cluster call, mapping what it throws in the one place. */
  call<T>(action: string, work: (connected: Connection) => Promise<T>): Promise<T>;
  /** Stops the Pod watch and forgets the connection. */
  close(): Promise<void>;
}

/** The connector of one driver, to the cluster `options` find and the namespace its sandboxes live in. */
export function createKubernetesConnector(options: FindKubernetesClusterOptions, namespace: string): KubernetesConnector {
  let connecting: Promise<Connection> | undefined;

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

  const call = async <T>(action: string, work: (connected: Connection) => Promise<T>): Promise<T> => {
    const connected = await connection();
    try {
      return await work(connected);
    } catch (error) {
      throw mapKubernetesError(error, { endpoint: connected.cluster.endpoint, namespace, action });
    }
  };

  const close = async (): Promise<void> => {
    if (!connecting) return;
    const connected = await connecting.catch(() => undefined);
    connected?.watch.close();
    connecting = undefined;
  };

  return { connection, call, close };
}
