/**
 * Exec benchmark of the Kubernetes backend on a real cluster: a new user's cold first command
 * (claim and Pod made, Pod started, shell opened), and a warm command through the persistent
 * shell against `kubectl exec` and against one exec WebSocket per command, on the same Pod.
 * Prints a table and writes JSON to bench-results/. Run with `pnpm --filter @berth/backend-kubernetes bench`
 * once `bash scripts/kubernetes.sh up` has started the test cluster.
 *
 * BENCH_WARM_RUNS (200), BENCH_KUBECTL_RUNS (40) and BENCH_COLD_RUNS (10) change the sizes;
 * BERTH_KUBECTL names the kubectl (best the cluster's own version; `scripts/kubernetes.sh status` prints it).
 */
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { createPlatformRegistry, createSandboxResolver, parseTerminalConfig, type SandboxRequest } from '@berth/core';
import { createKubernetesBackend } from '../src/index.js';
import { createClusterHarness, DRIVER_KUBECONFIG, STORAGE_CLASS, TEST_IMAGE } from '../src/testing/cluster-harness.js';

const run = promisify(execFile);
const sizes = {
  warm: Number(process.env.BENCH_WARM_RUNS ?? 200),
  kubectl: Number(process.env.BENCH_KUBECTL_RUNS ?? 40),
  cold: Number(process.env.BENCH_COLD_RUNS ?? 10),
};
const kubectl = process.env.BERTH_KUBECTL ?? 'kubectl';

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
};
const percentile = (values: number[], p: number): number =>
  [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor((values.length * p) / 100))]!;
const round = (value: number): number => Math.round(value * 100) / 100;
const summary = (values: number[]) => ({
  runs: values.length,
  medianMs: round(median(values)),
  p90Ms: round(percentile(values, 90)),
  minMs: round(Math.min(...values)),
});
const timed = async (task: () => Promise<unknown>): Promise<number> => {
  const started = performance.now();
  await task();
  return performance.now() - started;
};

const cluster = await createClusterHarness('bench');
const sandboxDir = await mkdtemp(path.join(tmpdir(), 'berth-k8s-bench-'));
const config = parseTerminalConfig({
  docker_image: TEST_IMAGE,
  sandbox_dir: sandboxDir,
  container_memory: 256,
  container_disk: 32,
  lifetime_seconds: 0,
  docker_mask_secrets: false,
  kubernetes_namespace: cluster.namespace,
  kubernetes_storage_class: STORAGE_CLASS,
});
const backend = createKubernetesBackend({ settings: config, kubernetes: config, kubeConfig: cluster.driverConfig });
const resolver = createSandboxResolver({ config, registry: createPlatformRegistry(), environment: {} });
const requestOf = (userId: string): SandboxRequest => resolver.resolve({ session: { platform: 'telegram', userId } });
const kubectlVersion = await run(kubectl, ['version', '--client', '--short']).then(
  (out) => out.stdout.trim(),
  async () => (await run(kubectl, ['version', '--client'])).stdout.split('\n')[0]!.trim(),
);
const results: Record<string, unknown> = {
  image: TEST_IMAGE,
  sizes,
  cluster: (await backend.describe()).version,
  kubectl: kubectlVersion,
  node: process.version,
  date: new Date().toISOString(),
};

try {
  // 1. Warm: the persistent shell, kubectl exec, and one exec WebSocket per command, on one Pod.
  const warmRequest = requestOf('1');
  const id = await backend.doAcquire(warmRequest);
  const pod = id.split('@')[0]!;
  const execOnce = async (): Promise<void> => {
    const channel = await backend.driver.openChannel(id, ['true']);
    channel.onStdout(() => undefined);
    channel.onStderr(() => undefined);
    await new Promise<void>((resolve) => channel.onClose(resolve));
    const code = await channel.exitCode();
    if (code !== 0) throw new Error(`exec exited ${code}`);
  };
  const kubectlExec = () => run(kubectl, ['--kubeconfig', DRIVER_KUBECONFIG, '-n', cluster.namespace, 'exec', pod, '-c', 'sandbox', '--', 'true']);
  for (let index = 0; index < 10; index++) {
    await backend.doExec(warmRequest, { command: 'true' });
    await execOnce();
  }
  const warm = { berth: [] as number[], berthForked: [] as number[], execWebSocket: [] as number[], kubectl: [] as number[] };
  for (let index = 0; index < sizes.warm; index++) {
    warm.berth.push(await timed(() => backend.doExec(warmRequest, { command: 'true' })));
    warm.berthForked.push(await timed(() => backend.doExec(warmRequest, { command: '/bin/true' })));
    if (index < sizes.kubectl) {
      warm.execWebSocket.push(await timed(execOnce));
      warm.kubectl.push(await timed(kubectlExec));
    }
  }
  results.warm = {
    berth: summary(warm.berth),
    berthForked: summary(warm.berthForked),
    execWebSocket: summary(warm.execWebSocket),
    kubectlExec: summary(warm.kubectl),
    kubectlToBerth: round(median(warm.kubectl) / median(warm.berth)),
  };

  // 2. Cold: a new user's first command makes the claim and the Pod and opens the shell.
  const cold: number[] = [];
  for (let index = 0; index < sizes.cold; index++) {
    const request = requestOf(`cold${index}`);
    cold.push(await timed(() => backend.doExec(request, { command: 'true' })));
    await backend.remove(request.scope.key, { purge: true, paths: request.paths });
  }
  results.cold = { berth: summary(cold) };

  const rows: Array<[string, { medianMs: number; p90Ms: number; runs: number }]> = [
    ['warm, Berth persistent shell, `true` (builtin)', summary(warm.berth)],
    ['warm, Berth persistent shell, `/bin/true` (fork+exec)', summary(warm.berthForked)],
    ['warm, one exec WebSocket per command (client-node)', summary(warm.execWebSocket)],
    [`warm, kubectl exec (${kubectlVersion})`, summary(warm.kubectl)],
    ['cold, first command of a new user (claim + Pod + shell)', summary(cold)],
  ];
  process.stdout.write(`Kubernetes ${String(results.cluster)}, image ${TEST_IMAGE}\n`);
  for (const [name, value] of rows)
    process.stdout.write(
      `${name.padEnd(62)} median ${String(value.medianMs).padStart(8)} ms   p90 ${String(value.p90Ms).padStart(8)} ms   (${value.runs} runs)\n`,
    );
  const folder = path.join(import.meta.dirname, '..', '..', '..', 'bench-results');
  await mkdir(folder, { recursive: true });
  const file = path.join(folder, `backend-kubernetes-exec-${Date.now()}.json`);
  await writeFile(file, `${JSON.stringify(results, null, 2)}\n`);
  process.stdout.write(`written to ${path.relative(process.cwd(), file)}\n`);
} finally {
  await backend.close();
  await cluster.cleanup();
  await rm(sandboxDir, { recursive: true, force: true });
}
