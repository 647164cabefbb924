/**
 * Exec benchmark of the Docker backend against the ways a gateway could run a command without
 * Berth, side by side in one run on one engine and one image. Prints a table and writes JSON
 * to bench-results/. Run with `pnpm --filter @berth/backend-docker bench`.
 *
 * BENCH_WARM_RUNS (200), BENCH_COLD_RUNS (200), BENCH_USERS (100), BENCH_COMMANDS (10) and
 * BENCH_TRACKED (200) and BENCH_FLOOD_RUNS (200) change the sizes.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { promisify } from 'node:util';
import { createPlatformRegistry, createSandboxResolver, parseTerminalConfig, type SandboxRequest } from '@berth/core';
import Dockerode from 'dockerode';
import { createDockerBackend } from '../src/index.js';
import { releaseDisksUnder } from '@berth/sandbox-runtime';

const run = promisify(execFile);
const image = process.env.BERTH_TEST_IMAGE ?? 'localhost/berth-busybox:latest';
const sizes = {
  warm: Number(process.env.BENCH_WARM_RUNS ?? 200),
  cold: Number(process.env.BENCH_COLD_RUNS ?? 200),
  users: Number(process.env.BENCH_USERS ?? 100),
  commands: Number(process.env.BENCH_COMMANDS ?? 10),
  tracked: Number(process.env.BENCH_TRACKED ?? 200),
  flood: Number(process.env.BENCH_FLOOD_RUNS ?? 200),
};
const benchId = randomBytes(4).toString('hex');
const label = 'dev.berth.bench';
const docker = new Dockerode();
const sandboxDir = await mkdtemp(path.join(tmpdir(), 'berth-bench-'));
const environment: Record<string, string> = {};
const config = parseTerminalConfig({
  docker_image: image,
  sandbox_dir: sandboxDir,
  docker_network: false,
  container_memory: 256,
  lifetime_seconds: 0,
  docker_mask_secrets: false,
});
const backend = createDockerBackend({ settings: config, docker, namePrefix: `berth-b${benchId}-`, labels: { [label]: benchId } });
const registry = createPlatformRegistry();
let resolver = createSandboxResolver({ config, registry, environment });
const requestOf = (userId: string): SandboxRequest => resolver.resolve({ session: { platform: 'telegram', userId } });

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
};
const percentile = (values: number[], p: number): number =>
  [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor((values.length * p) / 100))]!;
const summary = (values: number[]) => ({
  runs: values.length,
  medianMs: round(median(values)),
  p90Ms: round(percentile(values, 90)),
  minMs: round(Math.min(...values)),
});
const round = (value: number): number => Math.round(value * 1000) / 1000;
const timed = async (task: () => Promise<unknown>): Promise<number> => {
  const started = performance.now();
  await task();
  return performance.now() - started;
};
const gc = (): void => (globalThis as { gc?: () => void }).gc?.();

async function dockerodeExec(containerId: string): Promise<void> {
  const exec = await docker.getContainer(containerId).exec({ Cmd: ['true'], AttachStdout: true, AttachStderr: true });
  const stream = await exec.start({ hijack: true, stdin: false });
  const sink = new PassThrough();
  sink.resume();
  docker.modem.demuxStream(stream, sink, sink);
  await new Promise((resolve) => stream.on('end', resolve));
  const info = await exec.inspect();
  if (info.ExitCode !== 0) throw new Error(`dockerode exec exited ${info.ExitCode}`);
}

async function cleanup(): Promise<void> {
  await backend.close();
  const containers = await docker.listContainers({ all: true, filters: { label: [`${label}=${benchId}`] } });
  for (let index = 0; index < containers.length; index += 8) {
    await Promise.all(
      containers.slice(index, index + 8).map((container) =>
        docker
          .getContainer(container.Id)
          .remove({ force: true })
          .catch(() => undefined),
      ),
    );
  }
  await releaseDisksUnder(sandboxDir);
  await rm(sandboxDir, { recursive: true, force: true });
}

async function removeScopes(requests: SandboxRequest[]): Promise<void> {
  for (let index = 0; index < requests.length; index += 8) {
    await Promise.all(requests.slice(index, index + 8).map((request) => backend.remove(request.scope.key, { purge: true, paths: request.paths })));
  }
}

const results: Record<string, unknown> = {
  image,
  sizes,
  engine: await docker.version().then((version) => version.Version),
  node: process.version,
  date: new Date().toISOString(),
};

try {
  // 1. Warm exec of `true`, the three ways interleaved on one container.
  const warmRequest = requestOf('1');
  const containerId = await backend.doAcquire(warmRequest);
  const name = backend.containerName(warmRequest);
  for (let index = 0; index < 10; index++) {
    await backend.doExec(warmRequest, { command: 'true' });
    await dockerodeExec(containerId);
  }
  const warm = { berth: [] as number[], dockerode: [] as number[], cli: [] as number[] };
  for (let index = 0; index < sizes.warm; index++) {
    warm.berth.push(await timed(() => backend.doExec(warmRequest, { command: 'true' })));
    warm.dockerode.push(await timed(() => dockerodeExec(containerId)));
    warm.cli.push(await timed(() => run('docker', ['exec', name, 'true'])));
  }
  results.warm = {
    berth: summary(warm.berth),
    dockerode: summary(warm.dockerode),
    cli: summary(warm.cli),
    berthToCli: round(median(warm.berth) / median(warm.cli)),
  };

  // 2. Cold first command of a new user against `docker run --rm`.
  const cold = { berth: [] as number[], dockerRun: [] as number[] };
  for (let index = 0; index < sizes.cold; index++) {
    const request = requestOf(`cold${index}`);
    cold.berth.push(await timed(() => backend.doExec(request, { command: 'true' })));
    cold.dockerRun.push(await timed(() => run('docker', ['run', '--rm', '--network', 'none', '--label', `${label}=${benchId}`, image, 'true'])));
    await removeScopes([request]);
  }
  results.cold = { berth: summary(cold.berth), dockerRun: summary(cold.dockerRun), berthToDockerRun: round(median(cold.berth) / median(cold.dockerRun)) };

  // 3. Gateway memory per tracked sandbox: each with a live container and shell session.
  gc();
  const before = process.memoryUsage();
  const tracked: SandboxRequest[] = [];
  for (let index = 0; index < sizes.tracked; index += 8) {
    const batch = Array.from({ length: Math.min(8, sizes.tracked - index) }, (_, offset) => requestOf(`tracked${index + offset}`));
    await Promise.all(batch.map((request) => backend.doExec(request, { command: 'true' })));
    tracked.push(...batch);
  }
  gc();
  await new Promise((resolve) => setTimeout(resolve, 500));
  gc();
  const after = process.memoryUsage();
  results.memory = {
    sandboxes: tracked.length,
    rssGrowthPerSandboxKb: round((after.rss - before.rss) / tracked.length / 1024),
    heapGrowthPerSandboxKb: round((after.heapUsed - before.heapUsed) / tracked.length / 1024),
    externalGrowthPerSandboxKb: round((after.external + after.arrayBuffers - before.external - before.arrayBuffers) / tracked.length / 1024),
    gcExposed: typeof (globalThis as { gc?: unknown }).gc === 'function',
  };
  await removeScopes(tracked);

  // 4. Many users at once: each command checks it sees only its own user's marker.
  const markers = new Map<string, string>();
  for (let index = 0; index < sizes.users; index++) {
    const marker = `m${index}x${randomBytes(6).toString('hex')}`;
    markers.set(`crowd${index}`, marker);
    environment[`HERMES_USER_TELEGRAM_CROWD${index}_MARK`] = marker;
  }
  resolver = createSandboxResolver({ config, registry, environment });
  const crowd = [...markers.keys()].map((userId) => ({ userId, request: requestOf(userId) }));
  for (const { userId, request } of crowd) {
    await mkdir(request.paths.workspace, { recursive: true, mode: 0o700 });
    await writeFile(path.join(request.paths.workspace, 'owner'), markers.get(userId)!);
  }
  let errors = 0;
  let leaks = 0;
  let wrong = 0;
  const allMarkers = [...markers.values()];
  const started = performance.now();
  await Promise.all(
    crowd.flatMap(({ userId, request }) =>
      Array.from({ length: sizes.commands }, () =>
        backend
          .doExec(request, { command: 'printf "%s %s\\n" "$MARK" "$(cat /workspace/owner)"' })
          .then((result) => {
            const own = markers.get(userId)!;
            if (result.exitCode !== 0 || result.stdout !== `${own} ${own}\n`) wrong++;
            if (allMarkers.some((marker) => marker !== own && result.stdout.includes(marker))) leaks++;
          })
          .catch(() => errors++),
      ),
    ),
  );
  const wallMs = performance.now() - started;
  results.crowd = { users: sizes.users, commandsPerUser: sizes.commands, wallMs: round(wallMs), errors, crossUserLeaks: leaks, wrongOutputs: wrong };
  await removeScopes(crowd.map(({ request }) => request));

  // 5. Background floods: another user's warm command with an idle gateway, then while three
  // sandboxes each have `yes > /dev/stdout &` left behind by a command that ended, then idle again.
  const quiet = requestOf('quiet');
  const flooders = ['flood1', 'flood2', 'flood3'].map((userId) => requestOf(userId));
  await backend.doExec(quiet, { command: 'true' });
  await Promise.all(flooders.map((request) => backend.doExec(request, { command: 'true' })));
  const measure = async (runs: number): Promise<number[]> => {
    const times: number[] = [];
    for (let index = 0; index < runs; index++) times.push(await timed(() => backend.doExec(quiet, { command: 'true' })));
    return times;
  };
  const idleBefore = await measure(sizes.flood / 2);
  for (const request of flooders) await backend.doExec(request, { command: 'yes > /dev/stdout & echo left' });
  await new Promise((resolve) => setTimeout(resolve, 500));
  const flooded = await measure(sizes.flood);
  for (const request of flooders) await backend.doExec(request, { command: 'pkill yes; true' });
  const idle = [...idleBefore, ...(await measure(sizes.flood / 2))];
  results.floods = { idle: summary(idle), flooded: summary(flooded), floodedToIdle: round(median(flooded) / median(idle)) };
  await removeScopes([quiet, ...flooders]);
} finally {
  await cleanup();
}

const warmResult = results.warm as { berth: { medianMs: number }; dockerode: { medianMs: number }; cli: { medianMs: number }; berthToCli: number } | undefined;
const coldResult = results.cold as { berth: { medianMs: number }; dockerRun: { medianMs: number }; berthToDockerRun: number } | undefined;
const memory = results.memory as { sandboxes: number; rssGrowthPerSandboxKb: number; heapGrowthPerSandboxKb: number } | undefined;
const crowdResult = results.crowd as
  | { users: number; commandsPerUser: number; wallMs: number; errors: number; crossUserLeaks: number; wrongOutputs: number }
  | undefined;
const rows: Array<[string, string, string]> = [];
if (warmResult) {
  rows.push(['warm `true`: Berth session (median)', `${warmResult.berth.medianMs} ms`, '']);
  rows.push(['warm `true`: one dockerode exec (median)', `${warmResult.dockerode.medianMs} ms`, '']);
  rows.push(['warm `true`: docker exec CLI (median)', `${warmResult.cli.medianMs} ms`, '']);
  rows.push(['warm Berth / CLI', `${warmResult.berthToCli}`, warmResult.berthToCli <= 0.1 ? 'meets <= 0.1' : 'MISSES <= 0.1']);
}
if (coldResult) {
  rows.push(['cold first command: Berth (median)', `${coldResult.berth.medianMs} ms`, '']);
  rows.push(['cold: docker run --rm --network none (median)', `${coldResult.dockerRun.medianMs} ms`, '']);
  rows.push(['cold Berth / docker run', `${coldResult.berthToDockerRun}`, coldResult.berthToDockerRun <= 1.5 ? 'meets <= 1.5' : 'MISSES <= 1.5']);
}
if (crowdResult) {
  rows.push([
    `${crowdResult.users} users x ${crowdResult.commandsPerUser} commands at once`,
    `${crowdResult.wallMs} ms`,
    `errors ${crowdResult.errors}, leaks ${crowdResult.crossUserLeaks}, wrong ${crowdResult.wrongOutputs}`,
  ]);
}
const floods = results.floods as { idle: { medianMs: number }; flooded: { medianMs: number }; floodedToIdle: number } | undefined;
if (floods) {
  rows.push(['warm `true`, idle gateway (median)', `${floods.idle.medianMs} ms`, '']);
  rows.push(['warm `true`, 3 sandboxes with `yes &` left (median)', `${floods.flooded.medianMs} ms`, '']);
  rows.push(['flooded / idle', `${floods.floodedToIdle}`, floods.floodedToIdle <= 2 ? 'meets <= 2' : 'MISSES <= 2']);
}
if (memory) {
  rows.push([
    `gateway RSS growth per sandbox (${memory.sandboxes} live)`,
    `${memory.rssGrowthPerSandboxKb} KB`,
    memory.rssGrowthPerSandboxKb < 100 ? 'meets < 100 KB' : 'MISSES < 100 KB',
  ]);
  rows.push(['gateway heap growth per sandbox', `${memory.heapGrowthPerSandboxKb} KB`, '']);
}
const width = Math.max(...rows.map((row) => row[0].length));
console.log(`\nBerth Docker backend benchmark (${results.engine as string}, ${image})\n`);
for (const [what, value, verdict] of rows) console.log(`${what.padEnd(width)}  ${value.padStart(12)}  ${verdict}`);
const outputDir = path.join(import.meta.dirname, '..', 'bench-results');
await mkdir(outputDir, { recursive: true });
const file = path.join(outputDir, `exec-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
await writeFile(file, `${JSON.stringify(results, null, 2)}\n`);
console.log(`\nwritten to ${path.relative(process.cwd(), file)}`);
