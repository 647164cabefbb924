/**
 * The Kubernetes spike: a hardened Pod + claim in a namespace of its own, one exec WebSocket
 * driving a framed persistent shell, a second one killing timed-out process trees, a Pod
 * deleted under the session, and timings against `kubectl exec` on the same Pod. Everything a
 * driver would do runs as a user that holds only the Role of docs/backend-kubernetes.md; an admin
 * makes the namespace and the binding. Prints what it checked and measured as JSON; exits 1
 * when a check fails.
 *
 *   BERTH_KUBECONFIG=admin BERTH_DRIVER_KUBECONFIG=berth KUBECTL=… pnpm --filter @berth/spike-kubernetes-exec spike
 */
import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import { ApiException, CoreV1Api, KubeConfig, NetworkingV1Api, RbacAuthorizationV1Api, Watch, type V1Pod, type V1Status } from '@kubernetes/client-node';
import { FramedShell, openExec } from './framed-shell.js';
import { buildClaim, buildDenyIngressPolicy, buildPod, type SandboxManifestOptions } from './sandbox-manifests.js';

const run = promisify(execFile);
const kubeconfigPath = process.env.BERTH_KUBECONFIG ?? '/var/lib/berth/kubernetes/admin.kubeconfig';
const driverKubeconfigPath = process.env.BERTH_DRIVER_KUBECONFIG ?? '/var/lib/berth/kubernetes/berth.kubeconfig';
const driverUser = process.env.BERTH_DRIVER_USER ?? 'berth';
const kubectl = process.env.KUBECTL ?? 'kubectl';
const image = process.env.BERTH_IMAGE ?? 'localhost/berth-busybox:latest';
const storageClass = process.env.BERTH_STORAGE_CLASS ?? 'berth-hostpath';
const warmRounds = Number(process.env.WARM_ROUNDS ?? 300);
const execRounds = Number(process.env.EXEC_ROUNDS ?? 30);

const adminConfig = new KubeConfig();
adminConfig.loadFromFile(kubeconfigPath);
const admin = adminConfig.makeApiClient(CoreV1Api);
const rbac = adminConfig.makeApiClient(RbacAuthorizationV1Api);
// What the driver does, it does as a user with only the Role below.
const config = new KubeConfig();
config.loadFromFile(driverKubeconfigPath);
const core = config.makeApiClient(CoreV1Api);
const networking = config.makeApiClient(NetworkingV1Api);

const namespace = `berth-spike-${randomBytes(4).toString('hex')}`;
const secret = `spike-secret-${randomBytes(8).toString('hex')}`;
const scopeDigest = createHash('sha256').update(`spike:${namespace}`).digest('hex').slice(0, 24);
const manifest: SandboxManifestOptions = {
  name: `berth-${scopeDigest}`,
  scopeDigest,
  image,
  storageClass,
  diskMegabytes: 1024,
  cpu: 1,
  memoryMegabytes: 512,
  tmpMegabytes: 64,
  capabilities: ['CHOWN', 'DAC_OVERRIDE', 'FOWNER', 'FSETID', 'KILL', 'SETGID', 'SETUID'],
};
const target = { namespace, pod: manifest.name, container: 'sandbox' };

/** The Role docs/backend-kubernetes.md asks an operator to paste (kept in step with it). */
const role = {
  metadata: { name: 'berth-sandboxes' },
  rules: [
    { apiGroups: [''], resources: ['pods'], verbs: ['get', 'list', 'watch', 'create', 'delete'] },
    { apiGroups: [''], resources: ['pods/exec'], verbs: ['get', 'create'] },
    { apiGroups: [''], resources: ['persistentvolumeclaims'], verbs: ['get', 'list', 'create', 'delete'] },
    { apiGroups: ['networking.k8s.io'], resources: ['networkpolicies'], verbs: ['get', 'create'] },
    { apiGroups: [''], resources: ['namespaces'], resourceNames: [namespace], verbs: ['get'] },
  ],
};

/** The status code and first line an API error gives, for the driver's error mapping. */
async function errorShape(action: () => Promise<unknown>): Promise<unknown> {
  try {
    await action();
    return 'no error';
  } catch (error) {
    if (error instanceof ApiException) {
      const body = typeof error.body === 'string' ? (JSON.parse(error.body) as { message?: string; reason?: string }) : (error.body as { message?: string; reason?: string });
      return { apiException: error.code, reason: body?.reason, message: body?.message };
    }
    const cause = (error as { cause?: { code?: string; message?: string } }).cause;
    return { error: (error as Error).constructor?.name, message: String((error as Error).message ?? error).split('\n')[0], code: (error as { code?: string }).code ?? cause?.code ?? null, cause: cause?.message ?? null };
  }
}

const checks: Array<{ check: string; ok: boolean; detail?: unknown }> = [];
const check = (name: string, ok: boolean, detail?: unknown) => {
  checks.push({ check: name, ok, ...(detail === undefined ? {} : { detail }) });
  process.stderr.write(`${ok ? 'ok  ' : 'FAIL'} ${name}${detail === undefined ? '' : ` ${JSON.stringify(detail)}`}\n`);
};

const sleep = (milliseconds: number) => new Promise((resolve) => setTimeout(resolve, milliseconds));

function summarize(samples: number[]) {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (fraction: number) => sorted[Math.min(sorted.length - 1, Math.floor(fraction * sorted.length))]!;
  const round = (value: number) => Math.round(value * 100) / 100;
  return { n: sorted.length, p50: round(at(0.5)), p95: round(at(0.95)), mean: round(sorted.reduce((a, b) => a + b, 0) / sorted.length), min: round(sorted[0]!), max: round(sorted.at(-1)!) };
}

/** Milliseconds until the Pod runs with its container ready, and when each step happened. */
async function waitForPod(started: number): Promise<Record<string, number>> {
  const seen: Record<string, number> = {};
  for (;;) {
    const pod = await core.readNamespacedPod({ name: target.pod, namespace });
    const conditions = pod.status?.conditions ?? [];
    if (!seen.scheduled && conditions.some((c) => c.type === 'PodScheduled' && c.status === 'True')) seen.scheduled = performance.now() - started;
    if (pod.status?.phase === 'Running' && pod.status.containerStatuses?.[0]?.ready) {
      seen.running = performance.now() - started;
      return seen;
    }
    if (performance.now() - started > 120_000) throw new Error(`pod ${target.pod} not running after 120 s: ${JSON.stringify(pod.status)}`);
    await sleep(50);
  }
}

async function claimBound(): Promise<boolean> {
  const claim = await core.readNamespacedPersistentVolumeClaim({ name: manifest.name, namespace });
  return claim.status?.phase === 'Bound';
}

/** One exec WebSocket per command (what a driver without a session would pay). */
async function execOnce(command: string[]): Promise<{ status: V1Status | undefined; closed: { code: number } | undefined; stdout: string; milliseconds: number }> {
  const started = performance.now();
  let stdout = '';
  let status: V1Status | undefined;
  const done = new Promise<{ code: number }>((resolve) => {
    void openExec(config, target, command, { stdout: (chunk) => (stdout += chunk.toString()), stderr: () => undefined, status: (value) => (status = value) }).then(({ socket }) => {
      socket.on('close', (code: number) => resolve({ code }));
    });
  });
  const closed = await done;
  return { status, closed, stdout, milliseconds: performance.now() - started };
}

async function main(): Promise<void> {
  const results: Record<string, unknown> = { namespace, kubeconfig: kubeconfigPath };
  await admin.createNamespace({ body: { metadata: { name: namespace, labels: { [`app.kubernetes.io/managed-by`]: 'berth-spike' } } } });
  try {
    // Before the binding: what a driver without rights sees.
    results.errorWithoutRole = await errorShape(() => core.listNamespacedPod({ namespace }));
    await rbac.createNamespacedRole({ namespace, body: role });
    await rbac.createNamespacedRoleBinding({
      namespace,
      body: { metadata: { name: 'berth-sandboxes' }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'berth-sandboxes' }, subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: driverUser }] },
    });
    // RBAC takes effect at once in 1.20, but give the authorizer's cache a moment.
    for (let tries = 0; tries < 50; tries++) {
      if ((await errorShape(() => core.listNamespacedPod({ namespace }))) === 'no error') break;
      await sleep(100);
    }
    results.namespaceReadableThroughRole = await errorShape(() => core.readNamespace({ name: namespace }));
    check('the Role lets the driver read its own namespace (a missing one is told apart)', results.namespaceReadableThroughRole === 'no error', results.namespaceReadableThroughRole);
    results.errorOtherNamespace = await errorShape(() => core.readNamespace({ name: 'default' }));
    results.errorMissingNamespace = await errorShape(() => core.createNamespacedPod({ namespace: `${namespace}-missing`, body: buildPod(manifest) }));
    const unreachable = new KubeConfig();
    unreachable.loadFromOptions({
      clusters: [{ name: 'nowhere', server: 'https://127.0.0.1:1', skipTLSVerify: true }],
      users: [{ name: 'nobody' }],
      contexts: [{ name: 'nowhere', cluster: 'nowhere', user: 'nobody' }],
      currentContext: 'nowhere',
    });
    results.errorUnreachable = await errorShape(() => unreachable.makeApiClient(CoreV1Api).listNamespacedPod({ namespace }));
    results.errorExecMissingPod = await errorShape(() => openExec(config, { ...target, pod: 'berth-none' }, ['/bin/true'], { stdout: () => undefined, stderr: () => undefined, status: () => undefined }));
    await networking.createNamespacedNetworkPolicy({ namespace, body: buildDenyIngressPolicy() });

    // Cold: a claim and a Pod that did not exist, to the first command's answer.
    const coldStart = performance.now();
    await core.createNamespacedPersistentVolumeClaim({ namespace, body: buildClaim(manifest) });
    await core.createNamespacedPod({ namespace, body: buildPod(manifest) });
    const podTimes = await waitForPod(coldStart);
    const shell = new FramedShell(config, target);
    const openStart = performance.now();
    await shell.open();
    const openMs = performance.now() - openStart;
    await shell.setEnvironment({ GITHUB_TOKEN: secret, GREETING: "it's \"quoted\" $(not run)\nline two" });
    const first = await shell.run('echo first');
    results.cold = { ...podTimes, shellOpen: openMs, firstCommand: performance.now() - coldStart };
    check('first command answers', first.exitCode === 0 && first.stdout === 'first\n', first);
    check('claim bound by the hostPath provisioner', await claimBound());
    check('the exec speaks v4.channel.k8s.io', shell.protocol === 'v4.channel.k8s.io', shell.protocol);
    check('setsid is in the image', shell.hasSetsid);

    // Semantics.
    const codes = await shell.run('echo out; echo err >&2; exit 3');
    check('exit code, stdout and stderr apart', codes.exitCode === 3 && codes.stdout === 'out\n' && codes.stderr === 'err\n', codes);
    check('exit does not end the session', (await shell.run('echo still')).stdout === 'still\n');
    await shell.run('cd /tmp && export PERSIST=kept');
    const persisted = await shell.run('echo "$PWD $PERSIST"');
    check('cd and export persist', persisted.stdout === '/tmp kept\n', persisted.stdout);
    const variables = await shell.run('printf "%s|%s" "$GITHUB_TOKEN" "$GREETING"');
    check('variables arrive exactly, over stdin', variables.stdout === `${secret}|it's "quoted" $(not run)\nline two`, variables.stdout);
    const bare = await shell.run('cat; echo eof');
    check('a bare cat gets end of file at once', bare.stdout === 'eof\n', bare);
    const bytes = Buffer.from(Array.from({ length: 256 * 4096 }, (_, index) => index % 256));
    const digest = createHash('sha256').update(bytes).digest('hex');
    const fed = await shell.run('sha256sum | cut -d" " -f1', { stdin: bytes });
    check('1 MiB of binary stdin, framed by length, arrives intact', fed.stdout.trim() === digest, { got: fed.stdout.trim(), milliseconds: fed.milliseconds });
    const marker = await shell.run('printf "__BERTH_fake_E_0\\n"; printf no-newline');
    check('marker-like output and no trailing newline', marker.stdout === '__BERTH_fake_E_0\nno-newline', marker.stdout);

    // Inside the sandbox: what hardening looks like from there.
    const status = await shell.run('grep -E "^(CapEff|CapBnd|NoNewPrivs|Seccomp):" /proc/self/status; hostname; ls /var/run/secrets/kubernetes.io 2>&1; cat /sys/fs/cgroup/pids/pids.max; env | grep -c KUBERNETES_');
    results.inside = status.stdout.split('\n');
    check('NoNewPrivs 1 and seccomp filter on', /NoNewPrivs:\s*1/.test(status.stdout) && /Seccomp:\s*2/.test(status.stdout));
    check('CapEff is the seven capabilities (0x..f.. with 00000000000004fb? see detail)', /CapEff:\s*00000000000000fb/.test(status.stdout), status.stdout.split('\n')[0]);
    check('hostname is sandbox, no service-account token', /\nsandbox\n/.test(status.stdout) && /No such file/.test(status.stdout));
    // enableServiceLinks: false drops the namespace's services, not the API server's own.
    results.kubernetesServiceVariables = Number(status.stdout.trim().split('\n').at(-1));
    const podUid = (await core.readNamespacedPod({ name: target.pod, namespace })).metadata?.uid;
    const hostPids = await run('sh', ['-c', `cat /sys/fs/cgroup/pids/*/kubepods/*/pod${podUid}/pids.max`]).then((out) => out.stdout.trim(), () => 'not found');
    results.pidsLimit = { inside: status.stdout.split('\n')[6], podCgroupOnTheNode: hostPids };

    // Warm exec over the persistent shell.
    for (let index = 0; index < 20; index++) await shell.run('true');
    const builtin: number[] = [];
    const forked: number[] = [];
    for (let index = 0; index < warmRounds; index++) builtin.push((await shell.run('true')).milliseconds);
    for (let index = 0; index < warmRounds; index++) forked.push((await shell.run('/bin/true')).milliseconds);
    results.warmSessionBuiltin = summarize(builtin);
    results.warmSessionForked = summarize(forked);

    // One exec WebSocket per command, and kubectl exec, on the same Pod.
    const perExec: number[] = [];
    let lastOnce: Awaited<ReturnType<typeof execOnce>> | undefined;
    for (let index = 0; index < execRounds; index++) {
      lastOnce = await execOnce(['/bin/true']);
      perExec.push(lastOnce.milliseconds);
    }
    results.execWebSocketPerCommand = summarize(perExec);
    check('a one-shot exec reports Success on the status channel', lastOnce?.status?.status === 'Success', lastOnce?.status);
    const failing = await execOnce(['/bin/sh', '-c', 'exit 7']);
    results.nonZeroStatus = failing.status;
    const kubectlTimes: number[] = [];
    for (let index = 0; index < execRounds; index++) {
      const started = performance.now();
      await run(kubectl, ['--kubeconfig', kubeconfigPath, '-n', namespace, 'exec', target.pod, '-c', 'sandbox', '--', '/bin/true']);
      kubectlTimes.push(performance.now() - started);
    }
    results.kubectlExec = summarize(kubectlTimes);

    // Ending stdin on v4: the socket closes, the command's output and exit code are lost.
    {
      let output = '';
      let endStatus: V1Status | undefined;
      const opened = await openExec(config, target, ['/bin/sh', '-c', 'cat; echo after-eof; exit 5'], { stdout: (chunk) => (output += chunk.toString()), stderr: () => undefined, status: (value) => (endStatus = value) });
      const closed = new Promise<number>((resolve) => opened.socket.on('close', (code: number) => resolve(code)));
      opened.stdin.write('typed\n');
      await sleep(300);
      opened.stdin.end();
      const code = await closed;
      await sleep(200);
      results.endingStdinOnV4 = { closeCode: code, output, status: endStatus ?? null };
      check('on v4, ending stdin closes the socket without the exit code', endStatus === undefined && !output.includes('after-eof'), results.endingStdinOnV4);
    }

    // Timeouts: the killer exec ends the whole tree, the session stays usable.
    const tree = await shell.run("trap '' TERM INT; (sleep 301 &); sh -c 'sleep 302 & wait' & sleep 303; echo never", { timeoutMs: 1_000 });
    const left = await shell.run('ps -o pid,args | grep -E "sleep 30[123]" | grep -v grep; true');
    check('a timed-out tree is killed (124), nothing of it is left, the session answers', tree.exitCode === 124 && left.stdout === '' && left.exitCode === 0, { tree, left: left.stdout });
    results.timeoutKillMs = tree.milliseconds;

    // A fork bomb: the node's pod pids limit holds it, the killer (builtins only, already
    // running) ends it, and the session answers again.
    {
      const bomb = await shell.run('b(){ while :; do b & done; }; b', { timeoutMs: 3_000 });
      // The bomb's shell gives up at the limit (exit 2) and returns; its children do not.
      await sleep(500);
      await shell.killLeftovers();
      let peak = '';
      try {
        peak = (await run('sh', ['-c', `cat /sys/fs/cgroup/pids/*/kubepods/*/pod${(await core.readNamespacedPod({ name: target.pod, namespace })).metadata?.uid}/pids.peak 2>/dev/null || true`])).stdout.trim();
      } catch {
        peak = 'unknown';
      }
      // Until ps can fork again: the processes the sandbox holds once the leftovers are gone.
      let left = '';
      const killedAt = performance.now();
      while (!/^\d+$/.test(left) && performance.now() - killedAt < 10_000) left = (await shell.run('ps -o pid= | wc -l')).stdout.trim();
      results.forkBomb = { exitCode: bomb.exitCode, milliseconds: bomb.milliseconds, podPidsPeak: peak, processesAfter: left, recoveredAfterMs: performance.now() - killedAt };
      check('a fork bomb is held by the pod pids limit, its leftovers killed; the session answers', bomb.exitCode !== 0 && /^\d+$/.test(left) && Number(left) < 20, results.forkBomb);
    }

    // The Pod deleted under the live session. Over dockershim the exec socket stays open (stdin
    // is attached), so the session is told by a watch on the Pod, not by its socket.
    await shell.run('echo keep-me > /workspace/keep && echo home > /root/keep');
    const uid = (await core.readNamespacedPod({ name: target.pod, namespace })).metadata?.uid;
    let goneAt: number | undefined;
    let goneHow = '';
    const watching = await new Watch(config).watch(
      `/api/v1/namespaces/${namespace}/pods`,
      { fieldSelector: `metadata.name=${target.pod}` },
      (phase: string, pod: V1Pod) => {
        if (goneAt !== undefined || pod.metadata?.uid !== uid) return;
        if (phase === 'DELETED' || pod.metadata?.deletionTimestamp) {
          goneAt = performance.now();
          goneHow = phase === 'DELETED' ? 'DELETED' : `${phase} with deletionTimestamp`;
        }
      },
      () => undefined,
    );
    const deleteStart = performance.now();
    await core.deleteNamespacedPod({ name: target.pod, namespace, gracePeriodSeconds: 0 });
    while (goneAt === undefined && performance.now() - deleteStart < 10_000) await sleep(5);
    while (shell.alive && performance.now() - deleteStart < 15_000) await sleep(20);
    watching.abort();
    results.podDeleted = {
      watchSawItAfterMs: goneAt === undefined ? null : goneAt - deleteStart,
      watchEvent: goneHow,
      socketStillOpenAfter15s: shell.alive,
      close: shell.closeInfo ?? null,
    };
    check('a watch on the Pod tells the session it is gone', goneAt !== undefined, results.podDeleted);
    const afterDelete = await Promise.race([shell.run('echo late').then(() => 'answered', () => 'failed'), sleep(3_000).then(() => 'no answer in 3 s')]);
    results.podDeleted = { ...(results.podDeleted as object), commandOnTheOldSession: afterDelete };
    shell.close();
    for (;;) {
      try {
        await core.readNamespacedPod({ name: target.pod, namespace });
        await sleep(100);
      } catch {
        break;
      }
    }
    const recreateStart = performance.now();
    await core.createNamespacedPod({ namespace, body: buildPod(manifest) });
    await waitForPod(recreateStart);
    const again = new FramedShell(config, target);
    await again.open();
    const files = await again.run('cat /workspace/keep /root/keep');
    results.recreated = { firstCommandMs: performance.now() - recreateStart };
    check('a recreated Pod has the files intact', files.stdout === 'keep-me\nhome\n', files);
    again.close();

    // From outside: the secret is in no stored spec, and Docker's Berth labels see no pod.
    const pod = await core.readNamespacedPod({ name: target.pod, namespace });
    check('the Pod spec holds no secret value', !JSON.stringify(pod).includes(secret));
    const containers = (await run('docker', ['ps', '-q', '--filter', `label=io.kubernetes.pod.namespace=${namespace}`])).stdout.trim().split('\n').filter(Boolean);
    const inspected = containers.length ? (await run('docker', ['inspect', ...containers])).stdout : '';
    check("Docker's record of the pod's containers holds no secret value", containers.length > 0 && !inspected.includes(secret), { containers: containers.length });
    const mistaken = (await run('docker', ['ps', '-aq', '--filter', 'label=dev.berth.managed-by=berth', '--filter', `label=io.kubernetes.pod.namespace=${namespace}`])).stdout.trim();
    check("no pod container carries the Docker backend's labels", mistaken === '');
    results.dockerLabelsOfPause = JSON.parse((await run('docker', ['inspect', '-f', '{{json .Config.Labels}}', ...containers])).stdout.split('\n')[0] ?? '{}');

  } finally {
    await admin.deleteNamespace({ name: namespace }).catch(() => undefined);
  }
  process.stdout.write(`${JSON.stringify({ results, checks }, null, 2)}\n`);
  if (checks.some((entry) => !entry.ok)) process.exitCode = 1;
}

await main();
