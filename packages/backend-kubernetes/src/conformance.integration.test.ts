import { testBackend } from '@berth/testkit';
import { afterAll } from 'vitest';
import { createKubernetesBackend } from './index.js';
import { createClusterHarness, STORAGE_CLASS, TEST_IMAGE } from './testing/cluster-harness.js';

// The whole conformance suite on a real cluster, as the user that holds only the documented Role.
const cluster = await createClusterHarness('conformance');
afterAll(() => cluster.cleanup());

testBackend({
  name: 'kubernetes',
  image: TEST_IMAGE,
  create: (config) =>
    createKubernetesBackend({
      settings: config,
      kubernetes: { ...config, kubernetes_namespace: cluster.namespace, kubernetes_storage_class: STORAGE_CLASS, container_disk: 64 },
      kubeConfig: cluster.driverConfig,
      namePrefix: `berth-t${cluster.runId}-`,
    }),
  // The test cluster stores NetworkPolicies but nothing enforces them (docs/backend-kubernetes.md).
  capabilities: { networkIsolation: false },
  configOverrides: { container_memory: 512 },
  engine: {
    removeContainer: (containerId) => cluster.deletePod(containerId),
    async inspect(containerId) {
      const pod = await cluster.pod(containerId);
      const records = pod?.metadata?.uid ? await cluster.dockerRecordOf(pod.metadata.uid) : [];
      return { env: records.flatMap((record) => record.Config.Env ?? []), labels: pod?.metadata?.labels ?? {}, document: { pod, records } };
    },
    async pidsLimit(containerId) {
      const uid = (await cluster.pod(containerId))?.metadata?.uid;
      return uid ? cluster.pidsLimitOf(uid) : undefined;
    },
  },
});
