#!/usr/bin/env node
// Side by side in one run: the Docker backend of several git revisions of Berth, on one engine
// and one image, warm `true` and a cold first command, interleaved so the machine's noise falls
// on every revision alike. Prints a table and writes JSON to bench-results/.
//
//   node scripts/bench-revisions.mjs REV [REV...]      (scripts/bench-revisions.sh builds them)
//
// Each REV must have been built into .bench-revisions/<rev>/ by scripts/bench-revisions.sh.
// BENCH_WARM_RUNS (300) and BENCH_COLD_RUNS (20) change the sizes.
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const root = path.resolve(import.meta.dirname, '..');
const revisions = process.argv.slice(2);
if (revisions.length === 0) {
  console.error('usage: node scripts/bench-revisions.mjs REV [REV...]');
  process.exit(125);
}
const image = process.env.BERTH_TEST_IMAGE ?? 'localhost/berth-busybox:latest';
const warmRuns = Number(process.env.BENCH_WARM_RUNS ?? 300);
const coldRuns = Number(process.env.BENCH_COLD_RUNS ?? 20);

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
};
const round = (value) => Math.round(value * 1000) / 1000;
const timed = async (task) => {
  const started = performance.now();
  await task();
  return performance.now() - started;
};

/** One revision's backend and core, loaded from its own build. */
async function load(revision) {
  const base = path.join(root, '.bench-revisions', revision);
  const core = await import(pathToFileURL(path.join(base, 'packages/core/dist/index.js')).href);
  const docker = await import(pathToFileURL(path.join(base, 'packages/backend-docker/dist/index.js')).href);
  const sandboxDir = await mkdtemp(path.join(tmpdir(), `berth-rev-${revision}-`));
  const section = { docker_image: image, sandbox_dir: sandboxDir, docker_network: false, container_memory: 256, lifetime_seconds: 0 };
  const config = core.parseTerminalConfig(section);
  // Before the sandbox runtime (3ece0c4) the factory took the whole config; since, its settings.
  const common = { namePrefix: `berth-r${revision.slice(0, 6)}-`, reapIntervalMs: 0 };
  let backend;
  try {
    backend = docker.createDockerBackend({ settings: config, ...common });
  } catch {
    backend = docker.createDockerBackend({ config, ...common });
  }
  const resolver = core.createSandboxResolver({ config, registry: core.createPlatformRegistry(), environment: {} });
  const request = (userId) => resolver.resolve({ session: { platform: 'telegram', userId } });
  return { revision, backend, request, sandboxDir, base };
}

const loaded = [];
for (const revision of revisions) loaded.push(await load(revision));
const results = { image, warmRuns, coldRuns, node: process.version, date: new Date().toISOString(), revisions: {} };
try {
  // Warm: one sandbox per revision, `true` in turn on each.
  const warm = new Map(loaded.map((entry) => [entry.revision, []]));
  const warmRequests = new Map(loaded.map((entry) => [entry.revision, entry.request('1')]));
  for (const entry of loaded) for (let index = 0; index < 10; index++) await entry.backend.doExec(warmRequests.get(entry.revision), { command: 'true' });
  for (let index = 0; index < warmRuns; index++) {
    for (const entry of loaded) warm.get(entry.revision).push(await timed(() => entry.backend.doExec(warmRequests.get(entry.revision), { command: 'true' })));
  }
  // Cold: a new user's first command, in turn.
  const cold = new Map(loaded.map((entry) => [entry.revision, []]));
  for (let index = 0; index < coldRuns; index++) {
    for (const entry of loaded) {
      const request = entry.request(`cold${index}`);
      cold.get(entry.revision).push(await timed(() => entry.backend.doExec(request, { command: 'true' })));
      await entry.backend.remove(request.scope.key, { purge: true, paths: request.paths });
    }
  }
  for (const entry of loaded) {
    results.revisions[entry.revision] = { warmMedianMs: round(median(warm.get(entry.revision))), coldMedianMs: round(median(cold.get(entry.revision))) };
  }
} finally {
  for (const entry of loaded) {
    await entry.backend.remove(entry.request('1').scope.key, { purge: true, paths: entry.request('1').paths }).catch(() => undefined);
    await entry.backend.close();
    // Revisions with per-user disks unmount them first (older ones made none).
    const runtime = await import(pathToFileURL(path.join(entry.base, 'packages/sandbox-runtime/dist/index.js')).href).catch(() => undefined);
    await runtime?.releaseDisksUnder?.(entry.sandboxDir);
    await rm(entry.sandboxDir, { recursive: true, force: true });
  }
}

const first = revisions[0];
console.log(`\nDocker backend by revision (${image}; warm: ${warmRuns} runs each, cold: ${coldRuns}; interleaved)\n`);
console.log(
  `${'revision'.padEnd(14)}${'warm true (median)'.padStart(20)}${'vs first'.padStart(10)}${'cold first command'.padStart(22)}${'vs first'.padStart(10)}`,
);
for (const revision of revisions) {
  const row = results.revisions[revision];
  const base = results.revisions[first];
  console.log(
    `${revision.padEnd(14)}${`${row.warmMedianMs} ms`.padStart(20)}${String(round(row.warmMedianMs / base.warmMedianMs)).padStart(10)}` +
      `${`${row.coldMedianMs} ms`.padStart(22)}${String(round(row.coldMedianMs / base.coldMedianMs)).padStart(10)}`,
  );
}
const outputDir = path.join(root, 'bench-results');
await mkdir(outputDir, { recursive: true });
const file = path.join(outputDir, `revisions-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
await writeFile(file, `${JSON.stringify(results, null, 2)}\n`);
console.log(`\nwritten to ${path.relative(process.cwd(), file)}`);
