/*
 * How long one user's sandbox resolution (scope, paths, environment) takes with 10, 1,000 and
 * 10,000 users' variables in the gateway's environment. The index is built once per
 * environment, so the figure must not grow with the number of other users' variables.
 * Prints a table and writes bench-results/resolve-environment.json.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { createPlatformRegistry, createSandboxResolver, parseTerminalConfig } from '../src/index.js';

const SIZES = [10, 1_000, 10_000];
const SAMPLES = 400;
const BATCH = 50;

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

const rows: Array<{ userVariables: number; indexBuildMs: number; medianMicroseconds: number; p90Microseconds: number }> = [];
for (const size of SIZES) {
  const environment: Record<string, string> = { PATH: '/usr/bin', OPENAI_API_KEY: 'sk-global' };
  for (let index = 0; index < size; index++) {
    // Half Telegram users, half users of a platform with the generic adapter (escaped ids).
    if (index % 2 === 0) environment[`HERMES_USER_TELEGRAM_${1000 + index}_GITHUB_TOKEN`] = `ghp_${index}`;
    else environment[`HERMES_USER_SIGNAL_USERZ2D${index}_TOKEN`] = `sig_${index}`;
  }
  const config = parseTerminalConfig({ sandbox_dir: '/srv/berth', docker_forward_env: ['OPENAI_API_KEY'], docker_env: { MODE: 'bench' } });
  const started = process.hrtime.bigint();
  const resolver = createSandboxResolver({ config, registry: createPlatformRegistry(), environment });
  const indexBuildMs = Number(process.hrtime.bigint() - started) / 1e6;
  const sessions = Array.from({ length: 64 }, (_, index) => ({ platform: 'telegram', userId: String(1000 + ((index * 2) % size)) }));
  // Warm up, and check the figure measures real work: every user gets exactly their variable.
  for (const session of sessions) {
    const variables = resolver.resolve({ session }).environment.variables;
    if (variables.GITHUB_TOKEN !== `ghp_${Number(session.userId) - 1000}`) throw new Error(`wrong variables for ${session.userId}`);
  }
  const samples: number[] = [];
  for (let sample = 0; sample < SAMPLES; sample++) {
    const begin = process.hrtime.bigint();
    for (let index = 0; index < BATCH; index++) resolver.resolve({ session: sessions[(sample + index) % sessions.length]! });
    samples.push(Number(process.hrtime.bigint() - begin) / 1e3 / BATCH);
  }
  const sorted = [...samples].sort((a, b) => a - b);
  rows.push({ userVariables: size, indexBuildMs, medianMicroseconds: median(samples), p90Microseconds: sorted[Math.floor(sorted.length * 0.9)]! });
}

const base = rows[0]!.medianMicroseconds;
console.log('env resolution (one user: scope + paths + variables), median of %d batches of %d', SAMPLES, BATCH);
console.log('| user variables present | index build (ms) | median (µs) | p90 (µs) | vs 10 |');
console.log('| ---: | ---: | ---: | ---: | ---: |');
for (const row of rows) {
  console.log(
    `| ${row.userVariables} | ${row.indexBuildMs.toFixed(2)} | ${row.medianMicroseconds.toFixed(2)} ` +
      `| ${row.p90Microseconds.toFixed(2)} | ${(row.medianMicroseconds / base).toFixed(2)}x |`,
  );
}
const ratio = rows.at(-1)!.medianMicroseconds / base;
const output = path.resolve(import.meta.dirname, '..', 'bench-results', 'resolve-environment.json');
mkdirSync(path.dirname(output), { recursive: true });
writeFileSync(
  output,
  `${JSON.stringify({ benchmark: 'resolve-environment', node: process.version, samples: SAMPLES, batch: BATCH, rows, ratio10000to10: ratio }, null, 2)}\n`,
);
console.log(`10,000 vs 10: ${ratio.toFixed(2)}x (target: at most 3x) — written to ${path.relative(process.cwd(), output)}`);
if (ratio > 3) process.exitCode = 1;
