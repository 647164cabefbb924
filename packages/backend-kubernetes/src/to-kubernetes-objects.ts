import { ConfigError } from '@berth/core';
import type { SandboxSpec } from '@berth/core/driver';
import { HOME_TARGET, LABELS, WORKSPACE_TARGET } from '@berth/sandbox-runtime/driver';
import type { V1NetworkPolicy, V1PersistentVolumeClaim, V1Pod } from '@kubernetes/client-node';
import { INSTALLATION_KEY, LABELS_ANNOTATION, MANAGED_BY_KEY, MANAGED_BY_VALUE, NETWORK_KEY, POD_ANNOTATION, toKubernetesLabels } from './kubernetes-labels.js';

/** The sandbox's one container. */
export const CONTAINER_NAME = 'sandbox';
/** Denies every sandbox all ingress (from other sandboxes included). */
export const DENY_INGRESS_POLICY = 'berth-deny-ingress';
/** Denies sandboxes without network everything. */
export const NO_NETWORK_POLICY = 'berth-no-network';

/** What the cluster adds to every sandbox's objects. */
export interface ClusterObjectOptions {
  /** Size of each sandbox's claim, in megabytes (`container_disk`). */
  readonly diskMb: number;
  /** `terminal.kubernetes_storage_class`; the cluster's default class when absent. */
  readonly storageClass?: string;
  /** Label value of the Berth installation the claim belongs to. */
  readonly installation?: string;
  /** @default 'IfNotPresent' */
  readonly imagePullPolicy?: 'IfNotPresent' | 'Always' | 'Never';
}

/** The runtime's own label keys: the rest of a spec's labels are a caller's (a test run's marker, say). */
const RUNTIME_KEYS = new Set<string>(Object.values(LABELS));

/** The labels a sandbox's Pod carries: ownership for policies and selectors, never who it belongs to. */
function podLabels(spec: SandboxSpec, options: ClusterObjectOptions): Record<string, string> {
  const chosen = Object.fromEntries(Object.entries(spec.labels).filter(([key]) => !RUNTIME_KEYS.has(key) || key === LABELS.managedBy || key === LABELS.scope));
  return {
    ...toKubernetesLabels(chosen),
    [MANAGED_BY_KEY]: MANAGED_BY_VALUE,
    [NETWORK_KEY]: spec.network ? 'default' : 'none',
    ...(options.installation ? { [INSTALLATION_KEY]: options.installation } : {}),
  };
}

const cpuQuantity = (cpus: number): string => `${Math.max(1, Math.round(cpus * 1000))}m`;

/**
 * The Pod a sandbox runs as, from the runtime's spec: one container with the scope's claim at
 * `/workspace` and `/root`, `/tmp` in memory, and the hardening of the spec (every capability
 * dropped but the listed few, no privilege escalation, seccomp RuntimeDefault, a read-only root
 * when asked). No service-account token, no service variables of the namespace, no variable of
 * the user's: those travel over the exec stream. CPU and memory limits are the spec's; the
 * requests a tenth of them, since on Docker too they are caps, not reservations.
 */
export function buildSandboxPod(spec: SandboxSpec, options: ClusterObjectOptions): V1Pod {
  if (spec.volumes.length > 0) {
    throw new ConfigError(
      'terminal.docker_volumes',
      `terminal.docker_volumes binds host folders (${spec.volumes[0]!.source}), which a Kubernetes node does not have; remove it for backend: kubernetes`,
    );
  }
  const { limits, security } = spec;
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: spec.name, labels: podLabels(spec, options) },
    spec: {
      automountServiceAccountToken: false,
      enableServiceLinks: false,
      hostname: spec.hostname,
      // No cluster DNS (it names the cluster's services); no DNS at all without network.
      ...(spec.network ? { dnsPolicy: 'Default' } : { dnsPolicy: 'None', dnsConfig: { nameservers: ['127.0.0.1'] } }),
      // pause is PID 1 and reaps orphans, as the engine's init does on Docker.
      shareProcessNamespace: true,
      restartPolicy: 'Always',
      terminationGracePeriodSeconds: spec.stopGraceSeconds,
      securityContext: { seccompProfile: { type: 'RuntimeDefault' } },
      ...(security.runtime ? { runtimeClassName: security.runtime } : {}),
      containers: [
        {
          name: CONTAINER_NAME,
          image: spec.image,
          imagePullPolicy: options.imagePullPolicy ?? 'IfNotPresent',
          command: [...spec.command],
          workingDir: spec.workingDir,
          securityContext: {
            privileged: false,
            allowPrivilegeEscalation: !security.noNewPrivileges,
            capabilities: { drop: ['ALL'], add: [...security.capabilities] },
            readOnlyRootFilesystem: security.readOnlyRoot,
          },
          resources: {
            limits: { cpu: cpuQuantity(limits.cpus), memory: `${limits.memoryMb}Mi` },
            requests: { cpu: cpuQuantity(limits.cpus / 10), memory: `${Math.max(16, Math.round(limits.memoryMb / 10))}Mi` },
          },
          volumeMounts: [
            { name: 'files', mountPath: WORKSPACE_TARGET, subPath: 'workspace' },
            { name: 'files', mountPath: HOME_TARGET, subPath: 'home' },
            { name: 'tmp', mountPath: '/tmp' },
          ],
        },
      ],
      volumes: [
        { name: 'files', persistentVolumeClaim: { claimName: spec.name } },
        { name: 'tmp', emptyDir: { medium: 'Memory', sizeLimit: `${limits.tmpMb}Mi` } },
      ],
    },
  };
}

/**
 * The claim that holds a sandbox's workspace and home, and its record: the runtime's exact
 * labels and the Pod it starts as are annotations, so a stopped sandbox (no Pod) is still one
 * Berth lists, restarts and adopts. Its labels select it; none holds a variable.
 */
export function buildSandboxClaim(spec: SandboxSpec, pod: V1Pod, options: ClusterObjectOptions): V1PersistentVolumeClaim {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: {
      name: spec.name,
      labels: {
        ...toKubernetesLabels(spec.labels),
        [MANAGED_BY_KEY]: MANAGED_BY_VALUE,
        ...(options.installation ? { [INSTALLATION_KEY]: options.installation } : {}),
      },
      annotations: recordAnnotations(spec.labels, pod),
    },
    spec: {
      accessModes: ['ReadWriteOnce'],
      ...(options.storageClass ? { storageClassName: options.storageClass } : {}),
      resources: { requests: { storage: `${options.diskMb}Mi` } },
    },
  };
}

/** The annotations that make a claim a sandbox. */
export function recordAnnotations(labels: Readonly<Record<string, string>>, pod: V1Pod): Record<string, string> {
  return { [LABELS_ANNOTATION]: JSON.stringify(labels), [POD_ANNOTATION]: JSON.stringify(pod) };
}

/** The namespace's policies: no ingress to any sandbox, and nothing at all for those without network. */
export function buildNetworkPolicies(): V1NetworkPolicy[] {
  const managed = { [MANAGED_BY_KEY]: MANAGED_BY_VALUE };
  return [
    {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata: { name: DENY_INGRESS_POLICY, labels: managed },
      spec: { podSelector: { matchLabels: managed }, policyTypes: ['Ingress'] },
    },
    {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata: { name: NO_NETWORK_POLICY, labels: managed },
      spec: { podSelector: { matchLabels: { ...managed, [NETWORK_KEY]: 'none' } }, policyTypes: ['Ingress', 'Egress'] },
    },
  ];
}
