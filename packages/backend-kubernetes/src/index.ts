export { createKubernetesBackend, type KubernetesBackend, type KubernetesBackendOptions } from './create-kubernetes-backend.js';
export { createKubernetesDriver, type KubernetesDriver, type KubernetesDriverOptions } from './create-kubernetes-driver.js';
export type { NetworkPolicyProbe } from './probe-network-policy.js';
export { findKubernetesCluster, type FindKubernetesClusterOptions, type KubernetesCluster } from './find-kubernetes-cluster.js';
export { installationLabel, KUBERNETES_SETTING_KEYS, kubernetesSettings, type KubernetesSettings, type KubernetesSettingsInput } from './kubernetes-settings.js';
export { mapKubernetesError, type KubernetesErrorContext } from './map-kubernetes-error.js';
export { buildNetworkPolicies, buildSandboxClaim, buildSandboxPod, CONTAINER_NAME, DENY_INGRESS_POLICY, NO_NETWORK_POLICY } from './to-kubernetes-objects.js';
export { INSTALLATION_KEY, LABELS_ANNOTATION, MANAGED_BY_KEY, NETWORK_KEY, POD_ANNOTATION, SCOPE_KEY } from './kubernetes-labels.js';
export { kubernetesRole } from './kubernetes-role.js';
