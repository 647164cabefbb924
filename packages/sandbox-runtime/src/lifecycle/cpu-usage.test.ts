import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { readSandboxCpuSeconds, readSandboxesCpuSeconds } from './cpu-usage.js';

const folders: string[] = [];
afterEach(() => {
  for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true });
});

// Container ids as engines give them: 64 hex digits (a cgroup's name is read as fair-share.ts's childNamed reads it).
const C0FFEE = 'c0ffee'.padEnd(64, '0');
const BEEF = 'beef'.padEnd(64, '1');

describe('readSandboxCpuSeconds', () => {
  it('reads cgroup v1 cpuacct.usage beside the bound’s memory folder, and v2 cpu.stat, by the container’s id', async () => {
    const root = mkdtempSync(path.join(tmpdir(), 'berth-cgroups-'));
    folders.push(root);
    mkdirSync(path.join(root, 'cpuacct', 'berth-abc123', C0FFEE), { recursive: true });
    writeFileSync(path.join(root, 'cpuacct', 'berth-abc123', C0FFEE, 'cpuacct.usage'), '2500000000\n');
    const v1 = {
      parent: '/berth-abc123',
      memoryMb: 1,
      pids: 1,
      version: 1 as const,
      paths: [path.join(root, 'memory', 'berth-abc123'), path.join(root, 'pids', 'berth-abc123')],
    };
    expect(await readSandboxCpuSeconds(v1, C0FFEE)).toBe(2.5);
    expect(await readSandboxCpuSeconds(v1, 'other')).toBeUndefined();

    mkdirSync(path.join(root, 'v2', 'berth-abc123', `libpod-${BEEF}`), { recursive: true });
    writeFileSync(path.join(root, 'v2', 'berth-abc123', `libpod-${BEEF}`, 'cpu.stat'), 'usage_usec 1500000\nuser_usec 1000000\n');
    const v2 = { parent: '/berth-abc123', memoryMb: 1, pids: 1, version: 2 as const, paths: [path.join(root, 'v2', 'berth-abc123')] };
    expect(await readSandboxCpuSeconds(v2, BEEF)).toBe(1.5);
    expect(await readSandboxCpuSeconds({ ...v2, unenforced: 'no bound' }, BEEF)).toBeUndefined();
  });

  it("reads every asked sandbox from one listing, leaving out the engine's own children and sandboxes not asked for", async () => {
    const root = mkdtempSync(path.join(tmpdir(), 'berth-cgroups-'));
    folders.push(root);
    const parent = path.join(root, 'cpuacct', 'berth-abc123');
    for (const [name, usage] of [
      [C0FFEE, '1000000000'],
      [`libpod-${BEEF}`, '3000000000'],
      ['conmon', '9000000000'],
    ] as const) {
      mkdirSync(path.join(parent, name), { recursive: true });
      writeFileSync(path.join(parent, name, 'cpuacct.usage'), `${usage}\n`);
    }
    const v1 = { parent: '/berth-abc123', memoryMb: 1, pids: 1, version: 1 as const, paths: [path.join(root, 'memory', 'berth-abc123')] };
    expect(await readSandboxesCpuSeconds(v1, new Set([C0FFEE, BEEF]))).toEqual(
      new Map([
        [C0FFEE, 1],
        [BEEF, 3],
      ]),
    );
    expect(await readSandboxesCpuSeconds(v1, new Set([BEEF]))).toEqual(new Map([[BEEF, 3]]));
    expect(await readSandboxesCpuSeconds(v1, new Set())).toEqual(new Map());
  });
});
