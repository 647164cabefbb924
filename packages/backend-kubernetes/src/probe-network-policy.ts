import { randomBytes } from 'node:crypto';
import type { CoreV1Api, KubeConfig, V1Pod } from '@kubernetes/client-node';
import { openKubernetesExecChannel } from './kubernetes-exec-channel.js';
import { MANAGED_BY_KEY, MANAGED_BY_VALUE, NETWORK_KEY } from './kubernetes-labels.js';
import { CONTAINER_NAME } from './to-kubernetes-objects.js';

/** What a probe found: enforced, not enforced, or unknown (`undefined`), and how it knows. */
export interface NetworkPolicyProbe {
  readonly enforced: boolean | undefined;
  readonly detail: string;
}

const PORT = 18_080;
const sleep = (milliseconds: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, milliseconds));

/**
 * Whether the cluster enforces NetworkPolicy, found by trying: two short-lived pods labelled as
 * sandboxes (so the deny-ingress policy selects them), one listening, the other connecting to
 * it. A connection that gets through means the policy is only stored, not enforced. The
 * listener first answers itself, so a refused connection is the policy's doing.
 */
export async function probeNetworkPolicy(options: {
  core: CoreV1Api;
  kubeConfig: KubeConfig;
  namespace: string;
  image: string;
  ensurePolicies: () => Promise<void>;
}): Promise<NetworkPolicyProbe> {
  const { core, namespace } = options;
  const tag = randomBytes(4).toString('hex');
  const names = { server: `berth-probe-${tag}-listen`, client: `berth-probe-${tag}-connect` };
  const pod = (name: string, command: string): V1Pod => ({
    metadata: { name, labels: { [MANAGED_BY_KEY]: MANAGED_BY_VALUE, [NETWORK_KEY]: 'default', 'berth.dev/probe': tag } },
    spec: {
      automountServiceAccountToken: false,
      enableServiceLinks: false,
      terminationGracePeriodSeconds: 0,
      restartPolicy: 'Never',
      securityContext: { seccompProfile: { type: 'RuntimeDefault' } },
      containers: [
        {
          name: CONTAINER_NAME,
          image: options.image,
          imagePullPolicy: 'IfNotPresent',
          command: ['/bin/sh', '-c', command],
          securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } },
          resources: { limits: { cpu: '100m', memory: '32Mi' } },
        },
      ],
    },
  });
  const exec = async (name: string, command: string): Promise<string> => {
    const channel = await openKubernetesExecChannel({
      kubeConfig: options.kubeConfig,
      namespace,
      pod: name,
      command: ['/bin/sh', '-c', command],
      watch: () => () => undefined,
    });
    let output = '';
    channel.onStdout((chunk) => (output += chunk.toString('utf8')));
    channel.onStderr(() => undefined);
    await new Promise<void>((resolve) => {
      const timer = setTimeout(() => channel.destroy(), 15_000);
      channel.onClose(() => {
        clearTimeout(timer);
        resolve();
      });
    });
    return output;
  };
  const running = async (name: string): Promise<V1Pod> => {
    const deadline = Date.now() + 90_000;
    for (;;) {
      const found = await core.readNamespacedPod({ name, namespace });
      if (found.status?.phase === 'Running' && found.status.podIP) return found;
      if (found.status?.phase === 'Failed' || found.status?.phase === 'Succeeded' || Date.now() > deadline)
        throw new Error(`probe pod ${name} did not run (${found.status?.phase})`);
      await sleep(200);
    }
  };
  await options.ensurePolicies();
  try {
    await core.createNamespacedPod({ namespace, body: pod(names.server, `command -v nc >/dev/null || exit 3; nc -ll -p ${PORT} -e echo berth-probe-reached`) });
    await core.createNamespacedPod({ namespace, body: pod(names.client, 'sleep 300') });
    const server = await running(names.server);
    await running(names.client);
    const self = await exec(names.server, `nc -w 2 127.0.0.1 ${PORT} </dev/null`);
    if (!self.includes('berth-probe-reached')) return { enforced: undefined, detail: `the probe image ${options.image} has no working nc` };
    // Policies reach the network plugin a moment after the pods: try for a few seconds.
    let reached = false;
    for (let attempt = 0; attempt < 3; attempt++) {
      await sleep(1_500);
      reached = (await exec(names.client, `nc -w 2 ${server.status!.podIP} ${PORT} </dev/null`)).includes('berth-probe-reached');
      if (!reached) break;
    }
    return reached
      ? { enforced: false, detail: `a probe pod connected to another through the ${'berth-deny-ingress'} policy` }
      : { enforced: true, detail: `a probe pod's connection to another was refused by the berth-deny-ingress policy` };
  } finally {
    for (const name of Object.values(names)) await core.deleteNamespacedPod({ name, namespace, gracePeriodSeconds: 0 }).catch(() => undefined);
  }
}
