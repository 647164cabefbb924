import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import {
  ConfigError,
  createPlatformRegistry,
  createSandboxResolver,
  EngineUnavailableError,
  parseTerminalConfig,
  sandboxRootOf,
  type SandboxRequest,
  type TerminalConfigInput,
} from '@berth/core';
import { KubeConfig, NetworkingV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKubernetesBackend, createKubernetesDriver, type KubernetesBackend } from './index.js';
import { createClusterHarness, DRIVER_KUBECONFIG, STORAGE_CLASS, TEST_IMAGE, type ClusterHarness } from './testing/cluster-harness.js';

// What is particular to Kubernetes, on the real cluster, as the user holding only the Role:
// the objects Berth makes, stopped sandboxes (no Pod, the claim kept), several gateways at once,
// a Pod deleted mid-command, idle reaping, the CLI, purge down to the volume, and the errors.
const run = promisify(execFile);
const CLI = path.join(import.meta.dirname, '..', '..', '..', 'apps', 'gateway-plugin', 'dist', 'cli.js');
let cluster: ClusterHarness;
let sandboxDir: string;
const backends: KubernetesBackend[] = [];
let nextUser = 100;

beforeAll(async () => {
  cluster = await createClusterHarness('k8s');
  sandboxDir = await mkdtemp(path.join(tmpdir(), 'berth-k8s-test-'));
});

afterAll(async () => {
  for (const backend of backends) await backend.close().catch(() => undefined);
  await cluster?.cleanup();
  if (sandboxDir) await rm(sandboxDir, { recursive: true, force: true });
});

const configOf = (overrides: TerminalConfigInput = {}) =>
  parseTerminalConfig({
    docker_image: TEST_IMAGE,
    sandbox_dir: sandboxDir,
    container_memory: 256,
    container_cpu: 0.5,
    container_disk: 96,
    lifetime_seconds: 0,
    kubernetes_namespace: cluster.namespace,
    kubernetes_storage_class: STORAGE_CLASS,
    ...overrides,
  });

function backendOf(overrides: TerminalConfigInput = {}, options: { reapIntervalMs?: number; kubeConfig?: KubeConfig } = {}): KubernetesBackend {
  const config = configOf(overrides);
  const backend = createKubernetesBackend({
    settings: config,
    kubernetes: config,
    // As the plugin makes it: this installation's sandboxes, known before its first request.
    sandboxRoot: sandboxRootOf(config.sandbox_dir!),
    kubeConfig: options.kubeConfig ?? cluster.driverConfig,
    ...(options.reapIntervalMs !== undefined ? { reapIntervalMs: options.reapIntervalMs } : {}),
  });
  backends.push(backend);
  return backend;
}

const requestOf = (userId: string, environment: Record<string, string> = {}, overrides: TerminalConfigInput = {}): SandboxRequest =>
  createSandboxResolver({ config: configOf(overrides), registry: createPlatformRegistry(), environment }).resolve({
    session: { platform: 'telegram', userId },
  });

// A Telegram id is canonical without a leading zero (the run's digits may start with one: refused, seen once).
const newUser = (): string => `1${cluster.runId.replace(/\D/g, '').padEnd(4, '7').slice(0, 4)}${nextUser++}`;

const podsOf = async (backend: KubernetesBackend, request: SandboxRequest) => {
  const name = backend.containerName(request);
  const pods = await cluster.admin.listNamespacedPod({ namespace: cluster.namespace });
  return pods.items.filter((pod) => pod.metadata?.name === name);
};

const claimOf = async (name: string) => {
  try {
    return await cluster.admin.readNamespacedPersistentVolumeClaim({ name, namespace: cluster.namespace });
  } catch (error) {
    if ((error as { code?: number }).code === 404) return undefined;
    throw error;
  }
};

async function until<T>(what: string, probe: () => Promise<T | undefined | false>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`${what} did not happen within ${timeoutMs / 1000} s`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

describe('kubernetes: the objects of a sandbox', () => {
  it('a hardened Pod with limits from the config, a claim of container_disk, the namespace policies, and no secret or identity in any of it', async () => {
    const backend = backendOf();
    const secret = `ghp_k8s_${cluster.runId}_secret`;
    const user = newUser();
    const request = requestOf(user, { [`HERMES_USER_TELEGRAM_${user}_GITHUB_TOKEN`]: secret });
    const inside = await backend.doExec(request, {
      command: 'echo "[$GITHUB_TOKEN]"; ls /var/run/secrets/kubernetes.io 2>&1; hostname; grep NoNewPrivs /proc/self/status',
    });
    expect(inside.exitCode).toBe(0);
    expect(inside.stdout).toMatch(/^\[\*\*\*\]\n.*No such file or directory\nsandbox\nNoNewPrivs:\s+1\n$/);

    const [pod] = await podsOf(backend, request);
    expect(pod, 'one pod for the user').toBeDefined();
    const container = pod!.spec!.containers[0]!;
    expect(pod!.spec).toMatchObject({
      automountServiceAccountToken: false,
      enableServiceLinks: false,
      hostname: 'sandbox',
      securityContext: { seccompProfile: { type: 'RuntimeDefault' } },
    });
    expect(container.securityContext).toMatchObject({ privileged: false, allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } });
    expect(container.resources?.limits).toEqual({ cpu: '500m', memory: '256Mi' });
    expect(container.env ?? []).toEqual([]);

    const claim = await claimOf(pod!.metadata!.name!);
    expect(claim?.spec?.resources?.requests?.storage).toBe('96Mi');
    expect(claim?.spec?.storageClassName).toBe(STORAGE_CLASS);
    expect(claim?.status?.phase).toBe('Bound');

    const policies = await cluster.adminConfig.makeApiClient(NetworkingV1Api).listNamespacedNetworkPolicy({ namespace: cluster.namespace });
    expect(policies.items.map((policy) => policy.metadata?.name).sort()).toEqual(['berth-deny-ingress', 'berth-no-network']);

    const docker = await cluster.dockerRecordOf(pod!.metadata!.uid!);
    const everything = JSON.stringify({ pod, claim, docker });
    expect(everything).not.toContain(secret);
    expect(JSON.stringify({ labels: pod!.metadata!.labels, docker: docker.map((record) => record.Config.Labels) })).not.toContain(user);
    // The kubelet copies a Pod's labels onto its pause container: none may look like a Docker sandbox's.
    for (const record of docker) expect(Object.keys(record.Config.Labels ?? {}).filter((key) => key.startsWith('dev.berth.'))).toEqual([]);
  });
});

describe('kubernetes: lifecycle', () => {
  it('a restarted gateway finds a stopped sandbox (no Pod, the claim kept), lists it as stopped and starts it with its files', async () => {
    const first = backendOf();
    const request = requestOf(newUser());
    expect(await first.doExec(request, { command: 'echo kept > /workspace/f; echo home > /root/h' })).toMatchObject({ exitCode: 0 });
    const stopping = Date.now();
    await first.stop(request.scope.key);
    expect(Date.now() - stopping, 'a stop returns within its grace period and a little').toBeLessThan(8_000);
    // Gone, or still terminating (the kubelet takes its time): either way not running.
    expect((await podsOf(first, request)).filter((pod) => !pod.metadata?.deletionTimestamp)).toEqual([]);
    expect((await claimOf(first.containerName(request)))?.status?.phase).toBe('Bound');

    const second = backendOf();
    const listed = (await second.list()).filter((entry) => entry.scopeKey === request.scope.key);
    expect(listed.map((entry) => entry.state)).toEqual(['stopped']);
    expect(await second.doExec(request, { command: 'cat /workspace/f /root/h' })).toMatchObject({ exitCode: 0, stdout: 'kept\nhome\n' });
    expect(await podsOf(second, request)).toHaveLength(1);
  });

  it("two gateways' first messages of one user at once make exactly one Pod and one claim", async () => {
    const [one, two] = [backendOf(), backendOf()];
    const request = requestOf(newUser());
    const results = await Promise.all([one, two, one, two, one, two].map((backend, index) => backend.doExec(request, { command: `echo ${index}` })));
    expect(results.map((result) => result.stdout)).toEqual(['0\n', '1\n', '2\n', '3\n', '4\n', '5\n']);
    expect(await podsOf(one, request)).toHaveLength(1);
    const claims = await cluster.admin.listNamespacedPersistentVolumeClaim({ namespace: cluster.namespace });
    expect(claims.items.filter((claim) => claim.metadata?.name === one.containerName(request))).toHaveLength(1);
  });

  it('a Pod deleted while a command runs ends that command at once, and the next command gets a new Pod with the files', async () => {
    const backend = backendOf();
    const request = requestOf(newUser());
    expect(await backend.doExec(request, { command: 'echo before > /workspace/f' })).toMatchObject({ exitCode: 0 });
    const [before] = await podsOf(backend, request);
    const started = Date.now();
    const running = backend.doExec(request, { command: 'sleep 50; echo never', timeout: 90 }).then(
      (result) => ({ result }),
      (error: unknown) => ({ error }),
    );
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    await cluster.deletePod(before!.metadata!.name!);
    const outcome = await running;
    // Over dockershim the exec socket would stay open for good: the Pod watch ends the command.
    expect(Date.now() - started, 'the cut command came back well before its own 50 s').toBeLessThan(20_000);
    expect('result' in outcome ? outcome.result.stdout : '').not.toContain('never');
    expect(await backend.doExec(request, { command: 'cat /workspace/f' })).toMatchObject({ exitCode: 0, stdout: 'before\n' });
    const [after] = await podsOf(backend, request);
    expect(after?.metadata?.uid).not.toBe(before?.metadata?.uid);
  });

  it('idle reaping deletes the Pod and keeps the claim; the next command brings the files back', { timeout: 180_000 }, async () => {
    const backend = backendOf({ lifetime_seconds: 1 }, { reapIntervalMs: 500 });
    const request = requestOf(newUser());
    expect(await backend.doExec(request, { command: 'echo idle > /workspace/f' })).toMatchObject({ exitCode: 0 });
    const name = backend.containerName(request);
    // The reaper's delete, then the kubelet's: a minute and a half on a machine busy with other suites.
    await until('the idle pod is deleted', async () => (await podsOf(backend, request)).length === 0, 90_000);
    expect((await claimOf(name))?.status?.phase).toBe('Bound');
    expect((await backend.list()).find((entry) => entry.scopeKey === request.scope.key)?.state).toBe('stopped');
    expect(await backend.doExec(request, { command: 'cat /workspace/f' })).toMatchObject({ exitCode: 0, stdout: 'idle\n' });
  });
});

describe('kubernetes: the berth CLI', () => {
  let configFile: string;
  beforeAll(async () => {
    configFile = path.join(sandboxDir, 'config.yaml');
    const terminal = {
      backend: 'kubernetes',
      docker_image: TEST_IMAGE,
      sandbox_dir: path.join(sandboxDir, 'cli'),
      container_memory: 256,
      container_disk: 32,
      kubernetes_namespace: cluster.namespace,
      kubernetes_kubeconfig: DRIVER_KUBECONFIG,
      kubernetes_storage_class: STORAGE_CLASS,
    };
    await writeFile(
      configFile,
      `terminal:\n${Object.entries(terminal)
        .map(([key, value]) => `  ${key}: ${JSON.stringify(value)}`)
        .join('\n')}\n`,
    );
  });
  const berth = (...args: string[]) => run(process.execPath, [CLI, ...args], { env: { ...process.env, NO_COLOR: '1' }, timeout: 120_000 });

  it("berth exec runs in the user's Pod, berth ls lists it, berth rm --purge deletes the Pod, the claim and its volume", async () => {
    const user = newUser();
    expect(
      (await berth('exec', '--config', configFile, '--platform', 'telegram', '--user', user, '--', 'echo cli > /workspace/f; cat /workspace/f')).stdout,
    ).toBe('cli\n');
    const listed = JSON.parse((await berth('ls', '--config', configFile, '--json')).stdout) as Array<{ scope: string; state: string; containerId: string }>;
    const mine = listed.filter((entry) => entry.scope === `user:telegram:${user}`);
    expect(mine.map((entry) => entry.state)).toEqual(['running']);
    const name = mine[0]!.containerId.split('@')[0]!;
    const volume = (await claimOf(name))?.spec?.volumeName;
    expect(volume, 'the claim is bound to a volume').toBeTruthy();
    const folder = (await cluster.admin.readPersistentVolume({ name: volume! })).spec?.hostPath?.path;

    await berth('rm', '--config', configFile, '--platform', 'telegram', '--user', user, '--purge');
    expect(await claimOf(name)).toBeUndefined();
    expect(await cluster.pod(name)).toBeUndefined();
    // The provisioner's reclaim policy deletes the volume, and on this one node its folder.
    await until('the volume is deleted', async () => {
      try {
        await cluster.admin.readPersistentVolume({ name: volume! });
        return false;
      } catch (error) {
        return (error as { code?: number }).code === 404;
      }
    });
    if (folder) await until(`${folder} is removed`, async () => !existsSync(folder));
    const after = JSON.parse((await berth('ls', '--config', configFile, '--json')).stdout) as Array<{ scope: string }>;
    expect(after.filter((entry) => entry.scope === `user:telegram:${user}`)).toEqual([]);
  });

  it('berth top lists the Pod, and says this cluster serves no resource metrics API (it has no metrics-server)', async () => {
    const user = newUser();
    await berth('exec', '--config', configFile, '--platform', 'telegram', '--user', user, '--', 'true');
    const { stdout, stderr } = await berth('top', '--once', '--json', '--config', configFile);
    const rows = JSON.parse(stdout) as Array<{ scope: string; state: string; cpuPercent: number | null }>;
    expect(rows.find((row) => row.scope === `user:telegram:${user}`)).toMatchObject({ state: 'running', cpuPercent: null });
    // The Role lets the user ask (a 403 would say so); the API server answers 404.
    expect(stderr).toContain('the cluster serves no resource metrics API (metrics.k8s.io');
    await berth('rm', '--config', configFile, '--platform', 'telegram', '--user', user, '--purge');
  }, 120_000);

  it('berth doctor reaches the cluster and says whether it enforces NetworkPolicy (this one does not)', async () => {
    const { stdout } = await berth('doctor', '--config', configFile, '--json').catch((error: { stdout?: string }) => ({ stdout: error.stdout ?? '' }));
    const report = JSON.parse(stdout) as {
      engine: { name: string; reachable: boolean; version: string };
      checks: Array<{ name: string; status: string; detail: string }>;
    };
    expect(report.engine).toMatchObject({ name: 'kubernetes', reachable: true, version: 'v1.20.2' });
    expect(report.checks.find((check) => check.name === 'isolation' && /NetworkPolicy is NOT enforced/.test(check.detail))?.status).toBe('warning');
    expect(report.checks.some((check) => check.name === 'engine' && /podPidsLimit/.test(check.detail))).toBe(true);
    expect(report.checks.find((check) => check.name === 'capacity')?.detail).toMatch(/scheduler places each sandbox's pod/);
  }, 120_000);
});

describe('kubernetes: errors name the culprit and the fix, in one line', () => {
  it('an API server that does not answer', async () => {
    const nowhere = new KubeConfig();
    nowhere.loadFromOptions({
      clusters: [{ name: 'nowhere', server: 'https://127.0.0.1:6449', skipTLSVerify: true }],
      users: [{ name: 'nobody', token: 'none' }],
      contexts: [{ name: 'nowhere', cluster: 'nowhere', user: 'nobody' }],
      currentContext: 'nowhere',
    });
    const error = await backendOf({}, { kubeConfig: nowhere })
      .doExec(requestOf(newUser()), { command: 'true' })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(EngineUnavailableError);
    expect((error as Error).message).toMatch(
      /^could not .*: the Kubernetes API at https:\/\/127\.0\.0\.1:6449 did not answer \(ECONNREFUSED\); check terminal\.kubernetes_kubeconfig/,
    );
    expect((error as Error).message).not.toContain('\n');
  });

  it('a namespace that does not exist', async () => {
    const driver = createKubernetesDriver({ kubeConfig: cluster.adminConfig, namespace: `${cluster.namespace}-missing` });
    const error = await driver.ping().catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message).toMatch(
      new RegExp(
        `namespace ${cluster.namespace}-missing does not exist .*; ` +
          `create it \\(kubectl create namespace ${cluster.namespace}-missing\\) or set terminal\\.kubernetes_namespace$`,
      ),
    );
  });

  it('a user without the Role in the namespace', async () => {
    const driver = createKubernetesDriver({ kubeConfig: cluster.driverConfig, namespace: 'default' });
    const error = await driver.ping().catch((caught: unknown) => caught);
    expect((error as Error).message).toMatch(/may not read namespace default: it does not exist, or the Role in docs\/backend-kubernetes\.md is not bound/);
    const listing = await driver.list({ 'dev.berth.managed-by': 'berth' }).catch((caught: unknown) => caught);
    expect((listing as Error).message).toMatch(
      /User "berth" cannot list .* \(403\); bind the Role in docs\/backend-kubernetes\.md to this user in namespace default$/,
    );
  });
});

describe('kubernetes: the exec channel', () => {
  it('speaks v4.channel.k8s.io on this cluster, and end() there keeps the command running with its output and exit code', async () => {
    const backend = backendOf();
    const request = requestOf(newUser());
    const id = await backend.doAcquire(request);
    const channel = (await backend.driver.openChannel(id, ['/bin/sh', '-c', 'read line; echo "got $line"; exit 3'])) as Awaited<
      ReturnType<typeof backend.driver.openChannel>
    > & { protocol?: string };
    expect(channel.protocol).toBe('v4.channel.k8s.io');
    let output = '';
    channel.onStdout((chunk) => (output += chunk.toString()));
    const closed = new Promise<void>((resolve) => channel.onClose(resolve));
    channel.write('hello\n');
    channel.end();
    await closed;
    expect(output).toBe('got hello\n');
    expect(await channel.exitCode()).toBe(3);
  });
});
