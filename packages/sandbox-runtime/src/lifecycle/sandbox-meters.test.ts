import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { meterSource, parseNetDev, readSandboxMeters } from './sandbox-meters.js';

// `berth top`'s readings on folders laid out as the kernel lays out cgroup v1's hierarchies (and
// v2's one) and /proc, as fair-share.test.ts fakes the bound.
const MB = 2 ** 20;
const roots: string[] = [];
afterEach(() => {
  for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true });
});
const hex = (n: number): string => n.toString(16).padStart(64, '0');

const NET_DEV = (rx: number, tx: number) =>
  'Inter-|   Receive                                                |  Transmit\n' +
  ' face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n' +
  '    lo:  999999    10    0    0    0     0          0         0   999999      10    0    0    0     0       0          0\n' +
  `  eth0: ${rx}      16    0    0    0     0          0         0 ${tx}       7    0    0    0     0       0          0\n`;

function write(folder: string, file: string, value: string): void {
  mkdirSync(folder, { recursive: true });
  writeFileSync(path.join(folder, file), value);
}

/** A host with the bound `berth-a1` holding `children` (child folder name → its numbers). */
function fakeHost(
  version: 1 | 2,
  children: Record<string, { cpuSeconds: number; mb: number; cacheMb?: number; pids: number; pid?: string; net?: [number, number] }>,
) {
  const root = mkdtempSync(path.join(os.tmpdir(), 'berth-meters-'));
  roots.push(root);
  const cgroupRoot = path.join(root, 'cgroup');
  const procRoot = path.join(root, 'proc');
  const folder = (hierarchy: string, child: string) =>
    version === 2 ? path.join(cgroupRoot, 'berth-a1', child) : path.join(cgroupRoot, hierarchy, 'berth-a1', child);
  for (const [child, numbers] of Object.entries(children)) {
    const memory = folder('memory', child);
    const pids = folder('pids', child);
    const cache = (numbers.cacheMb ?? 0) * MB;
    if (version === 2) {
      write(memory, 'memory.current', String(numbers.mb * MB + cache));
      write(memory, 'memory.stat', `anon 1\ninactive_file ${cache}\n`);
      write(memory, 'memory.max', String(512 * MB));
      write(memory, 'cpu.stat', `usage_usec ${numbers.cpuSeconds * 1e6}\nuser_usec 1\n`);
      write(pids, 'pids.max', 'max');
    } else {
      write(memory, 'memory.usage_in_bytes', String(numbers.mb * MB + cache));
      write(memory, 'memory.stat', `cache ${cache}\ntotal_inactive_file ${cache}\n`);
      write(memory, 'memory.limit_in_bytes', String(512 * MB));
      write(folder('cpuacct', child), 'cpuacct.usage', String(numbers.cpuSeconds * 1e9));
      write(pids, 'pids.max', '256');
    }
    write(pids, 'pids.current', String(numbers.pids));
    write(pids, 'cgroup.procs', numbers.pid === undefined ? '' : `${numbers.pid}\n4242\n`);
    if (numbers.pid !== undefined && numbers.net) write(path.join(procRoot, numbers.pid, 'net'), 'dev', NET_DEV(...numbers.net));
  }
  return { cgroupRoot, procRoot };
}

describe('readSandboxMeters', () => {
  it.each([1, 2] as const)('reads each sandbox under the bound on cgroup v%i: CPU, memory less its cache, pids, network', (version) => {
    const roots = fakeHost(version, {
      [hex(1)]: { cpuSeconds: 12.5, mb: 100, cacheMb: 40, pids: 7, pid: '3100', net: [5000, 700] },
      [`libpod-${hex(2)}`]: { cpuSeconds: 1, mb: 3, pids: 1, pid: '3200', net: [0, 0] },
      conmon: { cpuSeconds: 99, mb: 99, pids: 9 },
    });
    const meters = readSandboxMeters({ parent: '/berth-a1', version }, roots);
    expect([...meters.keys()].sort()).toEqual([hex(1), hex(2)]);
    expect(meters.get(hex(1))).toEqual({
      cpuSeconds: 12.5,
      memoryBytes: 100 * MB,
      memoryLimitBytes: 512 * MB,
      pids: 7,
      pidsLimit: version === 1 ? 256 : null,
      network: { receivedBytes: 5000, sentBytes: 700 },
    });
    expect(meters.get(hex(2))?.network).toEqual({ receivedBytes: 0, sentBytes: 0 });
  });

  it('gives nulls, not a crash, for what the kernel did not say, and opens nothing a cgroup.procs line names but a pid', () => {
    const roots = fakeHost(1, { [hex(3)]: { cpuSeconds: 1, mb: 1, pids: 1, pid: '../../etc' } });
    rmSync(path.join(roots.cgroupRoot, 'cpuacct'), { recursive: true });
    const meter = readSandboxMeters({ parent: '/berth-a1', version: 1 }, roots).get(hex(3));
    expect(meter).toMatchObject({ cpuSeconds: null, network: null, pids: 1 });
    expect(readSandboxMeters({ parent: '/berth-none', version: 1 }, roots).size).toBe(0);
  });
});

describe('parseNetDev', () => {
  it('sums every interface but lo, and says nothing of a text with no interface', () => {
    expect(parseNetDev(`${NET_DEV(10, 20)}  eth1: 5 0 0 0 0 0 0 0 6 0 0 0 0 0 0 0\n`)).toEqual({ receivedBytes: 15, sentBytes: 26 });
    expect(parseNetDev('garbage\n: 1 2\n')).toBeNull();
  });
});

describe('meterSource', () => {
  const local = {
    engine: 'docker',
    cgroups: { manager: 'cgroupfs', version: 1 },
    sharedBound: { parent: '/berth-a1', memoryMb: 1, pids: 1, enforced: true },
  } as const;
  it('reads under the shared bound of a local engine with cgroupfs, and says what is missing elsewhere', () => {
    expect(meterSource(local)).toEqual({ parent: '/berth-a1', version: 1 });
    expect(meterSource({ ...local, engine: 'kubernetes' })).toMatchObject({ missing: expect.stringMatching(/metrics API/) });
    expect(meterSource({ engine: 'podman' })).toMatchObject({ missing: expect.stringMatching(/rootless or remote/) });
    expect(meterSource({ ...local, cgroups: { manager: 'systemd', version: 2 } })).toMatchObject({ missing: expect.stringMatching(/systemd/) });
    expect(meterSource({ ...local, sharedBound: { memoryMb: 1, pids: 1, enforced: false } })).toMatchObject({
      missing: expect.stringMatching(/docker_cgroup_parent/),
    });
  });
});
