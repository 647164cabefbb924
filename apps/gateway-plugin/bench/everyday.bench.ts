/**
 * How long an operator waits for the everyday commands: `berth ls`, `ls --json`, `doctor`, `env`
 * and `--version`, spawned as the operator runs them (`node dist/cli.js …`), with
 * BENCH_SANDBOXES (10) task sandboxes running on the Docker engine, next to bare `node -e 0`
 * (the floor of any Node command). Runs are interleaved, so every command sees the same machine
 * load. Prints a table of medians and writes JSON to bench-results/. Run with
 * `pnpm --filter @berth/gateway-plugin bench:everyday` after a build. BENCH_RUNS (9) runs of each.
 * BENCH_BASELINE_CLI names another build's `dist/cli.js` (an older checkout's, say): each command
 * then also runs through it, interleaved, so the two are compared in one sitting.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { removeTestRoot } from '../src/testing/remove-test-root.js';
import { findEngine } from '../src/testing/find-engine.js';
import { round, summary } from './stats.js';

const image = process.env.BERTH_TEST_IMAGE ?? 'localhost/berth-busybox:latest';
const runs = Number(process.env.BENCH_RUNS ?? 9);
const sandboxes = Number(process.env.BENCH_SANDBOXES ?? 10);
const cli = path.join(import.meta.dirname, '..', 'dist', 'cli.js');
if (!existsSync(cli)) throw new Error(`${cli} is missing; run "pnpm --filter @berth/gateway-plugin build" first`);
const baseline = process.env.BENCH_BASELINE_CLI;
if (baseline && !existsSync(baseline)) throw new Error(`BENCH_BASELINE_CLI ${baseline} does not exist; name another build's dist/cli.js`);

const root = await mkdtemp(path.join(tmpdir(), 'berth-everyday-bench-'));
const environment = { PATH: process.env.PATH ?? '', HOME: root, HERMES_HOME: path.join(root, 'hermes'), TERMINAL_SANDBOX_DIR: path.join(root, 'sandboxes') };
await mkdir(environment.HERMES_HOME, { recursive: true });
await writeFile(path.join(environment.HERMES_HOME, 'config.yaml'), `terminal:\n  docker_image: ${image}\n`);

/** Spawns `args` and resolves with its wall time in ms; rejects on a non-zero exit. */
function timedRun(args: readonly string[]): Promise<number> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [...args], { env: environment }, (error, stdout, stderr) => {
      if (error) reject(new Error(`${args.join(' ')} failed (exit ${String(error.code)}): ${(stderr + stdout).trim() || error.message}`));
      else resolve(performance.now() - started);
    });
  });
}

const everyday: ReadonlyArray<readonly [string, readonly string[]]> = [
  ['--version', ['--version']],
  ['env --platform telegram --user 1', ['env', '--platform', 'telegram', '--user', '1']],
  ['ls', ['ls']],
  ['ls --json', ['ls', '--json']],
  ['doctor', ['doctor']],
];
const commands: ReadonlyArray<readonly [string, readonly string[]]> = [
  ['node -e 0', ['-e', '0']],
  ...everyday.map(([what, args]) => [`berth ${what}`, [cli, ...args]] as const),
  ...(baseline ? everyday.map(([what, args]) => [`baseline ${what}`, [baseline, ...args]] as const) : []),
];

try {
  for (let index = 0; index < sandboxes; index++) await timedRun([cli, 'exec', '--task', `bench-${index}`, '--', 'true']);
  const times = new Map<string, number[]>(commands.map(([what]) => [what, []]));
  // One warm-up round, not counted: the file cache, the engine's first answers.
  for (const [, args] of commands) await timedRun(args);
  for (let run = 0; run < runs; run++) for (const [what, args] of commands) times.get(what)!.push(await timedRun(args));
  const rows = commands.map(([what]) => ({ what, ...summary(times.get(what)!) }));
  const floor = rows[0]!.medianMs;
  const width = Math.max(...rows.map((row) => row.what.length));
  console.log(`\nthe everyday commands with ${sandboxes} sandboxes running (docker, ${image}), ${runs} runs each, interleaved\n`);
  console.log(`${'what'.padEnd(width)}  ${'median'.padStart(9)}  ${'p90'.padStart(9)}  ${'min'.padStart(9)}  ${'over node -e 0'.padStart(15)}`);
  for (const row of rows) {
    const cells = [row.medianMs, row.p90Ms, row.minMs].map((value) => `${round(value, 0)} ms`.padStart(9));
    console.log(`${row.what.padEnd(width)}  ${cells.join('  ')}  ${`${round(row.medianMs - floor, 0)} ms`.padStart(15)}`);
  }
  const results = {
    when: new Date().toISOString(),
    sandboxes,
    runs,
    image,
    ...(baseline ? { baseline } : {}),
    commands: rows.map((row) => ({ what: row.what, medianMs: round(row.medianMs, 1), p90Ms: round(row.p90Ms, 1), minMs: round(row.minMs, 1) })),
  };
  const outputDir = path.join(import.meta.dirname, '..', 'bench-results');
  await mkdir(outputDir, { recursive: true });
  const file = path.join(outputDir, `everyday-${results.when.replace(/[:.]/g, '-')}.json`);
  await writeFile(file, `${JSON.stringify(results, null, 2)}\n`);
  console.log(`written to ${path.relative(process.cwd(), file)}`);
} finally {
  await removeTestRoot(findEngine('docker'), root);
}
