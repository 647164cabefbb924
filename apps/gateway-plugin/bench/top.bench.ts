/**
 * What `berth top` itself costs: the live table (`berth top`, refreshing every BENCH_INTERVAL
 * seconds, 2) spawned as an operator runs it, its output piped, over BENCH_SANDBOXES (100) task
 * sandboxes running on the Docker engine, with an audit file of one line per sandbox. Its CPU
 * time (user + system, from /proc/PID/stat) is read once its first table is out and again after
 * BENCH_SECONDS (60): the steady cost, in % of one core, apart from what starting it took.
 * The bar is under 2 % of one core with 100 sandboxes. Prints a table and writes JSON to
 * bench-results/. Run with `pnpm --filter @berth/gateway-plugin bench:top` after a build, as
 * root (the shared bound's cgroups); making the sandboxes is not timed and takes a while.
 * BENCH_PROFILE=DIR writes a CPU profile of `berth top` there (node --cpu-prof; it about doubles the cost).
 */
import { execFile, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { findEngine } from '../src/testing/find-engine.js';
import { removeTestRoot } from '../src/testing/remove-test-root.js';
import { printTable, round } from './stats.js';

const image = process.env.BERTH_TEST_IMAGE ?? 'localhost/berth-busybox:latest';
const sandboxes = Number(process.env.BENCH_SANDBOXES ?? 100);
const seconds = Number(process.env.BENCH_SECONDS ?? 60);
const interval = Number(process.env.BENCH_INTERVAL ?? 2);
const parallel = Number(process.env.BENCH_PARALLEL ?? 4);
const cli = path.join(import.meta.dirname, '..', 'dist', 'cli.js');
if (!existsSync(cli)) throw new Error(`${cli} is missing; run "pnpm --filter @berth/gateway-plugin build" first`);

const root = await mkdtemp(path.join(tmpdir(), 'berth-top-bench-'));
const environment = { PATH: process.env.PATH ?? '', HOME: root, HERMES_HOME: path.join(root, 'hermes'), TERMINAL_SANDBOX_DIR: path.join(root, 'sandboxes') };
await mkdir(environment.HERMES_HOME, { recursive: true });
const auditFile = path.join(root, 'audit.jsonl');
await writeFile(path.join(environment.HERMES_HOME, 'config.yaml'), `terminal:\n  docker_image: ${image}\n  audit_file: ${auditFile}\n`);

/** Runs `berth args`; rejects on a non-zero exit. */
function berth(args: readonly string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [cli, ...args], { env: environment }, (error, stdout, stderr) => {
      if (error) reject(new Error(`berth ${args.join(' ')} failed (exit ${String(error.code)}): ${(stderr + stdout).trim() || error.message}`));
      else resolve();
    });
  });
}

/** A process's CPU seconds so far (user + system), from /proc/PID/stat. */
function cpuSecondsOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // The command's name may hold spaces: the fields after its closing parenthesis.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticks = 100; // USER_HZ on Linux
  return (Number(fields[11]) + Number(fields[12])) / ticks;
}

try {
  const started = performance.now();
  for (let next = 0; next < sandboxes; ) {
    const batch = Array.from({ length: Math.min(parallel, sandboxes - next) }, (_, index) => next + index);
    next += batch.length;
    // Every exec of the batch ends before a failure is thrown: none still writes when the folder is removed.
    const settled = await Promise.allSettled(batch.map((index) => berth(['exec', '--task', `bench-top-${index}`, '--', 'true'])));
    const failed = settled.find((result) => result.status === 'rejected');
    if (failed) throw failed.reason;
  }
  const makingSeconds = (performance.now() - started) / 1000;

  const profile = process.env.BENCH_PROFILE ? ['--cpu-prof', '--cpu-prof-dir', path.resolve(process.env.BENCH_PROFILE)] : [];
  const top = spawn(process.execPath, [...profile, cli, 'top', '--interval', String(interval)], { env: environment, stdio: ['ignore', 'pipe', 'inherit'] });
  const spawnedAt = performance.now();
  let output = '';
  let tables = 0;
  let firstTable: (() => void) | undefined;
  const first = new Promise<void>((resolve) => {
    firstTable = resolve;
  });
  top.stdout.on('data', (chunk: Buffer) => {
    output += chunk.toString();
    const found = output.split('berth top: every').length - 1;
    if (found > tables) {
      tables = found;
      if (tables === 1) firstTable?.();
    }
    if (output.length > 1_000_000) output = output.slice(-100_000);
  });
  const ended = new Promise<number | null>((resolve) => top.on('exit', (code) => resolve(code)));
  await first;
  const firstTableMs = performance.now() - spawnedAt;
  const startCpu = cpuSecondsOf(top.pid!);
  const tablesAtStart = tables;
  const steadyFrom = performance.now();
  await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
  const steadyCpu = cpuSecondsOf(top.pid!) - startCpu;
  const steadySeconds = (performance.now() - steadyFrom) / 1000;
  const refreshes = tables - tablesAtStart;
  top.kill('SIGINT');
  const exitCode = await ended;
  const rows = (output.split('berth top: every').at(-1) ?? '').split('\n').filter((line) => line.startsWith('task bench-top-')).length;

  const results = {
    when: new Date().toISOString(),
    sandboxes,
    image,
    intervalSeconds: interval,
    steadySeconds: round(steadySeconds, 1),
    refreshes,
    rowsInLastTable: rows,
    startCpuSeconds: round(startCpu, 2),
    firstTableMs: round(firstTableMs, 0),
    steadyCpuSeconds: round(steadyCpu, 2),
    steadyCpuPercentOfOneCore: round((steadyCpu / steadySeconds) * 100, 2),
    cpuMsPerRefresh: refreshes > 0 ? round((steadyCpu / refreshes) * 1000, 1) : null,
    exitCodeAtCtrlC: exitCode,
    makingSandboxesSeconds: round(makingSeconds, 0),
  };
  printTable(`berth top, ${sandboxes} sandboxes running (docker, ${image}), every ${interval} s for ${round(steadySeconds, 0)} s`, [
    ['steady CPU', `${results.steadyCpuPercentOfOneCore} %`, 'of one core, after the first table'],
    ['CPU per refresh', `${results.cpuMsPerRefresh} ms`, `${refreshes} refreshes (one engine listing each)`],
    ['rows in the last table', String(rows), `of ${sandboxes}`],
    ['first table after', `${results.firstTableMs} ms`, `${results.startCpuSeconds} s of CPU to start and read twice`],
    ['exit status at Ctrl-C', String(exitCode), ''],
  ]);
  const outputDir = path.join(import.meta.dirname, '..', 'bench-results');
  await mkdir(outputDir, { recursive: true });
  const file = path.join(outputDir, `top-${results.when.replace(/[:.]/g, '-')}.json`);
  await writeFile(file, `${JSON.stringify(results, null, 2)}\n`);
  console.log(`written to ${path.relative(process.cwd(), file)}`);
} finally {
  await removeTestRoot(findEngine('docker'), root);
}
