import { SandboxError, type HostLogger } from '@berth/core';
import { createSandboxRuntime, sandboxSettings, type ProgressEvent, type SandboxRuntime, type SandboxSettingsInput } from '@berth/sandbox-runtime';
import type { KubeConfig } from '@kubernetes/client-node';
import { z } from 'zod';
import { createKubernetesDriver, type KubernetesDriverOptions } from './create-kubernetes-driver.js';
import { installationLabel, kubernetesSettings, type KubernetesSettingsInput } from './kubernetes-settings.js';

/** Options of {@link createKubernetesBackend}. */
export interface KubernetesBackendOptions {
  /** The settings the sandboxes follow (`sandboxSettings(config)` of `@berth/sandbox-runtime`; a raw `terminal:` part is validated). */
  readonly settings: SandboxSettingsInput;
  /** The cluster keys (`kubernetesSettings(config)`: namespace, kubeconfig, context, storage class, `container_disk`, `sandbox_dir`). */
  readonly kubernetes?: KubernetesSettingsInput;
  /** A ready client configuration (wins over the kubeconfig settings). */
  readonly kubeConfig?: KubeConfig;
  /** The gateway's environment, where the kubeconfig is looked for. @default process.env */
  readonly environment?: Readonly<Record<string, string | undefined>>;
  /** Overrides `settings.docker_image`. */
  readonly image?: string;
  /** @default 'IfNotPresent' */
  readonly imagePullPolicy?: KubernetesDriverOptions['imagePullPolicy'];
  /** The cluster enforces NetworkPolicy, so sandboxes are isolated from each other (`berth doctor` probes it). @default false */
  readonly networkPolicyEnforced?: boolean;
  /** Where Berth logs what it does; never a secret value. */
  readonly logger?: HostLogger;
  /** Progress of creates and starts, for a user waiting on a first command. */
  readonly onProgress?: (event: ProgressEvent) => void;
  /** Prefix of sandbox names. @default 'berth-' */
  readonly namePrefix?: string;
  /** Labels on every sandbox; the backend only lists, adopts, reaps and purges sandboxes that carry them. */
  /** The folder of this installation's sandboxes (`{sandbox_dir}/docker`): only those whose workspace is inside it are this backend's to list, adopt, reap, stop and remove. */
  readonly sandboxRoot?: string;
  readonly labels?: Readonly<Record<string, string>>;
  /** Milliseconds between automatic reaps; 0: only explicit `reap()` calls. @default a quarter of `lifetime_seconds` */
  readonly reapIntervalMs?: number;
  /** Milliseconds a Pod may take to run. @default 180000 */
  readonly startTimeoutMs?: number;
}

/** The Kubernetes backend: the sandbox runtime over the Kubernetes driver. */
export type KubernetesBackend = SandboxRuntime;

const objectOf = (message: string) => z.custom<object>((value) => value === undefined || (value !== null && typeof value === 'object'), { message });
const optionsSchema = z.object({
  settings: z.custom<SandboxSettingsInput>((value) => value !== null && typeof value === 'object', { message: 'expected the sandbox settings (sandboxSettings(config))' }),
  kubernetes: objectOf('expected the cluster settings (kubernetesSettings(config))').optional(),
  kubeConfig: objectOf('expected a KubeConfig of @kubernetes/client-node').optional(),
  environment: objectOf('expected the environment as an object of strings').optional(),
  image: z.string().min(1).regex(/^\S+$/, { message: 'expected an image reference without spaces' }).optional(),
  imagePullPolicy: z.enum(['IfNotPresent', 'Always', 'Never']).optional(),
  networkPolicyEnforced: z.boolean().optional(),
  logger: z.custom<HostLogger>((value) => value === undefined || (typeof value === 'object' && value !== null && typeof (value as HostLogger).warn === 'function')).optional(),
  onProgress: z.custom<(event: ProgressEvent) => void>((value) => value === undefined || typeof value === 'function').optional(),
  // Names become Pod and claim names: DNS-1123 labels, so lower case.
  namePrefix: z.string().regex(/^[a-z0-9][a-z0-9-]{0,30}$/, { message: 'expected lower-case letters, digits or "-" (a Kubernetes name)' }).optional(),
  labels: z.record(z.string(), z.string()).optional(),
  sandboxRoot: z.string().min(1).refine((value) => value.startsWith('/'), { message: 'expected an absolute folder' }).optional(),
  reapIntervalMs: z.number().int().min(0).optional(),
  startTimeoutMs: z.number().int().min(1_000).optional(),
});

/**
 * Creates the Kubernetes backend: one hardened Pod and one PersistentVolumeClaim per scope in
 * `terminal.kubernetes_namespace`, commands through a persistent shell over the exec WebSocket.
 * Builds without contacting the cluster. See docs/backend-kubernetes.md.
 */
export function createKubernetesBackend(options: KubernetesBackendOptions): KubernetesBackend {
  const parsed = optionsSchema.safeParse(options);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new SandboxError('OPTIONS_INVALID', `createKubernetesBackend: option ${issue.path.join('.') || '(root)'} is invalid: ${issue.message}`);
  }
  // docker_max_running: auto sizes the running sandboxes against the engine host, and a cluster
  // is no one host: its scheduler (and a ResourceQuota on the namespace) bounds them instead.
  const given = sandboxSettings(options.settings);
  const settings = given.docker_max_running === 'auto' ? { ...given, docker_max_running: 0 } : given;
  const cluster = kubernetesSettings(options.kubernetes ?? {});
  const image = options.image ?? settings.docker_image;
  const driver = createKubernetesDriver({
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
    probeImage: image,
  });
  return createSandboxRuntime({
    driver,
    settings,
    image,
    ...(options.logger ? { logger: options.logger } : {}),
    ...(options.onProgress ? { onProgress: options.onProgress } : {}),
    ...(options.namePrefix ? { namePrefix: options.namePrefix } : {}),
    ...(options.labels ? { labels: options.labels } : {}),
    ...(options.sandboxRoot ? { sandboxRoot: options.sandboxRoot } : {}),
    ...(options.reapIntervalMs !== undefined ? { reapIntervalMs: options.reapIntervalMs } : {}),
  });
}
