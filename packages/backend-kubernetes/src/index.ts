export { createKubernetesBackend, type KubernetesBackend, type KubernetesBackendOptions } from './create-kubernetes-backend.js';
export { createKubernetesDriver, type KubernetesDriver, type KubernetesDriverOptions } from './create-kubernetes-driver.js';
export type { NetworkPolicyProbe } from './probe-network-policy.js';
export type { KubernetesCluster } from './find-kubernetes-cluster.js';
export { kubernetesSettings, type KubernetesSettings, type KubernetesSettingsInput } from './kubernetes-settings.js';
export { kubernetesRole } from './kubernetes-role.js';
