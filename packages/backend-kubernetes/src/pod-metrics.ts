import { CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import type { EngineUsage } from '@berth/core';

// What each sandbox Pod uses, from the cluster's resource metrics API (`metrics.k8s.io`, served
// by metrics-server, the API `kubectl top` reads): one list of the namespace's PodMetrics per
// call, never one call per sandbox. A cluster without that API, or a user the Role does not let
// list it, gets one line saying which, and `berth top` shows "-".

const SUFFIXES: Record<string, number> = {
  n: 1e-9,
  u: 1e-6,
  m: 1e-3,
  '': 1,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  P: 1e15,
  E: 1e18,
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
  Pi: 2 ** 50,
  Ei: 2 ** 60,
};

/**
 * A Kubernetes quantity (`250m`, `123456n`, `10Mi`, `1.5`, `1e3`) as a number; `undefined` for
 * anything else. @kubernetes/client-node has one (`quantityToScalar`) but does not export it.
 */
export function parseQuantity(text: unknown): number | undefined {
  if (typeof text !== 'string' || text.length > 64) return undefined;
  const match = /^([0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]{1,3})?)(n|u|m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$/.exec(text);
  if (!match) return undefined;
  const value = Number(match[1]) * SUFFIXES[match[2] ?? '']!;
  return Number.isFinite(value) ? value : undefined;
}

/** Each Pod's CPU and memory from a `PodMetricsList`, summed over its containers; what is not one is left out. */
export function parsePodMetrics(list: unknown): Map<string, { cpuCores: number; memoryBytes: number }> {
  const found = new Map<string, { cpuCores: number; memoryBytes: number }>();
  const items = (list as { items?: unknown } | null)?.items;
  if (!Array.isArray(items)) return found;
  for (const item of items.slice(0, 100_000)) {
    const name = (item as { metadata?: { name?: unknown } } | null)?.metadata?.name;
    const containers = (item as { containers?: unknown } | null)?.containers;
    if (typeof name !== 'string' || !Array.isArray(containers)) continue;
    let cpuCores = 0;
    let memoryBytes = 0;
    let whole = true;
    for (const container of containers) {
      const usage = (container as { usage?: { cpu?: unknown; memory?: unknown } } | null)?.usage;
      const cpu = parseQuantity(usage?.cpu);
      const memory = parseQuantity(usage?.memory);
      if (cpu === undefined || memory === undefined) whole = false;
      else {
        cpuCores += cpu;
        memoryBytes += memory;
      }
    }
    if (whole) found.set(name, { cpuCores, memoryBytes: Math.round(memoryBytes) });
  }
  return found;
}

/** Every Pod's usage in `namespace` from the metrics API, or why it cannot be read. */
export async function readPodUsage(kubeConfig: KubeConfig, namespace: string): Promise<EngineUsage> {
  const api = kubeConfig.makeApiClient(CustomObjectsApi);
  let list: unknown;
  try {
    list = await api.listNamespacedCustomObject({ group: 'metrics.k8s.io', version: 'v1beta1', namespace, plural: 'pods' });
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    if (code === 404)
      return { missing: 'the cluster serves no resource metrics API (metrics.k8s.io, which kubectl top reads too): install metrics-server in the cluster' };
    if (code === 403)
      return {
        missing: `this user may not list pods.metrics.k8s.io in namespace ${namespace}: add the metrics rule of the Role in docs/backend-kubernetes.md`,
      };
    const message = error instanceof Error ? error.message.split('\n')[0]!.slice(0, 200) : String(error).slice(0, 200);
    return { missing: `the cluster's resource metrics API did not answer (${code === undefined ? message : `status ${String(code)}`})` };
  }
  return { sandboxes: parsePodMetrics(list) };
}
