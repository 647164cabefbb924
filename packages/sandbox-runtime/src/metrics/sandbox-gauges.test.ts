import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { SharedBound } from '../lifecycle/shared-bound.js';
import { sandboxSettings } from '../sandbox-settings.js';
import { createRuntimeMetrics } from './runtime-metrics.js';

// The gauges a scrape reads from the shared bound's files, on a folder laid out as cgroup v2 lays
// out the bound (the real one is read by the integration test of berth serve --metrics).
const MB = 2 ** 20;
const roots: string[] = [];
afterEach(() => {
  for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true });
});

const idOf = (n: number): string => n.toString(16).padStart(64, '0');

/** A v2 bound of 600 MB and 1000 pids holding two sandboxes: 100 MB, 7 pids and 2.5 s of CPU; 50 MB, 3 pids and 1 s. */
function fakeBound(): SharedBound {
  const root = mkdtempSync(path.join(os.tmpdir(), 'berth-metrics-bound-'));
  roots.push(root);
  const write = (folder: string, file: string, value: string): void => {
    mkdirSync(folder, { recursive: true });
    writeFileSync(path.join(folder, file), value);
  };
  for (const [n, mb, pids, usec] of [
    [1, 100, 7, 2_500_000],
    [2, 50, 3, 1_000_000],
  ] as const) {
    const child = path.join(root, idOf(n));
    write(child, 'memory.current', String(mb * MB));
    write(child, 'pids.current', String(pids));
    write(child, 'cpu.stat', `usage_usec ${usec}\nuser_usec 0\n`);
    write(child, 'cgroup.procs', `${3000 + n}\n`);
    write(
      path.join(root, 'proc', String(3000 + n), 'net'),
      'dev',
      `  lo: 9 1 0 0 0 0 0 0 9 1 0 0 0 0 0 0\n  eth0: ${n * 1000} 1 0 0 0 0 0 0 ${n * 10} 1 0 0 0 0 0 0\n`,
    );
  }
  write(root, 'memory.current', String(160 * MB));
  write(root, 'memory.stat', `inactive_file ${10 * MB}\n`);
  write(root, 'memory.max', String(600 * MB));
  write(root, 'pids.current', '10');
  write(root, 'pids.max', '1000');
  return { parent: '/berth-a1', memoryMb: 600, pids: 1000, paths: [root], version: 2 };
}

const entry = (name: string, n: number, running: boolean, userId: string) => ({
  name,
  containerId: idOf(n),
  running,
  owner: { kind: 'user' as const, platform: 'telegram', userId },
});

describe('the gauges read at scrape time', () => {
  it("shows each running sandbox's memory, pids and CPU time by its opaque name, and the bound's use against its limits", async () => {
    const bound = fakeBound();
    const metrics = createRuntimeMetrics({ procRoot: path.join(bound.paths[0]!, 'proc') });
    const sandboxes = [entry('berth-aaa', 1, true, '555000111'), entry('berth-bbb', 2, false, '555000222')];
    metrics.observer.attach!({
      settings: sandboxSettings({ docker_max_running: 'auto' }),
      sandboxes: () => sandboxes as never,
      runningCap: async () => 9,
      bound: async () => bound,
      disks: () => (sandbox) => ({ usedMb: sandbox.name === 'berth-bbb' ? 3 : 12, limitMb: 1024 }),
    });
    const text = await metrics.text();
    expect(text).toContain(`berth_sandbox_memory_bytes{sandbox="berth-aaa"} ${100 * MB}`);
    expect(text).toContain('berth_sandbox_pids{sandbox="berth-aaa"} 7');
    expect(text).toContain('berth_sandbox_cpu_seconds_total{sandbox="berth-aaa"} 2.5');
    expect(text).toContain('berth_sandbox_network_received_bytes_total{sandbox="berth-aaa"} 1000');
    expect(text).toContain('berth_sandbox_network_sent_bytes_total{sandbox="berth-aaa"} 10');
    expect(text).toContain(`berth_sandbox_disk_used_bytes{sandbox="berth-aaa"} ${12 * MB}`);
    expect(text).toContain(`berth_sandbox_disk_limit_bytes{sandbox="berth-aaa"} ${1024 * MB}`);
    // A stopped sandbox holds nothing: no per-sandbox sample, whatever its cgroup still says.
    expect(text).not.toMatch(/^berth_sandbox_(?:memory_bytes|pids|cpu_seconds_total|network_\w+)\{sandbox="berth-bbb"\}/m);
    expect(text).toContain(`berth_capacity_used{resource="memory_bytes"} ${150 * MB}`);
    expect(text).toContain(`berth_capacity_limit{resource="memory_bytes"} ${600 * MB}`);
    expect(text).toContain('berth_capacity_limit{resource="pids"} 1000');
    // auto under the bound in force: the bound is the limit, not a count.
    expect(text).not.toContain('berth_capacity_limit{resource="running_sandboxes"}');
    expect(text).toContain('berth_sandboxes{state="stopped"} 1');
    expect(text).not.toContain('555000');
  });
});
