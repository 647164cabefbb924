import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createPlatformRegistry, createSandboxResolver, parseTerminalConfig, type SandboxRequest } from '@berth/core';
import { afterEach, describe, expect, it } from 'vitest';
import { createSandboxRuntime, type SandboxRuntime } from '../create-sandbox-runtime.js';
import { sandboxSettings } from '../sandbox-settings.js';
import { createFakeDriver } from '../testing/fake-driver.js';
import { createRuntimeMetrics, type RuntimeMetrics } from './runtime-metrics.js';

// The runtime's metrics as the runtime feeds them, over the fake engine (real host shells): the
// counters move where the audit trail records, the gauges read the runtime's state at scrape
// time, and no label carries a user id unless the operator opts in.

const SECRET = 'ghp_metrics_secret_value_41';
const USER_ID = '987654321';
const folders: string[] = [];
const runtimes: SandboxRuntime[] = [];
afterEach(async () => {
  for (const runtime of runtimes.splice(0)) await runtime.close();
  for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true });
});

function setUp(settings: Record<string, unknown> = {}) {
  const sandboxDir = mkdtempSync(path.join(tmpdir(), 'berth-metrics-runtime-'));
  folders.push(sandboxDir);
  const config = parseTerminalConfig({ sandbox_dir: sandboxDir, lifetime_seconds: 0, container_disk: 0, ...settings });
  const resolver = createSandboxResolver({
    config,
    registry: createPlatformRegistry(),
    environment: { [`HERMES_USER_TELEGRAM_${USER_ID}_GITHUB_TOKEN`]: SECRET },
  });
  const request = (userId: string): SandboxRequest => resolver.resolve({ session: { platform: 'telegram', userId } });
  const metrics = createRuntimeMetrics();
  const runtime = createSandboxRuntime({
    driver: createFakeDriver(),
    settings: sandboxSettings(config),
    reapIntervalMs: 0,
    firstLaunchWaitMs: 0,
    observer: metrics.observer,
  });
  runtimes.push(runtime);
  return { runtime, request, metrics };
}

/** One sample's value in the text format, by its name and exact label set (`undefined`: no such sample). */
async function sample(metrics: RuntimeMetrics, series: string): Promise<number | undefined> {
  const line = (await metrics.text()).split('\n').find((candidate) => candidate.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

describe('the metrics of a runtime', () => {
  it('counts commands by outcome, their latency, and refusals by error code', async () => {
    const { runtime, request, metrics } = setUp({ user_commands_per_minute: 2 });
    expect(await sample(metrics, 'berth_exec_total{outcome="ran"}')).toBe(0);
    await runtime.doExec(request(USER_ID), { command: 'true' });
    await runtime.doExec(request(USER_ID), { command: 'exit 3' });
    await expect(runtime.doExec(request(USER_ID), { command: 'true' })).rejects.toMatchObject({ code: 'USER_RATE_LIMIT' });
    expect(await sample(metrics, 'berth_exec_total{outcome="ran"}')).toBe(2);
    expect(await sample(metrics, 'berth_exec_total{outcome="refused"}')).toBe(1);
    expect(await sample(metrics, 'berth_exec_refused_total{reason="USER_RATE_LIMIT"}')).toBe(1);
    expect(await sample(metrics, 'berth_exec_duration_seconds_count{outcome="ran"}')).toBe(2);
    expect(await sample(metrics, 'berth_exec_duration_seconds_bucket{le="+Inf",outcome="ran"}')).toBe(2);
  });

  it('counts sandbox events where the audit trail records them, and shows sandboxes by state at scrape time', async () => {
    const { runtime, request, metrics } = setUp({ docker_max_running: 3, docker_max_sandboxes: 10 });
    const target = request(USER_ID);
    await runtime.doExec(target, { command: 'true' });
    expect(await sample(metrics, 'berth_sandbox_events_total{event="created"}')).toBe(1);
    expect(await sample(metrics, 'berth_sandboxes{state="running"}')).toBe(1);
    expect(await sample(metrics, 'berth_capacity_used{resource="running_sandboxes"}')).toBe(1);
    expect(await sample(metrics, 'berth_capacity_limit{resource="running_sandboxes"}')).toBe(3);
    expect(await sample(metrics, 'berth_capacity_limit{resource="sandboxes"}')).toBe(10);
    const name = runtime.containerName(target);
    expect(await sample(metrics, `berth_sandbox_info{sandbox="${name}",scope="user",state="running"}`)).toBe(1);

    await runtime.stop(target.scope.key);
    // Past the snapshot's second: the next scrape reads the runtime again.
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    expect(await sample(metrics, 'berth_sandbox_events_total{event="stopped"}')).toBe(1);
    expect(await sample(metrics, 'berth_sandboxes{state="running"}')).toBe(0);
    expect(await sample(metrics, 'berth_sandboxes{state="stopped"}')).toBe(1);
    await runtime.doExec(target, { command: 'true' });
    expect(await sample(metrics, 'berth_sandbox_events_total{event="started"}')).toBe(1);
  });

  it('names no user and no secret in any label unless metrics_real_user_ids is set', async () => {
    const { runtime, request, metrics } = setUp();
    await runtime.doExec(request(USER_ID), { command: `echo ${SECRET}` });
    const text = await metrics.text();
    expect(text).not.toContain(USER_ID);
    expect(text).not.toContain(SECRET);
    expect(text).toContain(`sandbox="${runtime.containerName(request(USER_ID))}"`);

    const opted = setUp({ metrics_real_user_ids: true });
    await opted.runtime.doExec(opted.request(USER_ID), { command: `echo ${SECRET}` });
    const optedText = await opted.metrics.text();
    expect(optedText).toContain(`user="telegram:${USER_ID}"`);
    expect(optedText).not.toContain(SECRET);
  });

  it('keeps two runtimes in one process apart, each in a registry of its own', async () => {
    const first = setUp();
    const second = setUp();
    await first.runtime.doExec(first.request(USER_ID), { command: 'true' });
    expect(await sample(first.metrics, 'berth_exec_total{outcome="ran"}')).toBe(1);
    expect(await sample(second.metrics, 'berth_exec_total{outcome="ran"}')).toBe(0);
  });
});
