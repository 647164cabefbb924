/**
 * What a host that spawns a process per command pays: a spawned `berth exec --socket` client
 * against a running `berth serve`, next to a spawned `docker exec CONTAINER true` on the same
 * container, a spawned `berth exec` without the server, and bare `node -e 0` (the floor of any
 * Node client); and, where the host has Perl, the shipped Perl client (client/berth-socket-client.pl,
 * what `sandboxCommandArgv` spawns by default there; its answer is first checked against the
 * Node client's). Runs are interleaved so both sides see the same machine load. Prints a table
 * and writes JSON to bench-results/. Run with `pnpm --filter @berth/gateway-plugin bench`
 * after a build.
 *
 * BENCH_RUNS (200) spawned runs of each fast path; BENCH_DIRECT_RUNS (20) of `berth exec`
 * without the server.
 */
import { execFile, spawn } from 'node:child_process';
import { randomInt } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { releaseDisksUnder } from '@berth/sandbox-runtime';
import { findPerl, sandboxCommandArgv } from '../src/socket/sandbox-command-argv.js';
import { median, round, summary as summaryOf } from './stats.js';

const image = process.env.BERTH_TEST_IMAGE ?? 'localhost/berth-busybox:latest';
const runs = Number(process.env.BENCH_RUNS ?? 200);
const directRuns = Number(process.env.BENCH_DIRECT_RUNS ?? 20);
const cli = path.join(import.meta.dirname, '..', 'dist', 'cli.js');
if (!existsSync(cli)) throw new Error(`${cli} is missing; run "pnpm --filter @berth/gateway-plugin build" first`);

const root = await mkdtemp(path.join(tmpdir(), 'berth-sock-bench-'));
const socket = path.join(root, 'run', 'berth.sock');
const userId = String(randomInt(100_000_000, 2_000_000_000));
const sessionKey = `agent:main:telegram:direct:${userId}`;
const environment = { PATH: process.env.PATH ?? '', HOME: root, HERMES_HOME: path.join(root, 'hermes'), TERMINAL_SANDBOX_DIR: path.join(root, 'sandboxes') };
await mkdir(environment.HERMES_HOME, { recursive: true });
await writeFile(path.join(environment.HERMES_HOME, 'config.yaml'), `terminal:\n  docker_image: ${image}\n  docker_network: false\n  lifetime_seconds: 0\n`);

const summary = (values: number[]) => {
  const { runs, medianMs, p90Ms, minMs } = summaryOf(values);
  return { runs, medianMs: round(medianMs, 2), p90Ms: round(p90Ms, 2), minMs: round(minMs, 2) };
};

/** Spawns `file args` and resolves with its wall time in ms; rejects on a non-zero exit. */
function timedRun(file: string, args: string[]): Promise<number> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    execFile(file, args, { env: environment }, (error, stdout, stderr) => {
      if (error) reject(new Error(`${file} ${args.join(' ')} failed (exit ${String(error.code)}): ${(stderr + stdout).trim() || error.message}`));
      else resolve(performance.now() - started);
    });
  });
}

const hasPerl = findPerl() !== undefined;

/** Spawns `file args` and resolves with its exit status and output, whatever the status. */
function answer(file: string, args: string[]): Promise<{ status: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(file, args, { env: environment }, (error, stdout, stderr) => resolve({ status: error ? Number(error.code) : 0, stdout, stderr }));
  });
}

/** Runs of one side: times of the runs that succeeded, and the failures (another test on a shared engine may disturb a container). */
interface Side {
  times: number[];
  failures: string[];
}
const side = (): Side => ({ times: [], failures: [] });
async function measure(into: Side, file: string, args: string[]): Promise<void> {
  try {
    into.times.push(await timedRun(file, args));
  } catch (error) {
    into.failures.push((error as Error).message);
  }
}
async function warmUp(file: string, args: string[]): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await timedRun(file, args);
      return;
    } catch (error) {
      if (attempt === 3) throw error;
    }
  }
}

const server = spawn(process.execPath, [cli, 'serve', '--socket', socket], { env: environment, stdio: ['ignore', 'pipe', 'inherit'] });
const exited = new Promise<void>((resolve) => server.once('exit', () => resolve()));
const results: Record<string, unknown> = { date: new Date().toISOString(), image, node: process.version };
try {
  await new Promise<void>((resolve, reject) => {
    let out = '';
    server.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes('listening on')) resolve();
    });
    void exited.then(() => reject(new Error('berth serve exited before listening')));
  });
  const client = [cli, 'exec', '--socket', socket, '--session-key', sessionKey, '--', 'true'];
  // The first command creates the container and the shell session; not measured.
  await warmUp(process.execPath, client);
  const listing = await new Promise<string>((resolve, reject) =>
    execFile(process.execPath, [cli, 'ls', '--json'], { env: environment }, (error, stdout) => (error ? reject(error) : resolve(stdout))),
  );
  const container = (JSON.parse(listing) as Array<{ scope: string; containerId: string }>).find(
    (entry) => entry.scope === `user:telegram:${userId}`,
  )?.containerId;
  if (!container) throw new Error(`berth ls did not list user:telegram:${userId}`);
  await warmUp('docker', ['exec', container, 'true']);
  const perlArgv = (command: string) => sandboxCommandArgv({ socket, sessionKey, command, client: 'perl' });
  if (hasPerl) {
    // The Perl client must answer as the Node client does before its time means anything.
    const probe = `printf 'tab\\there \\\\ "quoted" \\303\\251\\360\\237\\231\\202\\n'; echo to-stderr >&2; exit 3`;
    const real = await answer(process.execPath, [cli, 'exec', '--socket', socket, '--session-key', sessionKey, '--', probe]);
    const [perl, ...perlArgs] = perlArgv(probe);
    const viaPerl = await answer(perl!, perlArgs);
    if (JSON.stringify(real) !== JSON.stringify(viaPerl))
      throw new Error(`the Perl client answered ${JSON.stringify(viaPerl)}, the Node client ${JSON.stringify(real)}`);
    // A request file is read once: every spawn gets an argv of its own, as a host builds one per command.
    for (let attempt = 1; ; attempt++) {
      const [file, ...args] = perlArgv('true');
      try {
        await timedRun(file!, args);
        break;
      } catch (error) {
        if (attempt === 3) throw error;
      }
    }
  }

  const sides = { berthSocketClient: side(), dockerExecCli: side(), nodeStartup: side(), berthExecWithoutServer: side(), perlSocketClient: side() };
  for (let run = 0; run < runs; run++) {
    const [perl, ...perlTrue] = hasPerl ? perlArgv('true') : [];
    await measure(sides.berthSocketClient, process.execPath, client);
    await measure(sides.dockerExecCli, 'docker', ['exec', container, 'true']);
    await measure(sides.nodeStartup, process.execPath, ['-e', '0']);
    if (hasPerl) await measure(sides.perlSocketClient, perl!, perlTrue);
  }
  for (let run = 0; run < directRuns; run++)
    await measure(sides.berthExecWithoutServer, process.execPath, [cli, 'exec', '--platform', 'telegram', '--user', userId, '--', 'true']);

  results.engine = 'docker';
  for (const [name, measured] of Object.entries(sides)) {
    results[name] = {
      ...summary(measured.times),
      failures: measured.failures.length,
      ...(measured.failures.length > 0 ? { firstFailure: measured.failures[0] } : {}),
    };
  }
  results.socketClientToDockerExec = round(median(sides.berthSocketClient.times) / median(sides.dockerExecCli.times), 2);
  results.nodeStartupToDockerExec = round(median(sides.nodeStartup.times) / median(sides.dockerExecCli.times), 2);
  if (hasPerl) results.perlSocketClientToDockerExec = round(median(sides.perlSocketClient.times) / median(sides.dockerExecCli.times), 2);
} finally {
  await timedRun(process.execPath, [cli, 'rm', '--platform', 'telegram', '--user', userId, '--purge']).catch((error: Error) => console.error(error.message));
  server.kill('SIGTERM');
  await exited;
  await releaseDisksUnder(root);
  await rm(root, { recursive: true, force: true });
}

const rows: Array<[string, { medianMs: number; p90Ms: number; minMs: number; runs: number; failures: number }]> = [
  ['spawned berth exec --socket … -- true (Node client)', results.berthSocketClient as never],
  ...(hasPerl ? [['spawned Perl client (berth-socket-client.pl) -- true', results.perlSocketClient as never] as [string, never]] : []),
  ['spawned docker exec CONTAINER true', results.dockerExecCli as never],
  ['spawned node -e 0 (floor of a Node client)', results.nodeStartup as never],
  ['spawned berth exec (no server) -- true', results.berthExecWithoutServer as never],
];
const width = Math.max(...rows.map(([label]) => label.length));
console.log(`\nberth exec --socket vs docker exec (docker, ${image}, same container)\n`);
console.log(`${'what'.padEnd(width)}  ${'runs'.padStart(5)}  ${'median'.padStart(9)}  ${'p90'.padStart(9)}  ${'min'.padStart(9)}  failed`);
for (const [label, row] of rows) {
  console.log(
    `${label.padEnd(width)}  ${String(row.runs).padStart(5)}  ${`${row.medianMs} ms`.padStart(9)}  ` +
      `${`${row.p90Ms} ms`.padStart(9)}  ${`${row.minMs} ms`.padStart(9)}  ${row.failures}`,
  );
}
console.log(`\nNode socket client / docker exec (medians): ${results.socketClientToDockerExec as number}`);
console.log(`node -e 0 / docker exec (medians): ${results.nodeStartupToDockerExec as number}`);
if (hasPerl) console.log(`Perl socket client / docker exec (medians): ${results.perlSocketClientToDockerExec as number}`);
const outputDir = path.join(import.meta.dirname, '..', 'bench-results');
await mkdir(outputDir, { recursive: true });
const file = path.join(outputDir, `socket-exec-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
await writeFile(file, `${JSON.stringify(results, null, 2)}\n`);
console.log(`written to ${path.relative(process.cwd(), file)}`);
