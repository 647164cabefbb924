import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { beyondShares, chooseHog, readHoldings, sharesOf } from './fair-share.js';
import { startFairShareGuard, takeOomDecision } from './fair-share-guard.js';
import { boundDrift, createBoundKeeper } from './bound-keeper.js';
import type { SharedBound } from './shared-bound.js';
import { killSandboxTasks, tasksOf } from './sandbox-tasks.js';

// The fair share and its guard on a folder laid out as the kernel lays out a cgroup file system
// (here the files are made first; the kernel makes a new cgroup's own). cgroup v2 is tried only
// so: this project's machines have v1. The real bound is attacked on Docker and Podman by
// tests/adversarial/src/fair-share.attack.test.ts.
const MB = 2 ** 20;
const roots: string[] = [];
afterEach(() => {
  for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true });
});

const hex = (n: number): string => n.toString(16).padStart(64, '0');
/** A reclaim's answer whose engine stop is already done. */
const STOPPED = { stopped: Promise.resolve() };

/** A bound of 600 MB and 1000 pids with `children` (id → MB, pids) under it, as v1 or v2 keeps it. */
function fakeBound(version: 1 | 2, children: Record<string, [number, number]>, state: { underOom?: boolean; pidsNow?: number } = {}): SharedBound {
  const root = mkdtempSync(path.join(os.tmpdir(), 'berth-fair-'));
  roots.push(root);
  const memory = version === 1 ? path.join(root, 'memory', 'berth-a1') : path.join(root, 'berth-a1');
  const pids = version === 1 ? path.join(root, 'pids', 'berth-a1') : memory;
  const write = (folder: string, file: string, value: string) => {
    mkdirSync(folder, { recursive: true });
    writeFileSync(path.join(folder, file), value);
  };
  const usage = version === 1 ? 'memory.usage_in_bytes' : 'memory.current';
  let total = 0;
  for (const [id, [mb, count]] of Object.entries(children)) {
    write(path.join(memory, id), usage, String(mb * MB));
    write(path.join(pids, id), 'pids.current', String(count));
    write(path.join(pids, id), 'pids.max', '512');
    if (version === 2) write(path.join(memory, id), 'memory.oom.group', '0');
    total += mb * MB;
  }
  write(memory, usage, String(total));
  write(memory, version === 1 ? 'memory.limit_in_bytes' : 'memory.max', String(600 * MB));
  if (version === 1) write(memory, 'memory.stat', 'total_inactive_file 0\n');
  if (version === 1) write(memory, 'memory.usage_in_bytes', String(total));
  if (version === 1) write(memory, 'memory.oom_control', `oom_kill_disable 0\nunder_oom ${state.underOom ? 1 : 0}\noom_kill 0\n`);
  else write(memory, 'memory.high', 'max');
  write(pids, 'pids.max', '1000');
  write(pids, 'pids.current', String(state.pidsNow ?? 10));
  return { parent: '/berth-a1', memoryMb: 600, pids: 1000, paths: version === 1 ? [memory, pids] : [memory], version };
}

describe('the fair share', () => {
  it('is the bound over the sandboxes in it, never under the floor, never over the bound', () => {
    const limits = { memoryLimit: 600 * MB, pidsLimit: 1000 };
    expect(sharesOf(limits, 3, { memoryBytes: 100 * MB, pids: 50 })).toMatchObject({ memoryBytes: 200 * MB, pids: 333 });
    expect(sharesOf(limits, 10, { memoryBytes: 100 * MB, pids: 50 })).toMatchObject({ memoryBytes: 100 * MB, pids: 100 });
    expect(sharesOf(limits, 0, { memoryBytes: 900 * MB, pids: 50 })).toMatchObject({ memoryBytes: 600 * MB, pids: 1000 });
  });

  it('reads each sandbox under the bound with all it holds, and counts only what is beyond a share as theirs to give back', async () => {
    const bound = fakeBound(1, { [hex(1)]: [380, 19], [`libpod-${hex(2)}`]: [20, 3] });
    const holdings = await readHoldings(bound);
    expect(holdings.sort((a, b) => a.id.localeCompare(b.id))).toEqual([
      { id: hex(1), memoryBytes: 380 * MB, pids: 19 },
      { id: hex(2), memoryBytes: 20 * MB, pids: 3 },
    ]);
    const shares = sharesOf({ memoryLimit: 600 * MB, pidsLimit: 1000 }, 3, { memoryBytes: 16 * MB, pids: 16 });
    expect(beyondShares(holdings, shares)).toEqual({ memoryBytes: 180 * MB, pids: 0 });
    expect(chooseHog(holdings, 'memory')?.id).toBe(hex(1));
  });
});

describe('the fair-share guard', () => {
  for (const version of [1, 2] as const) {
    it(`on cgroup v${version}: takes the OOM decision from the kernel, and stops the sandbox holding the most when the bound runs short`, async () => {
      const bound = fakeBound(version, { [hex(1)]: [380, 19], [hex(2)]: [250, 2], [hex(3)]: [5, 1] }, { underOom: true });
      await takeOomDecision(bound);
      const folder = bound.paths[0]!;
      // A kernel file takes a write as a command; on the fake, the write lands at its start.
      if (version === 1) expect(readFileSync(path.join(folder, 'memory.oom_control'), 'utf8')).toMatch(/^1om_kill_disable/);
      else expect(readFileSync(path.join(folder, 'memory.high'), 'utf8')).toBe(String(Math.floor(600 * MB * 0.95)));
      if (version === 2) writeFileSync(path.join(folder, 'memory.current'), String(590 * MB));
      const stopped: string[] = [];
      const lines: string[] = [];
      const guard = startFairShareGuard({
        bound,
        floors: { memoryBytes: 64 * MB, pids: 16 },
        sandboxPids: 512,
        intervalMs: 0,
        // The first one is no sandbox of Berth's (an operator's container under the same parent).
        reclaim: async (id, why) => {
          lines.push(why);
          if (id === hex(1) && stopped.length === 0 && lines.length === 1) return false;
          stopped.push(id);
          return STOPPED;
        },
      });
      await guard.check();
      // Not Berth's: the next largest gives way instead, told why in one line.
      expect(stopped).toEqual([hex(2)]);
      expect(lines[1]).toMatch(/^berth: this sandbox was stopped because the sandboxes' shared memory ran out while it held 250 MB, more than any other/);
      expect(lines[1]).not.toContain('\n');
      if (version === 2) expect(readFileSync(path.join(folder, hex(3), 'memory.oom.group'), 'utf8')).toBe('1');
      await guard.close(true);
      if (version === 1) expect(readFileSync(path.join(folder, 'memory.oom_control'), 'utf8')).toMatch(/^0om_kill_disable/);
    });
  }

  it('goes on looking while a stop it asked for hangs, and makes the next largest give way when the bound is still short', async () => {
    // On Podman the engine's monitor lives under the bound: a stop can wait for the memory it would free.
    const bound = fakeBound(1, { [hex(1)]: [210, 2], [hex(2)]: [200, 2], [hex(3)]: [190, 2] }, { underOom: true });
    const asked: string[] = [];
    let endStop: () => void = () => undefined;
    const hanging = new Promise<void>((resolve) => (endStop = resolve));
    const guard = startFairShareGuard({
      bound,
      floors: { memoryBytes: 0, pids: 0 },
      sandboxPids: 512,
      intervalMs: 0,
      reclaim: async (id) => {
        asked.push(id);
        return { stopped: hanging };
      },
    });
    await guard.check();
    expect(asked).toEqual([hex(1)]);
    // The first one's processes are dead, its stop hangs, and the bound is full again: while the
    // stop may still free its /tmp, nobody else gives way; once it has taken too long, the next
    // look (not stuck behind the stop) takes the largest of the others.
    writeFileSync(path.join(bound.paths[0]!, hex(1), 'memory.usage_in_bytes'), String(300 * MB));
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(Date.now() + 1_100);
    await guard.check();
    expect(asked).toEqual([hex(1)]);
    vi.setSystemTime(Date.now() + 2_000);
    await guard.check();
    vi.useRealTimers();
    expect(asked).toEqual([hex(1), hex(2)]);
    const closing = guard.close(false);
    let closed = false;
    void closing.then(() => (closed = true));
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(closed).toBe(false);
    endStop();
    await closing;
  });

  it('does not wait for a stop that frees nothing more: the one that gave way holds next to nothing, and the bound is full again', async () => {
    // Seen on Podman: the killed sandbox held 0 MB while its stop waited for memory itself, and
    // the two others filled the bound again; everyone waited out the 3 s hold.
    const bound = fakeBound(1, { [hex(1)]: [210, 2], [hex(2)]: [200, 2], [hex(3)]: [190, 2] }, { underOom: true });
    const asked: string[] = [];
    const lines: string[] = [];
    const guard = startFairShareGuard({
      bound,
      floors: { memoryBytes: 256 * MB, pids: 0 },
      sandboxPids: 512,
      intervalMs: 0,
      reclaim: async (id, why) => {
        asked.push(id);
        lines.push(why);
        return { stopped: new Promise<void>(() => undefined) };
      },
    });
    await guard.check();
    expect(asked).toEqual([hex(1)]);
    // Within the floor (256 MB), not over a share: the line does not say it was.
    expect(lines[0]).toMatch(/held 210 MB, more than any other \(the bound could not hold every sandbox's fair share of 256 MB at once\);/);
    writeFileSync(path.join(bound.paths[0]!, hex(1), 'memory.usage_in_bytes'), String(1 * MB));
    vi.useFakeTimers({ toFake: ['Date'] });
    // After the quiet second, well within the stop's 3 s: the next largest gives way.
    vi.setSystemTime(Date.now() + 1_100);
    await guard.check();
    vi.useRealTimers();
    expect(asked).toEqual([hex(1), hex(2)]);
  });

  it('a frozen sandbox holding memory gives way first, whatever its share, at a full bound and at a nearly full one', async () => {
    // 300 MB running, 150 MB frozen, 140 MB running: the bound of 600 MB waits in its OOM.
    const bound = fakeBound(1, { [hex(1)]: [300, 5], [hex(2)]: [150, 2], [hex(3)]: [140, 2] }, { underOom: true });
    const asked: string[] = [];
    const lines: string[] = [];
    const options = {
      bound,
      floors: { memoryBytes: 0, pids: 0 },
      sandboxPids: 512,
      intervalMs: 0,
      isFrozen: (id: string) => id === hex(2),
      reclaim: async (id: string, why: string) => {
        asked.push(id);
        lines.push(why);
        return STOPPED;
      },
    };
    await startFairShareGuard(options).check();
    expect(asked).toEqual([hex(2)]);
    expect(lines[0]).toMatch(/^berth: this sandbox was stopped while frozen \(idle\) because the sandboxes' shared memory ran short and it held 150 MB;/);
    // Nearly full (98 %), everyone within a share of 200 MB: only the frozen one gives way.
    const nearly = fakeBound(1, { [hex(4)]: [195, 5], [hex(5)]: [193, 2], [hex(6)]: [200, 2] });
    asked.length = 0;
    await startFairShareGuard({ ...options, bound: nearly, isFrozen: (id: string) => id === hex(5) }).check();
    expect(asked).toEqual([hex(5)]);
    // A frozen one holding next to nothing frees nothing: the largest gives way as before.
    const empty = fakeBound(1, { [hex(7)]: [400, 5], [hex(8)]: [1, 2] }, { underOom: true });
    asked.length = 0;
    await startFairShareGuard({ ...options, bound: empty, isFrozen: (id: string) => id === hex(8) }).check();
    expect(asked).toEqual([hex(7)]);
  });

  it('an engine that fails to answer about the largest leaves it in the next choice, not out of every later one', async () => {
    const bound = fakeBound(1, { [hex(1)]: [400, 5], [hex(2)]: [150, 2] }, { underOom: true });
    const asked: string[] = [];
    const warned: string[] = [];
    const guard = startFairShareGuard({
      bound,
      floors: { memoryBytes: 0, pids: 0 },
      sandboxPids: 512,
      intervalMs: 0,
      logger: { info: () => undefined, warn: (line) => void warned.push(line), error: () => undefined },
      reclaim: async (id) => {
        asked.push(id);
        if (asked.length === 1) throw new Error('the engine did not answer the inspect in time');
        return STOPPED;
      },
    });
    await guard.check();
    expect(warned).toHaveLength(1);
    await guard.check();
    // The hog again, never the light one instead.
    expect(asked).toEqual([hex(1), hex(1)]);
  });

  it('leaves everyone alone while the bound has room, and takes pids only from a sandbox over its pids share', async () => {
    const calm = fakeBound(1, { [hex(1)]: [380, 19], [hex(2)]: [5, 1] });
    const stopped: string[] = [];
    const reclaim = async (id: string) => {
      stopped.push(id);
      return STOPPED;
    };
    await startFairShareGuard({ bound: calm, floors: { memoryBytes: 0, pids: 0 }, sandboxPids: 1000, intervalMs: 0, reclaim }).check();
    expect(stopped).toEqual([]);
    // 95 % of the pids taken: one sandbox holds 900 of them, over its share of 500.
    const forks = fakeBound(1, { [hex(1)]: [10, 900], [hex(2)]: [5, 50] }, { pidsNow: 950 });
    await startFairShareGuard({ bound: forks, floors: { memoryBytes: 0, pids: 0 }, sandboxPids: 1000, intervalMs: 0, reclaim }).check();
    expect(stopped).toEqual([hex(1)]);
    // Nearly full, but nobody over a share: nobody's fork is anyone else's fault.
    const even = fakeBound(1, { [hex(1)]: [10, 470], [hex(2)]: [5, 470] }, { pidsNow: 940 });
    await startFairShareGuard({ bound: even, floors: { memoryBytes: 0, pids: 0 }, sandboxPids: 1000, intervalMs: 0, reclaim }).check();
    expect(stopped).toEqual([hex(1)]);
  });
});

describe("the sandbox's processes, from the host", () => {
  it('are only those the kernel places in its cgroup: a listed pid of another process is never killed', async () => {
    const bound = fakeBound(1, { [hex(7)]: [10, 1] });
    // The fake cgroup lists this very process (as a pid read in another namespace might name it).
    writeFileSync(path.join(bound.paths[0]!, hex(7), 'cgroup.procs'), `${process.pid}\n`);
    expect(await tasksOf(bound, hex(7))).toEqual([]);
    await killSandboxTasks(bound, hex(7));
    // Still here to say so.
    expect(process.pid).toBeGreaterThan(0);
  });
});

describe('room for a start, and pids shares', () => {
  it("caps each sandbox's pids at its share while others run, and makes room for a start that would find too few", async () => {
    const bound = fakeBound(1, { [hex(1)]: [10, 300], [hex(2)]: [5, 20] }, { pidsNow: 320 });
    const stopped: string[] = [];
    const guard = startFairShareGuard({
      bound,
      floors: { memoryBytes: 0, pids: 64 },
      sandboxPids: 512,
      intervalMs: 0,
      reclaim: async (id) => {
        stopped.push(id);
        return STOPPED;
      },
    });
    await guard.check();
    // Two sandboxes, a bound of 1000: 500 each, under their own 512.
    for (const id of [hex(1), hex(2)]) expect(readFileSync(path.join(bound.paths[1]!, id, 'pids.max'), 'utf8')).toMatch(/^500/);
    expect(stopped).toEqual([]);
    // A third would start with 1000 − 320 = 680 free, more than its share (333): nobody gives way.
    await guard.roomForStart();
    expect(stopped).toEqual([]);
    // With 950 taken, 50 are free: the one over its share gives way before the start.
    writeFileSync(path.join(bound.paths[1]!, 'pids.current'), '950');
    writeFileSync(path.join(bound.paths[1]!, hex(1), 'pids.current'), '900');
    await guard.roomForStart();
    expect(stopped).toEqual([hex(1)]);
    await guard.close(false);
  });

  it('makes memory room for a start under a full bound, and waits until the bound leaves its OOM, not longer', async () => {
    // The bound waits in its OOM: the engine could not even make the new sandbox's cgroup (v1 charges it to the bound).
    const bound = fakeBound(1, { [hex(1)]: [400, 5], [hex(2)]: [190, 5] }, { underOom: true });
    const control = path.join(bound.paths[0]!, 'memory.oom_control');
    const stopped: string[] = [];
    const guard = startFairShareGuard({
      bound,
      floors: { memoryBytes: 0, pids: 0 },
      sandboxPids: 512,
      intervalMs: 0,
      reclaim: async (id) => {
        stopped.push(id);
        // Its processes are killed; the kernel leaves the OOM a moment later; the engine's stop goes on.
        setTimeout(() => writeFileSync(control, 'oom_kill_disable 1\nunder_oom 0\noom_kill 0\n'), 300);
        return { stopped: new Promise<void>((resolve) => setTimeout(resolve, 10_000).unref()) };
      },
    });
    const started = Date.now();
    await guard.roomForStart();
    expect(stopped).toEqual([hex(1)]);
    expect(readFileSync(control, 'utf8')).toContain('under_oom 0');
    expect(Date.now() - started).toBeLessThan(2_500);
    // Nearly full (98 %) with everyone within their share, the floor of 200 MB even with the
    // newcomer counted (600 / 4 is less): nobody gives way, and the start does not wait.
    const even = fakeBound(1, { [hex(3)]: [195, 5], [hex(4)]: [193, 5], [hex(5)]: [200, 5] });
    const fair: string[] = [];
    await startFairShareGuard({
      bound: even,
      floors: { memoryBytes: 200 * MB, pids: 0 },
      sandboxPids: 512,
      intervalMs: 0,
      reclaim: async (id) => {
        fair.push(id);
        return STOPPED;
      },
    }).roomForStart();
    expect(fair).toEqual([]);
  });

  it('writes the cap again where the engine wrote its own limit over it as the sandbox started', async () => {
    const bound = fakeBound(1, { [hex(1)]: [10, 30], [hex(2)]: [5, 20] });
    const guard = startFairShareGuard({ bound, floors: { memoryBytes: 0, pids: 64 }, sandboxPids: 512, intervalMs: 0, reclaim: async () => STOPPED });
    const limitOf = (id: string) => readFileSync(path.join(bound.paths[1]!, id, 'pids.max'), 'utf8').trim();
    await guard.check();
    expect(limitOf(hex(2))).toBe('500');
    // The engine's late write of the sandbox's own limit, as runc and crun make it at a start.
    writeFileSync(path.join(bound.paths[1]!, hex(2), 'pids.max'), '512');
    await guard.check();
    expect(limitOf(hex(2))).toBe('500');
    expect(limitOf(hex(1))).toBe('500');
    await guard.close(false);
  });
});

describe("a sandbox's own OOM killer on cgroup v1", () => {
  it('is turned back on where it took the bound\'s "off" as it was made, and again for a cgroup made anew under the same name after a start', async () => {
    const bound = fakeBound(1, { [hex(1)]: [10, 3], [hex(2)]: [5, 2] });
    const memory = bound.paths[0]!;
    const control = (id: string) => path.join(memory, id, 'memory.oom_control');
    // As the kernel makes a child of a bound whose killer is off: off too.
    for (const id of [hex(1), hex(2)]) writeFileSync(control(id), 'oom_kill_disable 1\nunder_oom 0\noom_kill 0\n');
    const guard = startFairShareGuard({ bound, floors: { memoryBytes: 0, pids: 0 }, sandboxPids: 512, intervalMs: 0, reclaim: async () => STOPPED });
    await guard.check();
    // A kernel file takes a write as a command; on the fake, the write lands at its start.
    for (const id of [hex(1), hex(2)]) expect(readFileSync(control(id), 'utf8')).toMatch(/^0om_kill_disable 1/);
    // The sandbox restarts: the engine removes its cgroup and makes one of the same name.
    rmSync(path.join(memory, hex(2)), { recursive: true });
    mkdirSync(path.join(memory, hex(2)));
    writeFileSync(control(hex(2)), 'oom_kill_disable 1\nunder_oom 0\noom_kill 0\n');
    writeFileSync(path.join(memory, hex(2), 'memory.usage_in_bytes'), String(5 * MB));
    // As the bound keeper does once a sandbox started.
    guard.readEveryChild();
    await guard.check();
    expect(readFileSync(control(hex(2)), 'utf8')).toMatch(/^0om_kill_disable 1/);
    await guard.close(false);
  });
});

describe('the bound keeper', () => {
  it('finds the bound gone or changed, makes it again before the next start, and says so', async () => {
    const bound = fakeBound(1, {});
    const root = mkdtempSync(path.join(os.tmpdir(), 'berth-holders-'));
    roots.push(root);
    expect(await boundDrift(bound)).toBeUndefined();
    const logs: string[] = [];
    let remade = 0;
    const keeper = createBoundKeeper({
      bound: async () => bound,
      remake: async () => {
        remade++;
        writeFileSync(path.join(bound.paths[0]!, 'memory.limit_in_bytes'), String(600 * MB));
        return bound;
      },
      sandboxRoot: root,
      floors: { memoryBytes: 0, pids: 0 },
      sandboxPids: 100,
      reclaim: async () => STOPPED,
      logger: { info: () => undefined, warn: (line) => logs.push(line), error: () => undefined },
      guardIntervalMs: 0,
    });
    await keeper.beforeStart();
    expect(remade).toBe(0);
    // Another process removed it and the engine made it again, unlimited.
    writeFileSync(path.join(bound.paths[0]!, 'memory.limit_in_bytes'), '9223372036854771712');
    expect(await keeper.readBack()).toMatch(/shared bound \/berth-a1 was changed: its memory limit is \d+ MB, not 600 MB/);
    await keeper.beforeStart();
    expect(remade).toBe(1);
    expect(logs.join('\n')).toMatch(/made it again \(600 MB, 1000 pids\) before starting a sandbox/);
    expect(await keeper.readBack()).toBeUndefined();
    // Removed between the look before a start and the engine's making of the sandbox: read back after it.
    writeFileSync(path.join(bound.paths[0]!, 'memory.limit_in_bytes'), '9223372036854771712');
    await keeper.afterStart();
    expect(remade).toBe(2);
    expect(logs.join('\n')).toMatch(/made it again \(600 MB, 1000 pids\) as a sandbox started under it/);
  });

  it('is removed by the last process out only: another live holder keeps it, a dead one does not', async () => {
    const bound = fakeBound(1, {});
    const root = mkdtempSync(path.join(os.tmpdir(), 'berth-holders-'));
    roots.push(root);
    const keeper = () =>
      createBoundKeeper({
        bound: async () => bound,
        remake: async () => bound,
        sandboxRoot: root,
        floors: { memoryBytes: 0, pids: 0 },
        sandboxPids: 100,
        reclaim: async () => STOPPED,
        guardIntervalMs: 0,
      });
    const first = keeper();
    await first.beforeStart();
    const holders = path.join(root, '.berth-bound-holders');
    // A holder that is alive: this test's parent process, by the identity's shape (boot.ns.pid.start).
    const [mine] = (await import('node:fs')).readdirSync(holders);
    const [boot, namespace] = mine!.split('.');
    const parentStart = readFileSync(`/proc/${process.ppid}/stat`, 'utf8');
    const alive = [boot, namespace, process.ppid, parentStart.slice(parentStart.lastIndexOf(')') + 2).split(' ')[19]].join('.');
    writeFileSync(path.join(holders, alive), '');
    writeFileSync(path.join(holders, [boot, namespace, '999999999', '1'].join('.')), '');
    // The bound's memory folder has only files (a fake): rmdir fails on it as on a real one in use, so look at the holders.
    await first.close();
    expect(existsSync(path.join(holders, mine!))).toBe(false);
    expect(existsSync(path.join(holders, alive))).toBe(true);
    expect(existsSync(path.join(holders, [boot, namespace, '999999999', '1'].join('.')))).toBe(false);
    expect(readFileSync(path.join(bound.paths[0]!, 'memory.oom_control'), 'utf8')).toMatch(/^1om_kill_disable/);
    rmSync(path.join(holders, alive));
    const last = keeper();
    await last.beforeStart();
    await last.close();
    // The last one out gives the decision back to the kernel.
    expect(readFileSync(path.join(bound.paths[0]!, 'memory.oom_control'), 'utf8')).toMatch(/^0om_kill_disable/);
  });
});
