import type { SandboxBackendV1 } from '@berth/core';
import type { DoctorCheck } from './doctor-report.js';

/** What a driver that can probe NetworkPolicy enforcement offers (the Kubernetes one). */
export type NetworkPolicyProbe = () => Promise<{ readonly enforced: boolean | undefined; readonly detail: string }>;

export function networkPolicyProbeOf(backend: SandboxBackendV1): NetworkPolicyProbe | undefined {
  const driver = (backend as { driver?: { probeNetworkPolicy?: unknown } }).driver;
  return typeof driver?.probeNetworkPolicy === 'function' ? (driver.probeNetworkPolicy as NetworkPolicyProbe).bind(driver) : undefined;
}

/** Whether the sandboxes' deny-ingress policy holds, found by trying (two probe pods). */
export async function networkPolicyCheck(probe: NetworkPolicyProbe): Promise<DoctorCheck> {
  const result = await probe();
  if (result.enforced === true) return { name: 'isolation', status: 'ok', detail: `NetworkPolicy is enforced: ${result.detail}` };
  return {
    name: 'isolation',
    status: 'warning',
    detail:
      result.enforced === false
        ? `NetworkPolicy is NOT enforced: ${result.detail}; sandboxes can reach each other`
        : `whether NetworkPolicy is enforced is unknown: ${result.detail}`,
    fix: 'use a network plugin that enforces NetworkPolicy (Calico, Cilium); see docs/backend-kubernetes.md',
  };
}
