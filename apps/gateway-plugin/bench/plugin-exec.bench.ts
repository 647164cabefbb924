/**
 * Exec through the plugin exactly as a host calls it: `register()` with the host's environment
 * and `terminal:` section (the default configuration but for the image and the sandbox folder:
 * networking on, masking on, a disk per user), one environment from the provider, and every
 * command inside `runWithSession`. Side by side, in rotating blocks on one container:
 *
 * - warm: a builtin (`true`) and a forked command (`/bin/true`) through the plugin; the same two
 *   written into a shell already running in that container (the floor: what any design pays for
 *   the way in and the shell's own work), once reached through the engine's exec stream and once
 *   through the sandbox's channel FIFOs (the way Berth's shells are reached where the sandbox has
 *   a launcher); one dockerode exec; `docker exec` through the CLI;
 * - cold: the first command of a new user against `docker run --rm IMAGE true`, both networked;
 * - a crowd of users each sending commands at once, every answer checked, against the engine
 *   making and starting as many networked containers at once (the engine-bound floor);
 * - the gateway's memory per tracked sandbox, from the crowd's live sandboxes.
 *
 * Prints a table and writes JSON to bench-results/. Run with `pnpm --filter
 * @berth/gateway-plugin bench:plugin` after a build. BENCH_WARM_RUNS (400), BENCH_BLOCK (20),
 * BENCH_COLD_RUNS (20), BENCH_USERS (100), BENCH_COMMANDS (10) change the sizes.
 */
import { execFile } from 'node:child_process';
import { randomBytes, randomInt } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { PassThrough, type Duplex } from 'node:stream';
import { promisify } from 'node:util';
import { REDACTED, runWithSession, type TerminalEnvironment } from '@berth/core';
import Dockerode from 'dockerode';
import { channelsFolderOf, openFifoChannel } from '@berth/sandbox-runtime';
import { releaseDisksUnder, type BerthPlugin } from '../src/index.js';
import { registerBenchPlugin } from './bench-host.js';
import { median, printTable, round, summary, timed } from './stats.js';

const run = promisify(execFile);
const image = process.env.BERTH_TEST_IMAGE ?? 'localhost/berth-busybox:latest';
const sizes = {
  warm: Number(process.env.BENCH_WARM_RUNS ?? 400),
  block: Number(process.env.BENCH_BLOCK ?? 20),
  cold: Number(process.env.BENCH_COLD_RUNS ?? 20),
  users: Number(process.env.BENCH_USERS ?? 100),
  commands: Number(process.env.BENCH_COMMANDS ?? 10),
};
const benchId = randomBytes(4).toString('hex');
const label = 'dev.berth.bench';
const docker = new Dockerode();
const root = await mkdtemp(path.join(tmpdir(), 'berth-plugin-bench-'));
const idBase = randomInt(100_000_000, 1_000_000_000);
const environment: Record<string, string> = { PATH: process.env.PATH ?? '', HOME: root, HERMES_HOME: path.join(root, 'hermes') };
const warmUser = String(idBase);
// The warm user's own secret: masking has something to find in every output.
environment[`HERMES_USER_TELEGRAM_${warmUser}_GITHUB_TOKEN`] = `ghp_${randomBytes(18).toString('hex')}`;
const markers = new Map<string, string>();
for (let index = 0; index < sizes.users; index++) {
  const userId = String(idBase + 1_000 + index);
  markers.set(userId, `m${index}x${randomBytes(6).toString('hex')}`);
  environment[`HERMES_USER_TELEGRAM_${userId}_MARK`] = markers.get(userId)!;
}

/** Registers a plugin as a host does and returns one environment of its provider. */
const register = (config: Record<string, unknown>) =>
  registerBenchPlugin({ environment, config: { docker_image: image, sandbox_dir: path.join(root, 'sandboxes'), ...config } });

const execAs = (terminal: TerminalEnvironment, userId: string, command: string) =>
  runWithSession({ platform: 'telegram', userId }, () => terminal.execute(command));

/**
 * A shell already running in the container, through the engine's exec stream or the sandbox's
 * channel FIFOs: what a command written into it costs, from here.
 */
async function openFloorShell(containerId: string, channels?: string) {
  const stdout = new PassThrough();
  let write: (data: string) => void;
  let close: () => void;
  if (channels) {
    const channel = await openFifoChannel(channels);
    if (!channel) throw new Error(`the sandbox's launcher gave no shell through ${channels}`);
    channel.onStdout((chunk) => stdout.write(chunk));
    write = (data) => channel.write(data);
    close = () => channel.destroy();
  } else {
    const exec = await docker.getContainer(containerId).exec({ Cmd: ['/bin/sh'], AttachStdin: true, AttachStdout: true, AttachStderr: true });
    const stream = (await exec.start({ hijack: true, stdin: true })) as Duplex;
    docker.modem.demuxStream(stream, stdout, new PassThrough().resume());
    write = (data) => stream.write(data);
    close = () => stream.end();
  }
  let buffered = '';
  let waiting: { marker: string; resolve: () => void } | undefined;
  stdout.on('data', (chunk: Buffer) => {
    buffered += chunk.toString();
    if (waiting && buffered.includes(waiting.marker)) {
      buffered = '';
      const { resolve } = waiting;
      waiting = undefined;
      resolve();
    }
  });
  let counter = 0;
  return {
    run(command: string): Promise<void> {
      const marker = `__F${++counter}__`;
      return new Promise<void>((resolve) => {
        waiting = { marker: `${marker}\n`, resolve };
        write(`${command}; echo ${marker}\n`);
      });
    },
    close,
  };
}

async function dockerodeExec(containerId: string): Promise<void> {
  const exec = await docker.getContainer(containerId).exec({ Cmd: ['true'], AttachStdout: true, AttachStderr: true });
  const stream = await exec.start({ hijack: true, stdin: false });
  docker.modem.demuxStream(stream, new PassThrough().resume(), new PassThrough().resume());
  await new Promise((resolve) => stream.on('end', resolve));
  const info = await exec.inspect();
  if (info.ExitCode !== 0) throw new Error(`dockerode exec exited ${info.ExitCode}`);
}

const expectOutput = (result: { output: string; returncode: number }, output: string, what: string): void => {
  if (result.returncode !== 0 || result.output !== output) throw new Error(`${what}: got ${JSON.stringify(result)}, expected ${JSON.stringify(output)}`);
};

async function removeBenchContainers(): Promise<void> {
  const containers = await docker.listContainers({ all: true, filters: { label: [`${label}=${benchId}`] } });
  await Promise.all(
    containers.map((container) =>
      docker
        .getContainer(container.Id)
        .remove({ force: true })
        .catch(() => undefined),
    ),
  );
}

const results: Record<string, unknown> = { image, sizes, engine: (await docker.version()).Version, node: process.version, date: new Date().toISOString() };
const plugins: BerthPlugin[] = [];
try {
  const { plugin, terminal } = await register({});
  plugins.push(plugin);

  // 1. Warm, in rotating blocks on the warm user's container.
  expectOutput(await execAs(terminal, warmUser, 'echo "$GITHUB_TOKEN"'), `${REDACTED}\n`, "the warm user's secret, masked");
  const berth = plugin.instances[0]!;
  const containerId = (await berth.backend.list()).find((entry) => entry.scopeKey === `user:telegram:${warmUser}`)?.containerId;
  if (!containerId) throw new Error('the warm user has no container after a command');
  const floor = await openFloorShell(containerId);
  const fifoFloor = await openFloorShell(containerId, channelsFolderOf(berth.request({ session: { platform: 'telegram', userId: warmUser } }).paths.folder));
  const sides = {
    pluginBuiltin: { run: async () => expectOutput(await execAs(terminal, warmUser, 'true'), '', 'true'), times: [] as number[] },
    pluginForked: { run: async () => expectOutput(await execAs(terminal, warmUser, '/bin/true'), '', '/bin/true'), times: [] as number[] },
    floorBuiltin: { run: () => floor.run('true'), times: [] as number[] },
    floorForked: { run: () => floor.run('/bin/true'), times: [] as number[] },
    fifoFloorBuiltin: { run: () => fifoFloor.run('true'), times: [] as number[] },
    fifoFloorForked: { run: () => fifoFloor.run('/bin/true'), times: [] as number[] },
    dockerode: { run: () => dockerodeExec(containerId), times: [] as number[], every: 4 },
    cli: { run: () => run('docker', ['exec', containerId, 'true']), times: [] as number[], every: 4 },
  };
  for (const side of Object.values(sides)) for (let index = 0; index < 5; index++) await side.run();
  for (let done = 0; done < sizes.warm; done += sizes.block) {
    for (const side of Object.values(sides)) {
      // The engine's own exec paths take 20-80 ms each: a quarter of the runs is plenty.
      const runs = 'every' in side ? Math.ceil(sizes.block / side.every) : sizes.block;
      for (let index = 0; index < runs; index++) side.times.push(await timed(side.run));
    }
  }
  floor.close();
  fifoFloor.close();
  const warm = Object.fromEntries(Object.entries(sides).map(([name, side]) => [name, summary(side.times)]));
  results.warm = {
    ...warm,
    pluginBuiltinToFloor: round(median(sides.pluginBuiltin.times) / median(sides.floorBuiltin.times), 2),
    pluginForkedToFloor: round(median(sides.pluginForked.times) / median(sides.floorForked.times), 2),
    pluginBuiltinToFifoFloor: round(median(sides.pluginBuiltin.times) / median(sides.fifoFloorBuiltin.times), 2),
    pluginForkedToFifoFloor: round(median(sides.pluginForked.times) / median(sides.fifoFloorForked.times), 2),
    pluginBuiltinToCli: round(median(sides.pluginBuiltin.times) / median(sides.cli.times), 4),
    pluginForkedToCli: round(median(sides.pluginForked.times) / median(sides.cli.times), 4),
  };

  // 2. Cold: a new user's first command against `docker run --rm`, both networked, interleaved.
  const cold = { plugin: [] as number[], dockerRun: [] as number[] };
  for (let index = 0; index < sizes.cold; index++) {
    const userId = String(idBase + 500 + index);
    cold.plugin.push(await timed(async () => expectOutput(await execAs(terminal, userId, 'true'), '', 'cold true')));
    cold.dockerRun.push(await timed(() => run('docker', ['run', '--rm', '--label', `${label}=${benchId}`, image, 'true'])));
    await berth.backend.remove(`user:telegram:${userId}`, { purge: true, paths: berth.request({ session: { platform: 'telegram', userId } }).paths });
  }
  results.cold = {
    plugin: summary(cold.plugin),
    dockerRun: summary(cold.dockerRun),
    pluginToDockerRun: round(median(cold.plugin) / median(cold.dockerRun), 2),
  };

  // 3. The crowd: every user sends their commands at once; each answer must be the user's own
  // variable and own file. Both are the user's own secret, so both come back masked; another
  // user's marker would not be one of this user's secrets and would come back in clear. An
  // operator who expects a crowd sizes docker_max_running for it.
  const crowdPlugin = await register({ docker_max_running: sizes.users + 8 });
  plugins.push(crowdPlugin.plugin);
  const crowdBerth = crowdPlugin.plugin.instances[0]!;
  for (const [userId, marker] of markers) {
    const { paths } = crowdBerth.request({ session: { platform: 'telegram', userId } });
    await mkdir(paths.workspace, { recursive: true, mode: 0o700 });
    await writeFile(path.join(paths.workspace, 'owner'), marker);
  }
  const gc = (globalThis as { gc?: () => void }).gc;
  gc?.();
  const memoryBefore = process.memoryUsage();
  let wrong = 0;
  let errors = 0;
  const allMarkers = [...markers.values()];
  let firstProblem: string | undefined;
  const crowdStarted = performance.now();
  await Promise.all(
    [...markers.keys()].flatMap((userId) =>
      Array.from({ length: sizes.commands }, (_, index) =>
        execAs(crowdPlugin.terminal, userId, `printf "%s %s ${index}\\n" "$MARK" "$(cat /workspace/owner)"`).then(
          (result) => {
            if (
              result.returncode !== 0 ||
              result.output !== `${REDACTED} ${REDACTED} ${index}\n` ||
              allMarkers.some((other) => result.output.includes(other))
            ) {
              wrong++;
              firstProblem ??= `${userId}: ${JSON.stringify(result)}`;
            }
          },
          (error: unknown) => {
            errors++;
            firstProblem ??= `${userId}: ${(error as Error).message}`;
          },
        ),
      ),
    ),
  );
  const crowdMs = performance.now() - crowdStarted;
  gc?.();
  const memoryAfter = process.memoryUsage();
  // The floor: the engine making and starting as many networked containers at once, nothing more.
  const floorStarted = performance.now();
  await Promise.all(
    [...markers.keys()].map(async () => {
      const container = await docker.createContainer({ Image: image, Cmd: ['sleep', '60'], Labels: { [label]: benchId } });
      await container.start();
    }),
  );
  const floorMs = performance.now() - floorStarted;
  await removeBenchContainers();
  results.crowd = {
    users: sizes.users,
    commandsPerUser: sizes.commands,
    wallMs: round(crowdMs, 1),
    engineFloorMs: round(floorMs, 1),
    wallToFloor: round(crowdMs / floorMs, 2),
    wrong,
    errors,
    ...(firstProblem ? { firstProblem } : {}),
  };
  results.memory = {
    sandboxes: sizes.users,
    heapPerSandboxKb: round((memoryAfter.heapUsed - memoryBefore.heapUsed) / sizes.users / 1024, 1),
    rssPerSandboxKb: round((memoryAfter.rss - memoryBefore.rss) / sizes.users / 1024, 1),
    gcExposed: gc !== undefined,
  };
} finally {
  for (const plugin of plugins) {
    for (const berth of plugin.instances) {
      for (const entry of await berth.backend.list().catch(() => [])) await berth.backend.remove(entry.scopeKey).catch(() => undefined);
    }
    await plugin.close();
  }
  await removeBenchContainers().catch(() => undefined);
  await releaseDisksUnder(root);
  await rm(root, { recursive: true, force: true });
}

type Row = { medianMs: number; p90Ms: number; runs: number };
const warm = results.warm as Record<string, Row> & {
  pluginBuiltinToFloor: number;
  pluginForkedToFloor: number;
  pluginBuiltinToFifoFloor: number;
  pluginForkedToFifoFloor: number;
  pluginBuiltinToCli: number;
  pluginForkedToCli: number;
};
const cold = results.cold as { plugin: Row; dockerRun: Row; pluginToDockerRun: number };
const crowd = results.crowd as {
  users: number;
  commandsPerUser: number;
  wallMs: number;
  engineFloorMs: number;
  wallToFloor: number;
  wrong: number;
  errors: number;
};
const memory = results.memory as { heapPerSandboxKb: number; rssPerSandboxKb: number; gcExposed: boolean };
const ms = (row: Row) => `${row.medianMs} ms`;
const spread = (row: Row) => `p90 ${row.p90Ms} ms, ${row.runs} runs`;
printTable(`Berth through the plugin, as a host calls it (docker ${results.engine as string}, ${image})`, [
  ['warm builtin `true` through the plugin', ms(warm.pluginBuiltin!), spread(warm.pluginBuiltin!)],
  ['warm forked `/bin/true` through the plugin', ms(warm.pluginForked!), spread(warm.pluginForked!)],
  ['floor: `true` written into a running shell (engine exec stream)', ms(warm.floorBuiltin!), spread(warm.floorBuiltin!)],
  ['floor: `/bin/true` written into a running shell (engine exec stream)', ms(warm.floorForked!), spread(warm.floorForked!)],
  ['floor: `true` written into a running shell (channel FIFOs)', ms(warm.fifoFloorBuiltin!), spread(warm.fifoFloorBuiltin!)],
  ['floor: `/bin/true` written into a running shell (channel FIFOs)', ms(warm.fifoFloorForked!), spread(warm.fifoFloorForked!)],
  ['one dockerode exec of `true`', ms(warm.dockerode!), spread(warm.dockerode!)],
  ['docker exec CONTAINER true (CLI)', ms(warm.cli!), spread(warm.cli!)],
  ['plugin builtin / floor (engine stream, channel FIFOs)', `${warm.pluginBuiltinToFloor}, ${warm.pluginBuiltinToFifoFloor}`, ''],
  ['plugin forked / floor (engine stream, channel FIFOs)', `${warm.pluginForkedToFloor}, ${warm.pluginForkedToFifoFloor}`, ''],
  ['plugin builtin / CLI', String(warm.pluginBuiltinToCli), warm.pluginBuiltinToCli <= 0.02 ? 'within 1/50' : 'above 1/50'],
  ['plugin forked / CLI', String(warm.pluginForkedToCli), warm.pluginForkedToCli <= 0.02 ? 'within 1/50' : 'above 1/50'],
  ['cold first command of a new user', ms(cold.plugin), spread(cold.plugin)],
  ['docker run --rm IMAGE true (networked)', ms(cold.dockerRun), spread(cold.dockerRun)],
  ['cold / docker run', String(cold.pluginToDockerRun), cold.pluginToDockerRun <= 1.2 ? 'within 1.2' : 'above 1.2'],
  [`${crowd.users} users x ${crowd.commandsPerUser} commands at once`, `${crowd.wallMs} ms`, `wrong ${crowd.wrong}, errors ${crowd.errors}`],
  [`engine floor: ${crowd.users} networked containers created and started at once`, `${crowd.engineFloorMs} ms`, ''],
  ['crowd / engine floor', String(crowd.wallToFloor), ''],
  ['gateway heap per tracked sandbox', `${memory.heapPerSandboxKb} KB`, memory.gcExposed ? '' : 'run with --expose-gc for a steadier figure'],
  ['gateway RSS per tracked sandbox', `${memory.rssPerSandboxKb} KB`, ''],
]);
const outputDir = path.join(import.meta.dirname, '..', 'bench-results');
await mkdir(outputDir, { recursive: true });
const file = path.join(outputDir, `plugin-exec-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
await writeFile(file, `${JSON.stringify(results, null, 2)}\n`);
console.log(`\nwritten to ${path.relative(process.cwd(), file)}`);
