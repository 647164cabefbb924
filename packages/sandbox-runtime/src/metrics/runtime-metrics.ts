import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { AUDIT_EVENTS, AUDIT_OUTCOMES } from '../audit/audit-trail.js';
import { readSandboxesCpuSeconds } from '../lifecycle/cpu-usage.js';
import { readHoldings, type SandboxHolding } from '../lifecycle/fair-share.js';
import type { DiskUsage } from '../lifecycle/inventory.js';
import { readSandboxesNetwork } from '../lifecycle/sandbox-meters.js';
import { readBoundPressure, type BoundPressure } from '../lifecycle/shared-bound.js';
import type { RuntimeObserver, RuntimeView } from '../runtime-observer.js';

/** Upper bounds, in seconds, of the command latency histogram's buckets: a `true` to a long build. */
export const EXEC_DURATION_BUCKETS = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 180, 600] as const;

/** How long one reading of the runtime's state serves the gauges: one scrape reads it once. */
const SNAPSHOT_MS = 1_000;
const MB = 2 ** 20;

/** The metrics of one runtime, in a registry of their own (docs/observability.md). */
export interface RuntimeMetrics {
  /** The registry the metrics are in: never prom-client's global one, so two runtimes in one process never collide. */
  readonly registry: Registry;
  /** What the runtime is given as its `observer`: counts commands and sandbox events where the audit trail records them. */
  readonly observer: RuntimeObserver;
  /** The metrics in the Prometheus text format. */
  text(): Promise<string>;
  /** The text format's content type, for an HTTP answer. */
  readonly contentType: string;
}

/** One sandbox as the gauges show it. */
interface SandboxReading {
  readonly name: string;
  readonly state: 'running' | 'stopped';
  readonly scope: 'user' | 'task';
  /** `platform:id`, only with `metrics_real_user_ids`. */
  readonly user?: string;
  readonly holding?: SandboxHolding;
  /** CPU seconds its cgroup used since the sandbox started. */
  readonly cpuSeconds?: number;
  /** Its own disk (`container_disk`), running or not. */
  readonly disk?: DiskUsage;
  /** Bytes its network namespace received and sent (every interface but `lo`), while it runs. */
  readonly network?: { readonly receivedBytes: number; readonly sentBytes: number };
}

/** What one scrape reads: memory, one cached cap, the bound's files and the disks' sizes (no engine call). */
interface Snapshot {
  readonly sandboxes: readonly SandboxReading[];
  readonly runningCap: number;
  readonly maxSandboxes: number;
  readonly pressure?: BoundPressure;
}

/**
 * The runtime's metrics: commands by outcome and their latency, refusals and failures by error
 * code, sandbox events, and at scrape time the sandboxes by state, capacity in use against its
 * limits, each sandbox's memory, pids, CPU time and network bytes under the shared bound, and its
 * own disk (to the MB). A label names a sandbox by
 * its opaque engine name; a user appears only on `berth_sandbox_info`, and only with
 * `metrics_real_user_ids`.
 */
export function createRuntimeMetrics(options: { readonly registry?: Registry; readonly procRoot?: string } = {}): RuntimeMetrics {
  const registry = options.registry ?? new Registry();
  const registers = [registry];
  let view: RuntimeView | undefined;

  const execs = new Counter({ name: 'berth_exec_total', help: 'Commands, by how they ended', labelNames: ['outcome'], registers });
  const latency = new Histogram({
    name: 'berth_exec_duration_seconds',
    help: 'How long commands took, queue wait included, by how they ended',
    labelNames: ['outcome'],
    buckets: [...EXEC_DURATION_BUCKETS],
    registers,
  });
  const refused = new Counter({
    name: 'berth_exec_refused_total',
    help: 'Commands refused before they reached the engine, by error code',
    labelNames: ['reason'],
    registers,
  });
  const failed = new Counter({
    name: 'berth_exec_failed_total',
    help: 'Commands that failed in Berth or the engine, by error code',
    labelNames: ['reason'],
    registers,
  });
  const outputBytes = new Counter({
    name: 'berth_exec_output_bytes_total',
    help: 'Bytes commands wrote to stdout and stderr, before the output limit',
    registers,
  });
  const events = new Counter({
    name: 'berth_sandbox_events_total',
    help: 'Sandbox lifecycle events (created, recreated, stopped, …)',
    labelNames: ['event'],
    registers,
  });
  for (const outcome of AUDIT_OUTCOMES) {
    execs.inc({ outcome }, 0);
    latency.zero({ outcome });
  }
  for (const event of AUDIT_EVENTS) events.inc({ event }, 0);

  let last: { at: number; snapshot: Promise<Snapshot> } | undefined;
  const snapshot = (): Promise<Snapshot> | undefined => {
    if (!view) return undefined;
    if (last && Date.now() - last.at < SNAPSHOT_MS) return last.snapshot;
    last = { at: Date.now(), snapshot: readSnapshot(view, options.procRoot) };
    return last.snapshot;
  };
  /** A gauge set afresh from each scrape's snapshot. */
  const gauge = (name: string, help: string, labelNames: string[], fill: (gauge: Gauge, read: Snapshot) => void): void => {
    new Gauge({
      name,
      help,
      labelNames,
      registers,
      async collect() {
        const read = await snapshot();
        this.reset();
        if (read) fill(this, read);
      },
    });
  };

  gauge('berth_sandboxes', 'Sandboxes this process knows, by state', ['state'], (metric, read) => {
    for (const state of ['running', 'stopped'] as const) metric.set({ state }, read.sandboxes.filter((sandbox) => sandbox.state === state).length);
  });
  gauge(
    'berth_sandbox_info',
    'One per sandbox: its opaque name, scope and state (its user only with metrics_real_user_ids)',
    ['sandbox', 'scope', 'state', 'user'],
    (metric, read) => {
      for (const sandbox of read.sandboxes) {
        metric.set({ sandbox: sandbox.name, scope: sandbox.scope, state: sandbox.state, ...(sandbox.user === undefined ? {} : { user: sandbox.user }) }, 1);
      }
    },
  );
  gauge(
    'berth_capacity_used',
    'Capacity in use, by resource (running_sandboxes, sandboxes, memory_bytes, pids of the shared bound)',
    ['resource'],
    (metric, read) => {
      metric.set({ resource: 'running_sandboxes' }, read.sandboxes.filter((sandbox) => sandbox.state === 'running').length);
      metric.set({ resource: 'sandboxes' }, read.sandboxes.length);
      if (read.pressure) {
        metric.set({ resource: 'memory_bytes' }, read.pressure.memoryBytes);
        metric.set({ resource: 'pids' }, read.pressure.pids);
      }
    },
  );
  gauge('berth_capacity_limit', 'Limits of the capacity in use, by resource; a resource without a limit has no sample', ['resource'], (metric, read) => {
    if (read.runningCap > 0) metric.set({ resource: 'running_sandboxes' }, read.runningCap);
    if (read.maxSandboxes > 0) metric.set({ resource: 'sandboxes' }, read.maxSandboxes);
    if (read.pressure && Number.isFinite(read.pressure.memoryLimit)) metric.set({ resource: 'memory_bytes' }, read.pressure.memoryLimit);
    if (read.pressure && Number.isFinite(read.pressure.pidsLimit)) metric.set({ resource: 'pids' }, read.pressure.pidsLimit);
  });
  gauge(
    'berth_sandbox_memory_bytes',
    "A running sandbox's memory under the shared bound (page cache it could drop not counted)",
    ['sandbox'],
    (metric, read) => {
      for (const sandbox of read.sandboxes) if (sandbox.holding) metric.set({ sandbox: sandbox.name }, sandbox.holding.memoryBytes);
    },
  );
  gauge('berth_sandbox_pids', "A running sandbox's processes under the shared bound", ['sandbox'], (metric, read) => {
    for (const sandbox of read.sandboxes) if (sandbox.holding) metric.set({ sandbox: sandbox.name }, sandbox.holding.pids);
  });

  gauge('berth_sandbox_disk_used_bytes', "A sandbox's own disk in use (container_disk), running or stopped", ['sandbox'], (metric, read) => {
    for (const sandbox of read.sandboxes) if (sandbox.disk) metric.set({ sandbox: sandbox.name }, sandbox.disk.usedMb * MB);
  });
  gauge('berth_sandbox_disk_limit_bytes', "A sandbox's own disk's size (container_disk)", ['sandbox'], (metric, read) => {
    for (const sandbox of read.sandboxes) if (sandbox.disk) metric.set({ sandbox: sandbox.name }, sandbox.disk.limitMb * MB);
  });
  /** A counter the kernel keeps, set afresh from each scrape's snapshot. */
  const counter = (name: string, help: string, value: (sandbox: SandboxReading) => number | undefined): void => {
    new Counter({
      name,
      help,
      labelNames: ['sandbox'],
      registers,
      async collect() {
        const read = await snapshot();
        this.reset();
        for (const sandbox of read?.sandboxes ?? []) {
          const counted = value(sandbox);
          if (counted !== undefined) this.inc({ sandbox: sandbox.name }, counted);
        }
      },
    });
  };
  counter(
    'berth_sandbox_cpu_seconds_total',
    "A running sandbox's CPU time since it started, from its cgroup under the shared bound",
    (sandbox) => sandbox.cpuSeconds,
  );
  counter(
    'berth_sandbox_network_received_bytes_total',
    "Bytes a running sandbox's network namespace received since it started (every interface but lo)",
    (sandbox) => sandbox.network?.receivedBytes,
  );
  counter(
    'berth_sandbox_network_sent_bytes_total',
    "Bytes a running sandbox's network namespace sent since it started (every interface but lo)",
    (sandbox) => sandbox.network?.sentBytes,
  );

  const observer: RuntimeObserver = {
    command(_entry, _request, command) {
      execs.inc({ outcome: command.outcome });
      latency.observe({ outcome: command.outcome }, command.durationMs / 1000);
      if (command.outcome === 'refused') refused.inc({ reason: command.reason ?? 'INTERNAL' });
      if (command.outcome === 'failed') failed.inc({ reason: command.reason ?? 'INTERNAL' });
      if (command.bytesOut !== undefined) outputBytes.inc(command.bytesOut);
    },
    event(_entry, event) {
      events.inc({ event });
    },
    attach(attached) {
      view = attached;
    },
  };
  return { registry, observer, text: () => registry.metrics(), contentType: registry.contentType };
}

/** The runtime's state as one scrape shows it: its sandboxes from memory, the bound's files once it is made. */
async function readSnapshot(view: RuntimeView, procRoot: string | undefined): Promise<Snapshot> {
  const { settings } = view;
  const bound = await view.bound();
  const pressure = bound ? await readBoundPressure(bound) : undefined;
  const holdings = bound && pressure ? await readHoldings(bound) : [];
  // One listing of the bound's CPU folder for every sandbox, not one each.
  const held = new Set(holdings.map((holding) => holding.id));
  const cpu = bound && held.size > 0 ? await readSandboxesCpuSeconds(bound, held) : new Map<string, number>();
  const networks = bound?.paths[0] !== undefined && bound.unenforced === undefined ? readSandboxesNetwork(bound.paths[0], held, procRoot) : new Map();
  const diskOf = view.disks?.() ?? (() => undefined);
  const sandboxes: SandboxReading[] = [];
  for (const entry of view.sandboxes()) {
    // Named and on the engine: an entry of a refused new user or of a removed sandbox is no sandbox.
    if (entry.name === '' || entry.containerId === undefined) continue;
    const { owner } = entry;
    const user = settings.metrics_real_user_ids && owner.kind === 'user' && owner.platform !== undefined && owner.userId !== undefined;
    const { name, containerId, running } = entry;
    const holding = running ? holdings.find((candidate) => candidate.id === containerId) : undefined;
    const cpuSeconds = holding ? cpu.get(containerId) : undefined;
    const network = holding ? networks.get(containerId) : undefined;
    const disk = diskOf(entry);
    sandboxes.push({
      name,
      state: running ? 'running' : 'stopped',
      scope: owner.kind,
      ...(user ? { user: `${owner.platform}:${owner.userId}` } : {}),
      ...(holding ? { holding } : {}),
      ...(cpuSeconds === undefined ? {} : { cpuSeconds }),
      ...(disk ? { disk } : {}),
      ...(network ? { network } : {}),
    });
  }
  // A count caps the running sandboxes unless `auto` leaves it to the shared bound in force.
  const runningCap = settings.docker_max_running === 'auto' && pressure ? 0 : await view.runningCap().catch(() => 0);
  return { sandboxes, runningCap, maxSandboxes: settings.docker_max_sandboxes, ...(pressure ? { pressure } : {}) };
}
