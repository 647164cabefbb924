/**
 * A returning user's first command after their sandbox went idle, through the plugin exactly as
 * a host calls it (`register()`, one environment of the provider, each command inside
 * `runWithSession`), side by side in one run with `docker run --rm IMAGE true` (networking on
 * both), in rotation:
 *
 * - frozen: `docker_freeze_seconds` set, the sandbox frozen by the gateway's own reaper after
 *   `lifetime_seconds` (1 s here) of silence; the next command thaws it;
 * - stopped: `docker_freeze_seconds: 0` (the default before it was 3600), the sandbox stopped by the reaper; the next
 *   command starts it again;
 * - `docker run --rm IMAGE true`.
 *
 * Each user is made, left idle until the engine shows the sandbox paused (or exited), then timed.
 * Prints a table and writes JSON to bench-results/. Run with `pnpm --filter
 * @berth/gateway-plugin bench:resume` after a build. BENCH_RUNS (20) users of each kind; BENCH_RUNTIME=runsc
 * for gVisor.
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
const docker = new Dockerode();
const root = await mkdtemp(path.join(tmpdir(), 'berth-resume-bench-'));
const idBase = randomInt(100_000_000, 1_000_000_000);
const environment: Record<string, string> = { PATH: process.env.PATH ?? '', HOME: root, HERMES_HOME: path.join(root, 'hermes') };

/** Registers a plugin as a host does, over its own sandbox folder, and returns one environment of its provider. */
const register = (kind: string, config: Record<string, unknown>) =>
  registerBenchPlugin({
    environment,
    config: { docker_image: image, sandbox_dir: path.join(root, kind), lifetime_seconds: 1, ...benchRuntime.config, ...config },
  });

const execAs = async (terminal: TerminalEnvironment, userId: string, command: string, expected: string): Promise<void> => {
  const result = await runWithSession({ platform: 'telegram', userId }, () => terminal.execute(command));
  if (result.returncode !== 0 || result.output !== expected) throw new Error(`${command} as ${userId}: got ${JSON.stringify(result)}`);
};

/** Waits until the engine shows the user's sandbox in `state` (its label names the user). */
async function until(userId: string, state: 'paused' | 'exited'): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    const found = await docker.listContainers({ all: true, filters: { label: [`dev.berth.scope=user:telegram:${userId}`] } });
    if (found.some((container) => container.State === state)) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`the sandbox of ${userId} was not ${state} within 30 s`);
}

const frozen = await register('frozen', { docker_freeze_seconds: 3600 });
const stopped = await register('stopped', { docker_freeze_seconds: 0 });
const times = { frozen: [] as number[], stopped: [] as number[], dockerRun: [] as number[] };
try {
  for (let index = 0; index < runs; index++) {
    const frozenUser = String(idBase + index);
    const stoppedUser = String(idBase + 10_000 + index);
    // Both made and left idle together; then each timed in turn, with docker run between.
    await Promise.all([execAs(frozen.terminal, frozenUser, 'cd /tmp', ''), execAs(stopped.terminal, stoppedUser, 'cd /tmp', '')]);
    await Promise.all([until(frozenUser, 'paused'), until(stoppedUser, 'exited')]);
    times.frozen.push(await timed(() => execAs(frozen.terminal, frozenUser, 'echo back', 'back\n')));
    times.dockerRun.push(await timed(() => run('docker', ['run', '--rm', ...benchRuntime.dockerRunArgs, image, 'true'])));
    times.stopped.push(await timed(() => execAs(stopped.terminal, stoppedUser, 'echo back', 'back\n')));
  }
  const results = {
    when: new Date().toISOString(),
    runs,
    image,
    runtime: benchRuntime.name,
    frozen: summary(times.frozen),
    stopped: summary(times.stopped),
    dockerRun: summary(times.dockerRun),
    frozenToDockerRun: round(median(times.frozen) / median(times.dockerRun), 3),
    stoppedToDockerRun: round(median(times.stopped) / median(times.dockerRun), 3),
  };
  const ms = (row: { medianMs: number }) => `${round(row.medianMs, 1)} ms`;
  printTable(`a returning user's first command, ${runs} users of each kind (docker, ${benchRuntime.name}, ${image})`, [
    ['frozen at idle, thawed (docker_freeze_seconds)', ms(results.frozen), `p90 ${round(results.frozen.p90Ms, 1)} ms`],
    ['stopped at idle, started again (the default)', ms(results.stopped), `p90 ${round(results.stopped.p90Ms, 1)} ms`],
    ['docker run --rm IMAGE true (networked)', ms(results.dockerRun), `p90 ${round(results.dockerRun.p90Ms, 1)} ms`],
    ['frozen / docker run', String(results.frozenToDockerRun), results.frozenToDockerRun <= 0.1 ? 'within 1/10' : 'above 1/10'],
    ['stopped / docker run', String(results.stoppedToDockerRun), ''],
  ]);
  const outputDir = path.join(import.meta.dirname, '..', 'bench-results');
  await mkdir(outputDir, { recursive: true });
  const file = path.join(outputDir, `resume-${benchRuntime.name}-${results.when.replace(/[:.]/g, '-')}.json`);
  await writeFile(file, `${JSON.stringify(results, null, 2)}\n`);
  console.log(`written to ${path.relative(process.cwd(), file)}`);
} finally {
  for (const { plugin } of [frozen, stopped]) await plugin.close().catch(() => undefined);
  await removeBenchSandboxes(docker, root);
}
