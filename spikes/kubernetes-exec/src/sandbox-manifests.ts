/**
 * The objects a sandbox is on Kubernetes, as the spike makes them: a claim for its files, a
 * hardened Pod that mounts it, and one NetworkPolicy per namespace that denies ingress to every
 * sandbox. Label keys are not Docker's `dev.berth.*`: the kubelet (dockershim) copies a Pod's
 * labels onto its pause container, and Berth's Docker backend lists containers by those keys.
 */
import type { V1NetworkPolicy, V1PersistentVolumeClaim, V1Pod } from '@kubernetes/client-node';

export const MANAGED_BY_LABEL = 'app.kubernetes.io/managed-by';
export const SCOPE_LABEL = 'berth.dev/scope';

/** What the sandbox's main process runs: waits, and leaves at once on TERM. */
const KEEP_ALIVE = 'trap "exit 0" TERM INT HUP; while :; do sleep 3600 & wait $!; done';

export interface SandboxManifestOptions {
  readonly name: string;
  readonly scopeDigest: string;
  readonly image: string;
  readonly storageClass?: string;
  readonly diskMegabytes: number;
  readonly cpu: number;
  readonly memoryMegabytes: number;
  readonly tmpMegabytes: number;
  readonly capabilities: readonly string[];
}

const labels = (options: SandboxManifestOptions) => ({ [MANAGED_BY_LABEL]: 'berth', [SCOPE_LABEL]: options.scopeDigest });

export function buildClaim(options: SandboxManifestOptions): V1PersistentVolumeClaim {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: { name: options.name, labels: labels(options) },
    spec: {
      accessModes: ['ReadWriteOnce'],
      ...(options.storageClass ? { storageClassName: options.storageClass } : {}),
      resources: { requests: { storage: `${options.diskMegabytes}Mi` } },
    },
  };
}

export function buildPod(options: SandboxManifestOptions): V1Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: options.name, labels: labels(options) },
    spec: {
      // Nothing of the cluster's inside: no token, no service variables, the node's resolver.
      automountServiceAccountToken: false,
      enableServiceLinks: false,
      dnsPolicy: 'Default',
      hostname: 'sandbox',
      // pause becomes PID 1 and reaps orphans, as Docker's Init does.
      shareProcessNamespace: true,
      restartPolicy: 'Always',
      terminationGracePeriodSeconds: 2,
      securityContext: { seccompProfile: { type: 'RuntimeDefault' } },
      containers: [
        {
          name: 'sandbox',
          image: options.image,
          imagePullPolicy: 'IfNotPresent',
          command: ['/bin/sh', '-c', KEEP_ALIVE],
          workingDir: '/workspace',
          securityContext: {
            allowPrivilegeEscalation: false,
            privileged: false,
            capabilities: { drop: ['ALL'], add: [...options.capabilities] },
          },
          resources: {
            limits: { cpu: String(options.cpu), memory: `${options.memoryMegabytes}Mi` },
            // A cap, as on Docker, not a reservation: requests stay small so a node holds many.
            requests: { cpu: '50m', memory: '32Mi' },
          },
          volumeMounts: [
            { name: 'files', mountPath: '/workspace', subPath: 'workspace' },
            { name: 'files', mountPath: '/root', subPath: 'home' },
            { name: 'tmp', mountPath: '/tmp' },
          ],
        },
      ],
      volumes: [
        { name: 'files', persistentVolumeClaim: { claimName: options.name } },
        { name: 'tmp', emptyDir: { medium: 'Memory', sizeLimit: `${options.tmpMegabytes}Mi` } },
      ],
    },
  };
}

/** Denies all ingress to Berth's pods in the namespace (enforced only where the network plugin does). */
export function buildDenyIngressPolicy(): V1NetworkPolicy {
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: { name: 'berth-deny-ingress', labels: { [MANAGED_BY_LABEL]: 'berth' } },
    spec: { podSelector: { matchLabels: { [MANAGED_BY_LABEL]: 'berth' } }, policyTypes: ['Ingress'], ingress: [] },
  };
}
