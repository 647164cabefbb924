/**
 * What gVisor costs, through the plugin exactly as a host calls it, under the engine's default
 * runtime (`runc`) and under `runsc` side by side in one run (each measurement alternates between
 * the two, so a machine that changes speed meanwhile changes both):
 *
 * - warm builtin: `true` in a user's running sandbox (BENCH_WARM runs, 200);
 * - warm forked: `/bin/true`, a fork and an exec in the sandbox (BENCH_WARM runs);
 * - cold first command: a new user's first `true`, the sandbox made and started (BENCH_COLD, 10);
 * - extract: `tar -x` of an archive of BENCH_FILES small files (5,000) into `/workspace`, the
 *   archive made in the sandbox first (not timed), the tree removed between runs (BENCH_IO, 5).
 *
 * The engine is Docker by default (BENCH_BACKEND=podman for rootful Podman). Prints a table with
 * the ratios and writes JSON to bench-results/. Run with `pnpm --filter @berth/gateway-plugin
 * bench:runtime` after a build, as root, with gVisor registered (scripts/engines.sh) and nothing
 * else running.
 */
import { randomInt } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { runWithSession, type TerminalEnvironment } from '@berth/core';
import { releaseDisksUnder, type BerthPlugin } from '../src/index.js';
import { registerBenchPlugin } from './bench-host.js';
import { median, percentile, printTable, round, timed } from './stats.js';

const image = process.env.BERTH_TEST_IMAGE ?? 'localhost/berth-busybox:latest';
const backend = process.env.BENCH_BACKEND === 'podman' ? 'podman' : 'docker';
const warmRuns = Number(process.env.BENCH_WARM ?? 200);
const coldRuns = Number(process.env.BENCH_COLD ?? 10);
const ioRuns = Number(process.env.BENCH_IO ?? 5);
const files = Number(process.env.BENCH_FILES ?? 5_000);
const root = await mkdtemp(path.join(tmpdir(), 'berth-runtime-bench-'));
const environment: Record<string, string> = { PATH: process.env.PATH ?? '', HOME: root, HERMES_HOME: path.join(root, 'hermes') };
const runtimes = { runc: {}, runsc: { docker_runtime: 'runsc' } } as const;
type RuntimeName = keyof typeof runtimes;

interface Side {
  readonly plugin: BerthPlugin;
  readonly terminal: TerminalEnvironment;
}

const register = (name: RuntimeName): Promise<Side> =>
  registerBenchPlugin({ environment, config: { backend, docker_image: image, sandbox_dir: path.join(root, name), ...runtimes[name] } });

let nextUser = randomInt(100_000_000, 1_000_000_000);
const newUser = (): string => String(nextUser++);

/** Runs a command as a user; fails the bench on a wrong answer rather than timing it. */
async function run(side: Side, userId: string, command: string, expected?: string): Promise<void> {
  const result = await runWithSession({ platform: 'telegram', userId }, () => side.terminal.execute(command, { timeout: 600 }));
  if (result.returncode !== 0 || (expected !== undefined && result.output !== expected))
    throw new Error(`${command.slice(0, 60)}: exit ${result.returncode}, output ${JSON.stringify(result.output.slice(0, 300))}`);
}

const sides = new Map<RuntimeName, Side>();
const samples = new Map<string, number[]>();
const sample = (key: string, ms: number): void => void samples.set(key, [...(samples.get(key) ?? []), ms]);
const names = Object.keys(runtimes) as RuntimeName[];
try {
  for (const name of names) sides.set(name, await register(name));
  const warmUser = new Map(names.map((name) => [name, newUser()]));
  // The warm users' sandboxes, and in each the archive to extract (not timed).
  const makeArchive =
    `mkdir -p /tmp/tree && cd /tmp/tree && i=0; while [ $i -lt ${files} ]; do d=d$((i / 100)); mkdir -p $d; ` +
    'echo "file $i" > $d/f$i; i=$((i + 1)); done; tar -cf /workspace/tree.tar -C /tmp tree && rm -rf /tmp/tree && echo made';
  for (const name of names) await run(sides.get(name)!, warmUser.get(name)!, makeArchive, 'made\n');
  for (let index = 0; index < warmRuns; index++) {
    for (const name of names) {
      const side = sides.get(name)!;
      sample(`${name} warm builtin`, await timed(() => run(side, warmUser.get(name)!, 'true')));
      sample(`${name} warm forked`, await timed(() => run(side, warmUser.get(name)!, '/bin/true')));
    }
  }
  for (let index = 0; index < coldRuns; index++) {
    for (const name of names) sample(`${name} cold first command`, await timed(() => run(sides.get(name)!, newUser(), 'true')));
  }
  const extract = `rm -rf /workspace/out && mkdir /workspace/out && tar -xf /workspace/tree.tar -C /workspace/out && find /workspace/out -type f | wc -l`;
  for (let index = 0; index < ioRuns; index++) {
    for (const name of names) sample(`${name} extract`, await timed(() => run(sides.get(name)!, warmUser.get(name)!, extract, `${files}\n`)));
  }
} finally {
  for (const side of sides.values()) {
    const berth = side.plugin.instances[0];
    if (berth) for (const entry of await berth.backend.list()) await berth.backend.remove(entry.scopeKey).catch(() => undefined);
    await side.plugin.close().catch(() => undefined);
  }
  await releaseDisksUnder(root);
  await rm(root, { recursive: true, force: true });
}

const measures = ['warm builtin', 'warm forked', 'cold first command', 'extract'];
const results = measures.map((measure) => {
  const of = (name: RuntimeName) => samples.get(`${name} ${measure}`) ?? [];
  const runcMedian = median(of('runc'));
  const runscMedian = median(of('runsc'));
  return {
    measure,
    runs: of('runc').length,
    runcMedianMs: round(runcMedian, 2),
    runcP90Ms: round(percentile(of('runc'), 90), 2),
    runscMedianMs: round(runscMedian, 2),
    runscP90Ms: round(percentile(of('runsc'), 90), 2),
    ratio: round(runscMedian / runcMedian, 2),
  };
});
printTable(
  `runc and runsc through the plugin (${backend}; medians, interleaved; ${files} files extracted)`,
  results.map((row) => [
    row.measure,
    `${row.runcMedianMs} / ${row.runscMedianMs} ms`,
    `runsc/runc ${row.ratio}; p90 ${row.runcP90Ms} / ${row.runscP90Ms} ms; ${row.runs} runs each`,
  ]),
);
const outputDir = path.join(import.meta.dirname, '..', 'bench-results');
await mkdir(outputDir, { recursive: true });
const file = path.join(outputDir, `runtime-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
await writeFile(
  file,
  `${JSON.stringify({ image, backend, warmRuns, coldRuns, ioRuns, files, node: process.version, date: new Date().toISOString(), results }, null, 2)}\n`,
);
console.log(`\nwritten to ${path.relative(process.cwd(), file)}`);
