import { backendOptionsSchema, defineBackend, type BackendOptions, type SandboxRuntime } from '@berth/sandbox-runtime/driver';
import type { KubeConfig } from '@kubernetes/client-node';
import { z } from 'zod';
import { createKubernetesDriver, type KubernetesDriverOptions } from './create-kubernetes-driver.js';
import { installationLabel, kubernetesSettings, type KubernetesSettingsInput } from './kubernetes-settings.js';

/** Options of {@link createKubernetesBackend}: every backend's (`BackendOptions` of `@berth/sandbox-runtime/driver`) and the cluster's. */
export interface KubernetesBackendOptions extends BackendOptions {
  /** The cluster keys (`kubernetesSettings(config)`: namespace, kubeconfig, context, storage class, `container_disk`, `sandbox_dir`). */
  readonly kubernetes?: KubernetesSettingsInput;
  /** A ready client configuration (wins over the kubeconfig settings). */
  readonly kubeConfig?: KubeConfig;
  /** @default 'IfNotPresent' */
  readonly imagePullPolicy?: KubernetesDriverOptions['imagePullPolicy'];
  /** The cluster enforces NetworkPolicy, so sandboxes are isolated from each other (`berth doctor` probes it). @default false */
  readonly networkPolicyEnforced?: boolean;
  /** Milliseconds a Pod may take to run. @default 180000 */
  readonly startTimeoutMs?: number;
}

/** The Kubernetes backend: the sandbox runtime over the Kubernetes driver. */
export type KubernetesBackend = SandboxRuntime;

const objectOf = (message: string) => z.custom<object>((value) => value === undefined || (value !== null && typeof value === 'object'), { message });
const optionsSchema = backendOptionsSchema.extend({
  kubernetes: objectOf('expected the cluster settings (kubernetesSettings(config))').optional(),
  kubeConfig: objectOf('expected a KubeConfig of @kubernetes/client-node').optional(),
  imagePullPolicy: z.enum(['IfNotPresent', 'Always', 'Never']).optional(),
  networkPolicyEnforced: z.boolean().optional(),
  // Names become Pod and claim names: DNS-1123 labels, so lower case.
  namePrefix: z
    .string()
    .regex(/^[a-z0-9][a-z0-9-]{0,30}$/, { message: 'expected lower-case letters, digits or "-" (a Kubernetes name)' })
    .optional(),
  startTimeoutMs: z.number().int().min(1_000).optional(),
});

/**
 * Creates the Kubernetes backend: one hardened Pod and one PersistentVolumeClaim per scope in
 * `terminal.kubernetes_namespace`, commands through a persistent shell over the exec WebSocket.
 * Builds without contacting the cluster. See docs/backend-kubernetes.md.
 */
export const createKubernetesBackend: (options: KubernetesBackendOptions) => KubernetesBackend = defineBackend({
  name: 'createKubernetesBackend',
  options: optionsSchema,
  // docker_max_running: auto sizes the running sandboxes against the engine host, and a cluster
  // is no one host: its scheduler (and a ResourceQuota on the namespace) bounds them instead.
  settings: (settings) => (settings.docker_max_running === 'auto' ? { ...settings, docker_max_running: 0 } : settings),
  driver: (options: KubernetesBackendOptions, settings) => {
    const cluster = kubernetesSettings(options.kubernetes ?? {});
    return createKubernetesDriver({
      namespace: cluster.kubernetes_namespace,
      ...(cluster.kubernetes_kubeconfig ? { kubeconfig: cluster.kubernetes_kubeconfig } : {}),
      ...(cluster.kubernetes_context ? { context: cluster.kubernetes_context } : {}),
      ...(cluster.kubernetes_storage_class ? { storageClass: cluster.kubernetes_storage_class } : {}),
      ...(options.kubeConfig ? { kubeConfig: options.kubeConfig } : {}),
      ...(options.environment ? { environment: options.environment } : {}),
      // A claim always has a size: container_disk 0 (no limit elsewhere) asks for the default.
      diskMb: cluster.container_disk || 51_200,
      installation: installationLabel(cluster.sandbox_dir, options.environment),
      ...(options.labels ? { labels: options.labels } : {}),
      ...(options.imagePullPolicy ? { imagePullPolicy: options.imagePullPolicy } : {}),
      ...(options.networkPolicyEnforced !== undefined ? { networkPolicyEnforced: options.networkPolicyEnforced } : {}),
      ...(options.startTimeoutMs !== undefined ? { startTimeoutMs: options.startTimeoutMs } : {}),
      probeImage: options.image ?? settings.docker_image,
    });
  },
});
