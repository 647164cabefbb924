/**
 * An exec through OpenClaw with Berth, next to the same exec through OpenClaw's own Docker
 * sandbox backend, in one gateway on the same machine and image. Two Telegram users are bound
 * to two agents: one sandboxed by `berth`, one by OpenClaw's `docker` backend. Each message
 * makes the fake model call the exec tool BENCH_CALLS times with `true`; a call's time is from
 * the model's tool-call answer to the next model request carrying its result, so it is the
 * whole exec as OpenClaw runs it (tool dispatch, the spawned process, the sandbox). Messages
 * alternate between the backends so both see the same load. Prints a table and writes JSON to
 * bench-results/openclaw-exec.json. Run with `pnpm --filter @berth/openclaw bench` (through
 * scripts/run-e2e.sh, offline, after a build).
 *
 * BENCH_ROUNDS (6) messages per backend of BENCH_CALLS (20) execs each, after one warm-up
 * message per backend that creates its sandbox.
 */
import { randomInt } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { assertOffline } from '../src/harness/assert-offline.js';
import { startBlackholeProxy } from '../src/harness/blackhole-proxy.js';
import { fakeModelProviders, scriptedMessage, startFakeModel } from '../src/harness/fake-model.js';
import { startFakeTelegram, type IncomingMessage } from '../src/harness/fake-telegram.js';
import { createGatewayHome, freePort, locateOpenClaw, locatePluginArchive, runOpenClaw, startGateway, updateConfig } from '../src/harness/openclaw-gateway.js';
import { assertEngineAnswers, docker } from '../src/harness/sandbox-engine.js';
import { releaseDisksUnder } from '@berth/gateway-plugin';

const IMAGE = process.env.BERTH_TEST_IMAGE ?? 'localhost/berth-busybox:latest';
const rounds = Number(process.env.BENCH_ROUNDS ?? 6);
const calls = Number(process.env.BENCH_CALLS ?? 20);
const REPLY_TIMEOUT_MS = 150_000;

const round = (value: number): number => Math.round(value * 10) / 10;
const sorted = (values: number[]): number[] => [...values].sort((a, b) => a - b);
const median = (values: number[]): number => {
  const ordered = sorted(values);
  const middle = Math.floor(ordered.length / 2);
  return ordered.length % 2 ? ordered[middle]! : (ordered[middle - 1]! + ordered[middle]!) / 2;
};
const percentile = (values: number[], p: number): number => sorted(values)[Math.min(values.length - 1, Math.floor((values.length * p) / 100))]!;
const summary = (values: number[]) => ({
  runs: values.length,
  medianMs: round(median(values)),
  p90Ms: round(percentile(values, 90)),
  minMs: round(Math.min(...values)),
});

await assertOffline();
await assertEngineAnswers(IMAGE);
const install = locateOpenClaw('2026.9.6');
const archive = locatePluginArchive();
const root = mkdtempSync(path.join(os.tmpdir(), 'berth-oc-bench-'));
const users = { berth: randomInt(100_000_000, 2_000_000_000), docker: randomInt(100_000_000, 2_000_000_000) };
const [proxy, telegram, model] = await Promise.all([startBlackholeProxy(), startFakeTelegram(), startFakeModel()]);
// A machine built from a Docker image may carry /.dockerenv without running in a container; see hide-dockerenv.mjs.
const inContainer = /docker[-/][a-f0-9]{64}/.test(existsSync('/proc/self/cgroup') ? readFileSync('/proc/self/cgroup', 'utf8') : '');
const hideDockerenv = existsSync('/.dockerenv') && !inContainer;
if (hideDockerenv)
  console.log(
    "note: /.dockerenv exists but this is no container; the gateway runs with it hidden (bench/hide-dockerenv.mjs) so that OpenClaw's docker backend starts",
  );
const home = createGatewayHome(root, {
  proxyUrl: proxy.url,
  ...(hideDockerenv ? { extra: { NODE_OPTIONS: `--import=${path.join(import.meta.dirname, 'hide-dockerenv.mjs')}` } } : {}),
});
let gateway: ReturnType<typeof startGateway> | undefined;

/** OpenClaw's own docker sandboxes of this run (its labels), removed at the end. */
async function openClawContainers(): Promise<string[]> {
  const listed = await docker.listContainers({ all: true });
  return listed.filter((container) => container.Mounts.some((mount) => mount.Source?.startsWith(`${root}/`))).map((container) => container.Id);
}

try {
  updateConfig(home, {
    gateway: { mode: 'local', bind: 'loopback', port: await freePort(), auth: { mode: 'none' } },
    logging: { file: home.logFile, level: 'info' },
  });
  await runOpenClaw(install, home, ['plugins', 'install', archive, '--force', '--accept-capabilities']);
  updateConfig(home, {
    update: { checkOnStart: false },
    discovery: { mdns: { mode: 'off' } },
    session: { dmScope: 'per-channel-peer' },
    bindings: [
      { agentId: 'main', match: { channel: 'telegram', peer: { kind: 'direct', id: String(users.berth) } } },
      { agentId: 'dockerbench', match: { channel: 'telegram', peer: { kind: 'direct', id: String(users.docker) } } },
    ],
    channels: { telegram: { enabled: true, botToken: telegram.botToken, apiRoot: telegram.apiRoot, dmPolicy: 'open', allowFrom: ['*'] } },
    models: fakeModelProviders(model, { contextWindow: 2_000_000 }),
    agents: {
      defaults: { model: { primary: `fake/${model.modelId}` }, sandbox: { mode: 'all', backend: 'berth', scope: 'session', workspaceAccess: 'none' } },
      entries: {
        main: {},
        // OpenClaw's own backend, same image, its default hardening (no network, read-only root).
        dockerbench: { sandbox: { backend: 'docker', docker: { image: IMAGE } } },
      },
    },
    tools: { toolSearch: false },
    // A message that arrives while the chat's previous run is still finishing runs after it,
    // instead of being steered into that run (OpenClaw's default queue mode).
    messages: { queue: { mode: 'followup' } },
    plugins: {
      entries: {
        berth: {
          enabled: true,
          config: {
            terminal: { docker_image: IMAGE, sandbox_dir: path.join(root, 'sandboxes'), docker_network: false, lifetime_seconds: 0 },
            socket: path.join(root, 'run', 'berth.sock'),
          },
        },
      },
    },
  });
  gateway = startGateway(install, home);
  await gateway.waitForOutput(/\[telegram\][^\n]*starting provider/, 150_000);
  while ((telegram.calls().getUpdates ?? 0) === 0) await new Promise((resolve) => setTimeout(resolve, 200));

  const send = async (backend: 'berth' | 'docker', label: string, count: number): Promise<void> => {
    // OpenClaw is still closing a chat's previous run for a moment after its reply; a message
    // that arrives then can be lost instead of queued.
    await new Promise((resolve) => setTimeout(resolve, 3000));
    const id = users[backend];
    const message: IncomingMessage = {
      from: { id, first_name: backend },
      chat: { id, type: 'private', first_name: backend },
      text: scriptedMessage(label, [{ name: 'exec', arguments: { command: `true ${label}-{n}` } }], { repeat: count }),
    };
    telegram.deliver(message);
    const reply = await telegram
      .waitForMessage(
        (sent) => sent.chatId === String(id) && (sent.text.startsWith(`RESULT ${label}:`) || /went wrong|error/i.test(sent.text)),
        REPLY_TIMEOUT_MS,
        `answering ${label}`,
      )
      .catch((error: Error) => {
        throw new Error(`${error.message}\nthe gateway's last lines:\n${gateway!.output().split('\n').slice(-15).join('\n')}`);
      });
    if (!reply.text.startsWith('RESULT')) {
      const errors = gateway!
        .output()
        .split('\n')
        .filter((line) => /error|failed/i.test(line))
        .slice(-4)
        .join('\n');
      throw new Error(`the ${backend} backend failed the exec: ${reply.text}\n${errors}`);
    }
  };

  const loadAtStart = round(os.loadavg()[0]!);
  // Warm-up: each backend creates its sandbox (and Berth its shell) once.
  await send('berth', 'berth-warm', 1);
  await send('docker', 'docker-warm', 1);
  for (let index = 0; index < rounds; index++) {
    const order: Array<'berth' | 'docker'> = index % 2 === 0 ? ['berth', 'docker'] : ['docker', 'berth'];
    for (const backend of order) await send(backend, `${backend}-${index}`, calls);
  }

  const times = (backend: string): number[] =>
    model
      .timings()
      .filter((timing) => timing.label.startsWith(`${backend}-`) && !timing.label.endsWith('-warm'))
      .map((timing) => timing.ms);
  const results = {
    date: new Date().toISOString(),
    openclaw: install.version,
    image: IMAGE,
    node: process.version,
    dockerenvHidden: hideDockerenv,
    // The CI machines are shared: the load says how much the figures can be trusted.
    machine: {
      cpus: os.cpus().length,
      memoryGb: Math.round(os.totalmem() / 1024 ** 3),
      loadAverageAtStart: loadAtStart,
      loadAverageAtEnd: round(os.loadavg()[0]!),
    },
    method: "exec tool calls of `true` through a real OpenClaw gateway; each from the model's tool call to the model request carrying its result",
    berth: summary(times('berth')),
    openclawDocker: summary(times('docker')),
  };
  const ratio = results.berth.medianMs / results.openclawDocker.medianMs;
  const rows = [
    ['backend', 'runs', 'median ms', 'p90 ms', 'min ms'],
    ['berth (socket client, warm shell)', results.berth.runs, results.berth.medianMs, results.berth.p90Ms, results.berth.minMs],
    ["OpenClaw's docker backend", results.openclawDocker.runs, results.openclawDocker.medianMs, results.openclawDocker.p90Ms, results.openclawDocker.minMs],
  ].map((row) => row.map(String));
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)));
  for (const row of rows) console.log(row.map((cell, column) => cell.padEnd(widths[column]!)).join('  '));
  console.log(
    `berth / docker median: ${Math.round(ratio * 100) / 100} (load average ${loadAtStart} ` +
      `→ ${results.machine.loadAverageAtEnd} on ${results.machine.cpus} cores)`,
  );
  const out = path.join(import.meta.dirname, '..', 'bench-results');
  mkdirSync(out, { recursive: true });
  writeFileSync(path.join(out, 'openclaw-exec.json'), `${JSON.stringify({ ...results, ratio: Math.round(ratio * 100) / 100 }, null, 2)}\n`);
  console.log(`written to ${path.join(out, 'openclaw-exec.json')}`);
} finally {
  await gateway?.stop();
  await Promise.all([proxy.close(), telegram.close(), model.close()]);
  for (const id of await openClawContainers())
    await docker
      .getContainer(id)
      .remove({ force: true, v: true })
      .catch(() => {});
  await releaseDisksUnder(root);
  rmSync(root, { recursive: true, force: true });
}
