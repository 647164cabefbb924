/**
 * Many users at once through the plugin exactly as a host calls it (`register()`, one
 * environment, every command inside `runWithSession`), with the default configuration but for
 * the image and the sandbox folder, every answer checked. Three configurations in one run:
 *
 * - `default`: `docker_max_running: auto` with the one bound all sandboxes share (a parent
 *   cgroup): idle sandboxes stop only when the bound fills up;
 * - `summed limits`: `auto` without the bound (`docker_cgroup_parent: ""`), which caps running
 *   sandboxes at what fits the host with every one at its limits — what `auto` meant before;
 * - `no cap`: `docker_max_running: 0`, the floor.
 *
 * With BENCH_HOG=1, two more sides (or only those, with BENCH_SIDES naming them, comma-separated):
 * `bounded`, a bound of BENCH_HOG_BOUND MB (1024) that one sandbox may fill alone (its own limit
 * the same), and `bounded with one hog`, the same with one more user who, in every round, pins
 * 900 MB in its /tmp and allocates 600 MB over and over beside the crowd: what the light users' median and p99 lose to a hog that the fair-share
 * guard makes give way (docs/backend-docker.md#fair-share). The hog's own answers are not counted.
 *
 * For each crowd size (BENCH_CROWDS, default 1,12,50,100 users) every user's sandbox is made
 * first (not timed), then BENCH_ROUNDS rounds (3) of every user sending BENCH_COMMANDS (5)
 * commands at once are timed (each answer must carry that user's own marker, from a file in
 * their sandbox): the round's wall time, each command's latency (median, p99) and
 * how many sandboxes were stopped while their users were active. The `summed limits` side runs
 * only up to BENCH_SUMMED_MAX users (12): beyond, each round takes minutes.
 *
 * Prints a table and writes JSON to bench-results/. Run with `pnpm --filter
 * @berth/gateway-plugin bench:crowd` after a build, as root (the bound's cgroups), with nothing
 * else running.
 */
import { randomBytes, randomInt } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { runWithSession, type TerminalEnvironment } from '@berth/core';
import Dockerode from 'dockerode';
import { createBerthPlugin, createInProcessTerminalRegistry, releaseDisksUnder, type BerthPlugin } from '../src/index.js';
import { median, percentile, printTable, round, timed } from './stats.js';

const image = process.env.BERTH_TEST_IMAGE ?? 'localhost/berth-busybox:latest';
const crowds = (process.env.BENCH_CROWDS ?? '1,12,50,100').split(',').map(Number);
const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
const commands = Number(process.env.BENCH_COMMANDS ?? 5);
const summedMax = Number(process.env.BENCH_SUMMED_MAX ?? 12);
const docker = new Dockerode();
const root = await mkdtemp(path.join(tmpdir(), 'berth-crowd-bench-'));
const idBase = randomInt(100_000_000, 1_000_000_000);
const most = Math.max(...crowds);
const markers = new Map<string, string>();
const environment: Record<string, string> = { PATH: process.env.PATH ?? '', HOME: root, HERMES_HOME: path.join(root, 'hermes') };
for (let index = 0; index < most; index++) {
  const userId = String(idBase + index);
  markers.set(userId, `m${index}x${randomBytes(6).toString('hex')}`);
}

const hogBound = Number(process.env.BENCH_HOG_BOUND ?? 1024);
// One sandbox may take the whole bound: the hog alone fills it, so the guard, not the sandbox's own limit, decides.
const bounded = { docker_total_memory: hogBound, container_memory: hogBound, docker_tmp_size: hogBound };
const allSides: Record<string, Record<string, unknown>> = {
  default: {},
  'summed limits': { docker_cgroup_parent: '' },
  'no cap': { docker_max_running: 0 },
  ...(process.env.BENCH_HOG === '1' ? { bounded, 'bounded with one hog': bounded } : {}),
};
const wanted = process.env.BENCH_SIDES?.split(',').map((name) => name.trim());
const sides = Object.fromEntries(Object.entries(allSides).filter(([name]) => !wanted || wanted.includes(name)));
const hogId = String(idBase + most + 1);
/** The hog's round: a tmpfs pin, then allocations over and over; it may be stopped under it (the guard). */
const HOG_COMMAND =
  'dd if=/dev/zero of=/tmp/pin bs=1M count=900 2>/dev/null; i=0; while [ $i -lt 8 ]; do dd if=/dev/zero of=/dev/null bs=600M count=1 2>/dev/null; i=$((i + 1)); done; echo done';

interface Side {
  readonly plugin: BerthPlugin;
  readonly terminal: TerminalEnvironment;
  readonly stops: string[];
  /** The guard's lines: a sandbox gave way. */
  readonly gaveWay: string[];
}

async function register(name: string, config: Record<string, unknown>): Promise<Side> {
  const plugin = createBerthPlugin();
  const registry = createInProcessTerminalRegistry();
  const stops: string[] = [];
  const gaveWay: string[] = [];
  await plugin.register({
    specificationVersion: 'v1',
    terminal: registry,
    environment,
    config: { docker_image: image, sandbox_dir: path.join(root, name.replace(/ /g, '-')), ...config },
    logger: {
      info: (line) => {
        if (/stopping .*least recently used/.test(line)) stops.push(line);
      },
      warn: (line) => {
        if (/gave way/.test(line)) gaveWay.push(line);
      },
      error: (line) => console.error(line),
    },
  });
  return { plugin, terminal: await registry.get('berth-docker').createEnvironment({}), stops, gaveWay };
}

const execAs = (terminal: TerminalEnvironment, userId: string, command: string) =>
  runWithSession({ platform: 'telegram', userId }, () => terminal.execute(command));

/** Every user sends `commands` commands at once; each answer must be that user's own marker. */
async function crowdRound(side: Side, users: readonly string[]): Promise<{ wallMs: number; latencies: number[]; wrong: number }> {
  const latencies: number[] = [];
  let wrong = 0;
  const wallMs = await timed(() =>
    Promise.all(
      users.flatMap((userId) =>
        Array.from({ length: commands }, async (_, index) => {
          const started = performance.now();
          const result = await execAs(side.terminal, userId, `echo "$(cat /root/owner)-${index}"`).catch((error: unknown) => ({
            output: String(error),
            returncode: -1,
          }));
          latencies.push(performance.now() - started);
          if (result.returncode !== 0 || result.output !== `${markers.get(userId)}-${index}\n`) wrong++;
        }),
      ),
    ),
  );
  return { wallMs, latencies, wrong };
}

const results: Record<string, unknown>[] = [];
const registered: Side[] = [];
try {
  const bySide = new Map<string, Side>();
  for (const [name, config] of Object.entries(sides)) {
    const side = await register(name, config);
    registered.push(side);
    bySide.set(name, side);
  }
  for (const size of crowds) {
    const users = Array.from({ length: size }, (_, index) => String(idBase + index));
    for (const [name, side] of bySide) {
      if (name === 'summed limits' && size > summedMax) continue;
      // Every user's sandbox made first, a few at a time (not timed).
      // Each sandbox holds its user's marker in a file (not a variable: a per-user variable is masked in output).
      for (let at = 0; at < users.length; at += 8) {
        await Promise.all(users.slice(at, at + 8).map((userId) => execAs(side.terminal, userId, `echo ${markers.get(userId)} > /root/owner`)));
      }
      const stopsBefore = side.stops.length;
      const walls: number[] = [];
      const latencies: number[] = [];
      let wrong = 0;
      let hogAnswers = 0;
      for (let done = 0; done < rounds; done++) {
        const hog = name.endsWith('with one hog')
          ? execAs(side.terminal, hogId, HOG_COMMAND).then(
              () => hogAnswers++,
              () => undefined,
            )
          : undefined;
        const round_ = await crowdRound(side, users);
        await hog;
        walls.push(round_.wallMs);
        latencies.push(...round_.latencies);
        wrong += round_.wrong;
      }
      const row = {
        side: name,
        users: size,
        commandsPerUser: commands,
        rounds,
        wallMedianMs: round(median(walls), 1),
        latencyMedianMs: round(median(latencies), 1),
        latencyP99Ms: round(percentile(latencies, 99), 1),
        stoppedWhileActive: side.stops.length - stopsBefore,
        wrong,
        ...(name.endsWith('with one hog') ? { hogAnswers, gaveWay: side.gaveWay.length } : {}),
      };
      results.push(row);
      console.log(JSON.stringify(row));
    }
  }
} finally {
  for (const side of registered) {
    const berth = side.plugin.instances[0];
    if (berth) for (const entry of await berth.backend.list()) await berth.backend.remove(entry.scopeKey).catch(() => undefined);
    await side.plugin.close().catch(() => undefined);
  }
  await releaseDisksUnder(root);
  await rm(root, { recursive: true, force: true });
}

const rowOf = (side: string, users: number) => results.find((row) => row.side === side && row.users === users);
const rows: Array<readonly [string, string, string]> = [];
for (const row of results) {
  rows.push([
    `${row.side}: ${row.users} users x ${row.commandsPerUser} at once`,
    `${row.wallMedianMs} ms`,
    `per command median ${row.latencyMedianMs} ms, p99 ${row.latencyP99Ms} ms; stopped while active ${row.stoppedWhileActive}; wrong ${row.wrong}` +
      (row.gaveWay === undefined ? '' : `; the hog gave way ${row.gaveWay} times`),
  ]);
}
for (const users of crowds) {
  const base = rowOf('no cap', users);
  const bare = rowOf('bounded', users);
  const hogged = rowOf('bounded with one hog', users);
  if (bare && hogged) {
    rows.push([`one hog / none, ${users} users: median`, String(round(Number(hogged.latencyMedianMs) / Number(bare.latencyMedianMs), 2)), '']);
    rows.push([`one hog / none, ${users} users: p99`, String(round(Number(hogged.latencyP99Ms) / Number(bare.latencyP99Ms), 2)), '']);
  }
  for (const side of ['default', 'summed limits']) {
    const row = rowOf(side, users);
    if (row && base) rows.push([`${side} / no cap, ${users} users`, String(round(Number(row.wallMedianMs) / Number(base.wallMedianMs), 2)), '']);
  }
}
printTable(`crowds through the plugin (${rounds} rounds each, medians; engine ${(await docker.version()).Version})`, rows);
const outputDir = path.join(import.meta.dirname, '..', 'bench-results');
await mkdir(outputDir, { recursive: true });
const file = path.join(outputDir, `crowd-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
await writeFile(file, `${JSON.stringify({ image, crowds, rounds, commands, node: process.version, date: new Date().toISOString(), results }, null, 2)}\n`);
console.log(`\nwritten to ${path.relative(process.cwd(), file)}`);
