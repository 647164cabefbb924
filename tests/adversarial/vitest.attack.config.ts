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

const part = process.env.BERTH_ATTACK_PART;
if (part !== undefined && part !== 'shared' && part !== 'alone') {
  throw new Error(`BERTH_ATTACK_PART is ${JSON.stringify(part)}; set it to shared or alone, or leave it unset to run every file`);
}
const config = berthVitestConfig({ name: 'adversarial', kind: 'attack' });
if (part !== undefined && config.test) {
  // Replaced, not merged: vitest's mergeConfig would add to the shared include and exclude lists.
  if (part === 'alone') config.test.include = ALONE;
  else config.test.exclude = [...(config.test.exclude ?? []), ...ALONE];
  config.test.outputFile = { json: path.resolve(import.meta.dirname, '..', '..', '.test-results', `adversarial-attack-${part}.json`) };
}

export default config;
