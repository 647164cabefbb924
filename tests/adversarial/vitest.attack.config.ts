import path from 'node:path';
import { berthVitestConfig } from '../../vitest.shared.js';

/**
 * The cases that must have the machine to themselves: they restart the Docker daemon (every
 * other suite's containers and the test cluster's pods live on it), or they hold the promise of
 * an answer within a bound while they flood the machine on purpose (a storm of 200 first
 * messages, a sandbox exhausting its limits). `scripts/test.sh` runs the rest of the suite beside
 * the other suites (`BERTH_ATTACK_PART=shared`) and these alone at the end
 * (`BERTH_ATTACK_PART=alone`); without the variable, as a developer runs it, every file runs.
 */
export const ALONE = [
  'src/faults-engine-restart.attack.test.ts',
  'src/storm.attack.test.ts',
  'src/resources.attack.test.ts',
  'src/shared-bound.attack.test.ts',
];

/**
 * The cases whose outcome depends on the kernel under the sandbox, which `scripts/test.sh` runs a
 * second time with every sandbox under gVisor (`BERTH_ATTACK_PART=gvisor`, which sets
 * `BERTH_TEST_RUNTIME=runsc` unless it is set): what a hostile shell does inside its sandbox,
 * processes and networks, the egress policy, variables in `/proc`, a container's faults, disks,
 * sessions and files; and, alone, a sandbox exhausting its limits. The others test Berth's own host side
 * (configuration, ids, the CLI, the socket server, purges, the egress exceptions' rules, the
 * gateway's faults), which no runtime reaches: docs/gvisor.md.
 */
export const GVISOR = [
  'src/hostile-shell.attack.test.ts',
  'src/processes-network.attack.test.ts',
  'src/egress.attack.test.ts',
  'src/variables.attack.test.ts',
  'src/faults-container.attack.test.ts',
  'src/disk.attack.test.ts',
  'src/sessions.attack.test.ts',
  'src/files.attack.test.ts',
  // The egress proxy is the host's, but what reaches it is each runtime's own network stack.
  'src/brokered-secrets.attack.test.ts',
];
/** Of those, the ones that must have the machine to themselves (in {@link ALONE}), run in phase 3. */
export const GVISOR_ALONE = ['src/resources.attack.test.ts'];

const part = process.env.BERTH_ATTACK_PART;
const PARTS = ['shared', 'alone', 'gvisor', 'gvisor-alone'];
if (part !== undefined && !PARTS.includes(part)) {
  throw new Error(`BERTH_ATTACK_PART is ${JSON.stringify(part)}; set it to one of ${PARTS.join(', ')}, or leave it unset to run every file`);
}
if (part?.startsWith('gvisor')) process.env.BERTH_TEST_RUNTIME ||= 'runsc';
const config = berthVitestConfig({ name: 'adversarial', kind: 'attack' });
if (part !== undefined && config.test) {
  // Replaced, not merged: vitest's mergeConfig would add to the shared include and exclude lists.
  if (part === 'alone') config.test.include = ALONE;
  else if (part === 'gvisor') config.test.include = GVISOR;
  else if (part === 'gvisor-alone') config.test.include = GVISOR_ALONE;
  else config.test.exclude = [...(config.test.exclude ?? []), ...ALONE];
  config.test.outputFile = { json: path.resolve(import.meta.dirname, '..', '..', '.test-results', `adversarial-attack-${part}.json`) };
}

export default config;
