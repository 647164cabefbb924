import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createSandboxMeterReader, METER_REREAD_MS, meterSource, parseNetDev, readNetwork, readSandboxMeters, sliceFolder } from './sandbox-meters.js';

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

/** A host with the bound `berth-a1` holding `children` (child folder name → its numbers); `into` adds them to one made before. */
function fakeHost(
  version: 1 | 2,
  children: Record<string, { cpuSeconds: number; mb: number; cacheMb?: number; pids: number; pid?: string; net?: [number, number] }>,
  into?: { cgroupRoot: string; procRoot: string },
) {
  const root = mkdtempSync(path.join(os.tmpdir(), 'berth-meters-'));
  roots.push(root);
  const cgroupRoot = into?.cgroupRoot ?? path.join(root, 'cgroup');
  const procRoot = into?.procRoot ?? path.join(root, 'proc');
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

describe('createSandboxMeterReader', () => {
  it('reads usage at every call, limits, network counters and page cache only every so often, and a new child at once', () => {
    const roots = fakeHost(1, { [hex(4)]: { cpuSeconds: 1, mb: 10, pids: 2, pid: '3400', net: [100, 10] } });
    let clock = 1_000_000;
    const read = createSandboxMeterReader({ parent: '/berth-a1', version: 1 }, { ...roots, now: () => clock });
    expect(read().get(hex(4))).toMatchObject({ cpuSeconds: 1, memoryLimitBytes: 512 * MB, network: { receivedBytes: 100 } });
    // The sandbox burns CPU, its limit is raised, it receives bytes; and a second sandbox starts.
    const memory = path.join(roots.cgroupRoot, 'memory', 'berth-a1', hex(4));
    writeFileSync(path.join(roots.cgroupRoot, 'cpuacct', 'berth-a1', hex(4), 'cpuacct.usage'), String(3e9));
    writeFileSync(path.join(memory, 'memory.limit_in_bytes'), String(1024 * MB));
    writeFileSync(path.join(roots.procRoot, '3400', 'net', 'dev'), NET_DEV(900, 90));
    // 4 MB of the 10 become page cache it could drop.
    writeFileSync(path.join(memory, 'memory.stat'), `total_inactive_file ${4 * MB}\n`);
    fakeHost(1, { [hex(5)]: { cpuSeconds: 2, mb: 20, pids: 3, pid: '3500', net: [7, 8] } }, roots);
    clock += METER_REREAD_MS.network - 1;
    const soon = read();
    expect(soon.get(hex(4))).toMatchObject({ cpuSeconds: 3, memoryBytes: 10 * MB, memoryLimitBytes: 512 * MB, network: { receivedBytes: 100 } });
    expect(soon.get(hex(5))).toMatchObject({ cpuSeconds: 2, memoryLimitBytes: 512 * MB, network: { receivedBytes: 7 } });
    clock += 1;
    expect(read().get(hex(4))).toMatchObject({ memoryBytes: 6 * MB, memoryLimitBytes: 512 * MB, network: { receivedBytes: 900, sentBytes: 90 } });
    clock += METER_REREAD_MS.limits;
    expect(read().get(hex(4))).toMatchObject({ memoryLimitBytes: 1024 * MB });
  });

  it("shows no network counters when the pid it read them through is no longer the sandbox's (a reused pid)", () => {
    const roots = fakeHost(1, { [hex(6)]: { cpuSeconds: 1, mb: 1, pids: 1, pid: '3600', net: [5, 5] } });
    const folder = path.join(roots.cgroupRoot, 'pids', 'berth-a1', hex(6));
    const reading = (swap: boolean) => (file: string) => {
      const text = readFileSync(file, 'utf8');
      // The sandbox's process ends while its counters are read; another takes its pid.
      if (swap && file.endsWith(path.join('net', 'dev'))) writeFileSync(path.join(folder, 'cgroup.procs'), '3601\n');
      return text;
    };
    expect(readNetwork(folder, roots.procRoot, reading(false))).toEqual({ receivedBytes: 5, sentBytes: 5 });
    expect(readNetwork(folder, roots.procRoot, reading(true))).toBeNull();
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
    expect(meterSource({ ...local, cgroups: { manager: 'systemd', version: 2 } })).toMatchObject({ missing: expect.stringMatching(/systemd.*no slice/) });
    expect(meterSource({ ...local, sharedBound: { memoryMb: 1, pids: 1, enforced: false } })).toMatchObject({
      missing: expect.stringMatching(/docker_cgroup_parent/),
    });
  });
});

describe("under systemd's cgroup manager", () => {
  it('reads the scopes under the slice where systemd makes it, each dash a level', () => {
    const systemd = {
      engine: 'docker',
      cgroups: { manager: 'systemd', version: 2 },
      sharedBound: { parent: 'berth-a1b2c3.slice', memoryMb: 1, pids: 1, enforced: false },
    } as const;
    expect(sliceFolder('berth.slice')).toBe('berth.slice');
    expect(sliceFolder('berth-a1b2c3.slice')).toBe('berth.slice/berth-a1b2c3.slice');
    expect(meterSource(systemd)).toEqual({ parent: 'berth.slice/berth-a1b2c3.slice', version: 2 });
    for (const parent of ['../x.slice', 'berth--a.slice', '-.slice', 'berth-a1']) {
      expect(meterSource({ ...systemd, sharedBound: { ...systemd.sharedBound, parent } })).toMatchObject({ missing: expect.stringMatching(/no slice/) });
    }
    // Docker's scopes (`docker-{id}.scope`) and Podman's (`libpod-{id}.scope`) are read as the cgroupfs children are.
    const root = mkdtempSync(path.join(os.tmpdir(), 'berth-meters-'));
    roots.push(root);
    const cgroupRoot = path.join(root, 'cgroup');
    for (const [scope, mb] of [
      [`docker-${hex(7)}.scope`, 10],
      [`libpod-${hex(8)}.scope`, 20],
    ] as const) {
      write(path.join(cgroupRoot, 'berth.slice', 'berth-a1b2c3.slice', scope), 'memory.current', String(mb * MB));
    }
    const meters = readSandboxMeters({ parent: 'berth.slice/berth-a1b2c3.slice', version: 2 }, { cgroupRoot, procRoot: path.join(root, 'proc') });
    expect(meters.get(hex(7))?.memoryBytes).toBe(10 * MB);
    expect(meters.get(hex(8))?.memoryBytes).toBe(20 * MB);
  });
});
