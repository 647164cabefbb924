/**
 * A new user's first command, through the plugin exactly as a host calls it (`register()`, one
 * environment of the provider, each command inside `runWithSession`), side by side in one run
 * with `docker run --rm IMAGE true` (networking on all three), in rotation:
 *
 * - pooled: `docker_pool_size: 2`, the pool full when the user comes (the gateway warmed it at
 *   registration and refills it after each hand-over; the bench waits for that between users);
 * - made: `docker_pool_size: 0`, the user's sandbox made for their first command;
 * - `docker run --rm IMAGE true`.
 *
 * Then warm commands of a pooled and a made user in turn (`echo`), to show a pooled sandbox
 * answers as fast once it is theirs. Prints a table and writes JSON to bench-results/. Run with
 * `pnpm --filter @berth/gateway-plugin bench:first` after a build. BENCH_RUNS (20) users of each kind;
 * BENCH_RUNTIME=runsc for gVisor.
 */
import { execFile } from 'node:child_process';
import { randomInt } from 'node:crypto';
import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { runWithSession, type TerminalEnvironment } from '@berth/core';
import Dockerode from 'dockerode';
import { benchRuntime, registerBenchPlugin, removeBenchSandboxes } from './bench-host.js';
import { median, printTable, round, summary, timed } from './stats.js';

const run = promisify(execFile);
const image = process.env.BERTH_TEST_IMAGE ?? 'localhost/berth-busybox:latest';
const runs = Number(process.env.BENCH_RUNS ?? 20);
const POOL = 2;
const docker = new Dockerode();
const root = await mkdtemp(path.join(tmpdir(), 'berth-first-bench-'));
const idBase = randomInt(100_000_000, 1_000_000_000);
const quiet = { info: () => undefined, warn: (line: string) => console.error(line), error: (line: string) => console.error(line) };
const environment: Record<string, string> = { PATH: process.env.PATH ?? '', HOME: root, HERMES_HOME: path.join(root, 'hermes') };

const register = (kind: string, config: Record<string, unknown>) =>
  registerBenchPlugin({ environment, config: { docker_image: image, sandbox_dir: path.join(root, kind), ...benchRuntime.config, ...config }, logger: quiet });

const execAs = async (terminal: TerminalEnvironment, userId: string, command: string, expected: string): Promise<void> => {
  const result = await runWithSession({ platform: 'telegram', userId }, () => terminal.execute(command));
  if (result.returncode !== 0 || result.output !== expected) throw new Error(`${command} as ${userId}: got ${JSON.stringify(result)}`);
};

/** Waits until the pool under `kind` holds its size again: sandboxes labelled as the pool's and still named so. */
async function poolFull(kind: string): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    const found = await docker.listContainers({ filters: { label: ['dev.berth.kind=pool'] } });
    const ready = found.filter(
      (container) => (container.Labels['dev.berth.workspace'] ?? '').startsWith(path.join(root, kind)) && /pool-[0-9a-f]{32}$/.test(container.Names[0] ?? ''),
    );
    if (ready.length >= POOL) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`the pool of ${kind} did not fill within 60 s`);
}

const pooled = await register('pooled', { docker_pool_size: POOL });
const made = await register('made', { docker_pool_size: 0 });
const times = { pooled: [] as number[], made: [] as number[], dockerRun: [] as number[], warmPooled: [] as number[], warmMade: [] as number[] };
try {
  for (let index = 0; index < runs; index++) {
    await poolFull('pooled');
    times.pooled.push(await timed(() => execAs(pooled.terminal, String(idBase + index), 'echo hi', 'hi\n')));
    times.dockerRun.push(await timed(() => run('docker', ['run', '--rm', ...benchRuntime.dockerRunArgs, image, 'true'])));
    times.made.push(await timed(() => execAs(made.terminal, String(idBase + 10_000 + index), 'echo hi', 'hi\n')));
  }
  for (let index = 0; index < runs * 5; index++) {
    const user = index % runs;
    times.warmPooled.push(await timed(() => execAs(pooled.terminal, String(idBase + user), 'echo warm', 'warm\n')));
    times.warmMade.push(await timed(() => execAs(made.terminal, String(idBase + 10_000 + user), 'echo warm', 'warm\n')));
  }
  const results = {
    when: new Date().toISOString(),
    runs,
    image,
    runtime: benchRuntime.name,
    poolSize: POOL,
    pooled: summary(times.pooled),
    made: summary(times.made),
    dockerRun: summary(times.dockerRun),
    warmPooled: summary(times.warmPooled),
    warmMade: summary(times.warmMade),
    pooledToDockerRun: round(median(times.pooled) / median(times.dockerRun), 3),
    madeToDockerRun: round(median(times.made) / median(times.dockerRun), 3),
  };
  const ms = (row: { medianMs: number; p90Ms: number }) => [`${round(row.medianMs, 1)} ms`, `p90 ${round(row.p90Ms, 1)} ms`] as const;
  printTable(`a new user's first command, ${runs} users of each kind (docker, ${benchRuntime.name}, ${image}, networking on)`, [
    ['from the warm pool (docker_pool_size: 2)', ...ms(results.pooled)],
    ['made for them (docker_pool_size: 0)', ...ms(results.made)],
    ['docker run --rm IMAGE true (networked)', ...ms(results.dockerRun)],
    ['pooled / docker run', String(results.pooledToDockerRun), results.pooledToDockerRun <= 0.25 ? 'within 1/4' : 'above 1/4'],
    ['made / docker run', String(results.madeToDockerRun), ''],
    ['warm command, pooled sandbox', ...ms(results.warmPooled)],
    ['warm command, made sandbox', ...ms(results.warmMade)],
  ]);
  const outputDir = path.join(import.meta.dirname, '..', 'bench-results');
  await mkdir(outputDir, { recursive: true });
  const file = path.join(outputDir, `first-command-${benchRuntime.name}-${results.when.replace(/[:.]/g, '-')}.json`);
  await writeFile(file, `${JSON.stringify(results, null, 2)}\n`);
  console.log(`written to ${path.relative(process.cwd(), file)}`);
} finally {
  for (const { plugin } of [pooled, made]) await plugin.close().catch(() => undefined);
  await removeBenchSandboxes(docker, root);
}
