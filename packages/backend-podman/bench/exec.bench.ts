/*
 * Warm exec of `true` on Podman, side by side: through Berth (persistent shell session), one
 * `podman exec` through the CLI, and one exec through the Docker-compatible API (dockerode).
 * Prints a table and writes bench-results/exec-<time>.json. Target: Berth <= 1/10 of the API exec.
 * Environment: BERTH_BENCH_RUNS (default 200), BERTH_PODMAN_SOCKET, BERTH_TEST_IMAGE.
 */
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { createPlatformRegistry, createSandboxResolver, parseTerminalConfig } from '@berth/core';
import Dockerode from 'dockerode';
import { createPodmanBackend } from '../src/index.js';
import { releaseDisksUnder } from '@berth/sandbox-runtime';

const runs = Number(process.env.BERTH_BENCH_RUNS ?? 200);
const socketPath = process.env.BERTH_PODMAN_SOCKET ?? '/run/podman/podman.sock';
const image = process.env.BERTH_TEST_IMAGE ?? 'localhost/berth-busybox:latest';
const run = promisify(execFile);

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
};
const percentile = (values: number[], p: number): number =>
  [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor((values.length * p) / 100))]!;

async function time(label: string, once: () => Promise<void>): Promise<{ label: string; samples: number[] }> {
  for (let warm = 0; warm < 5; warm++) await once();
  const samples: number[] = [];
  for (let index = 0; index < runs; index++) {
    const started = performance.now();
    await once();
    samples.push(performance.now() - started);
  }
  return { label, samples };
}

async function apiExec(docker: Dockerode, id: string): Promise<void> {
  const exec = await docker.getContainer(id).exec({ Cmd: ['true'], AttachStdout: true, AttachStderr: true });
  const stream = await exec.start({ hijack: true, stdin: false });
  await new Promise<void>((resolve) => {
    stream.on('end', resolve);
    stream.resume();
  });
  const info = await exec.inspect();
  if (info.ExitCode !== 0) throw new Error(`exec exited ${info.ExitCode}`);
}

async function main(): Promise<void> {
  const sandboxDir = await mkdtemp(path.join(tmpdir(), 'berth-podman-bench-'));
  const config = parseTerminalConfig({ docker_image: image, sandbox_dir: sandboxDir, docker_network: false, lifetime_seconds: 0 });
  const backend = createPodmanBackend({ settings: config, socketPath, namePrefix: 'berth-bench-', labels: { 'dev.berth.test': 'bench' } });
  const request = createSandboxResolver({ config, registry: createPlatformRegistry(), environment: {} }).resolve({
    session: { platform: 'telegram', userId: '4242' },
  });
  const docker = new Dockerode({ socketPath });
  try {
    const id = await backend.doAcquire(request);
    const host = await backend.podmanHost();
    const results = [
      await time('Berth doExec (persistent shell)', async () => {
        const result = await backend.doExec(request, { command: 'true' });
        if (result.exitCode !== 0) throw new Error(`berth exited ${result.exitCode}`);
      }),
      await time('exec via compatible API (dockerode)', () => apiExec(docker, id)),
      await time('podman exec (CLI)', async () => {
        await run('podman', ['--url', `unix://${socketPath}`, 'exec', id, 'true']);
      }),
    ];
    const api = median(results[1]!.samples);
    const rows = results.map(({ label, samples }) => ({
      label,
      runs: samples.length,
      medianMs: median(samples),
      p90Ms: percentile(samples, 90),
      ratioToApi: median(samples) / api,
    }));
    console.log(`\nwarm exec of \`true\` on Podman ${host.version} (${host.rootless ? 'rootless' : 'rootful'}, ${socketPath}), ${runs} runs each\n`);
    console.log(`${'path'.padEnd(38)} ${'median ms'.padStart(10)} ${'p90 ms'.padStart(9)} ${'vs API'.padStart(8)}`);
    for (const row of rows)
      console.log(
        `${row.label.padEnd(38)} ${row.medianMs.toFixed(3).padStart(10)} ${row.p90Ms.toFixed(3).padStart(9)} ${row.ratioToApi.toFixed(4).padStart(8)}`,
      );
    const berth = rows[0]!;
    const pass = berth.ratioToApi <= 0.1;
    console.log(`\ntarget Berth <= 1/10 of the API exec: ${pass ? 'met' : 'MISSED'} (${(1 / berth.ratioToApi).toFixed(0)}x faster)`);
    const folder = path.resolve(import.meta.dirname, '..', 'bench-results');
    await mkdir(folder, { recursive: true });
    const file = path.join(folder, `exec-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
    await writeFile(
      file,
      `${JSON.stringify({ engine: 'podman', version: host.version, rootless: host.rootless, runs, rows, target: 0.1, met: pass }, null, 2)}\n`,
    );
    console.log(`written: ${path.relative(process.cwd(), file)}`);
    if (!pass) process.exitCode = 1;
  } finally {
    await backend.remove(request.scope.key, { purge: true, paths: request.paths }).catch(() => undefined);
    await backend.close();
    await releaseDisksUnder(sandboxDir);
    await rm(sandboxDir, { recursive: true, force: true });
  }
}

await main();
