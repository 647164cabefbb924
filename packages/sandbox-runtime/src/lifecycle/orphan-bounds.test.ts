import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createOrphanWatch, ORPHAN_WAIT_MS } from './orphan-bounds.js';

// On a folder laid out as cgroup v1's memory hierarchy. Not tried on the kernel by a test: that
// needs a gateway process killed while its bound is full (seen by hand: see orphan-bounds.ts).
const roots: string[] = [];
afterEach(() => {
  for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true });
});

function memoryRoot(bounds: Record<string, { disabled: boolean; waiting: boolean }>): string {
  const root = mkdtempSync(path.join(os.tmpdir(), 'berth-orphans-'));
  roots.push(root);
  for (const [name, state] of Object.entries(bounds)) setState(root, name, state);
  return root;
}

function setState(root: string, name: string, state: { disabled: boolean; waiting: boolean }): void {
  mkdirSync(path.join(root, name), { recursive: true });
  writeFileSync(path.join(root, name, 'memory.oom_control'), `oom_kill_disable ${state.disabled ? 1 : 0}\nunder_oom ${state.waiting ? 1 : 0}\noom_kill 0\n`);
}

const control = (root: string, name: string): string => readFileSync(path.join(root, name, 'memory.oom_control'), 'utf8');

describe("other installations' bounds with nobody deciding", () => {
  it('gives the decision back to the kernel for a bound that waited in its OOM at two looks far enough apart, and for no other', async () => {
    const root = memoryRoot({
      'berth-aaaaaa': { disabled: true, waiting: true }, // orphaned and full
      'berth-bbbbbb': { disabled: true, waiting: false }, // watched, with room
      'berth-cccccc': { disabled: true, waiting: true }, // this installation's own
      'berth-dddddd': { disabled: true, waiting: true }, // full for a moment only
      'system.slice': { disabled: true, waiting: true }, // not Berth's
    });
    const lines: string[] = [];
    const watch = createOrphanWatch({
      memoryRoot: root,
      own: 'berth-cccccc',
      logger: { info: () => undefined, warn: (line) => void lines.push(line), error: () => undefined },
    });
    const start = 1_000_000;
    expect(await watch.look(start)).toEqual([]);
    // Its guard made room: no longer waiting, so its clock starts again.
    setState(root, 'berth-dddddd', { disabled: true, waiting: false });
    expect(await watch.look(start + ORPHAN_WAIT_MS / 2)).toEqual([]);
    setState(root, 'berth-dddddd', { disabled: true, waiting: true });
    expect(await watch.look(start + ORPHAN_WAIT_MS)).toEqual(['berth-aaaaaa']);
    // A kernel file takes a write as a command; on the fake, the write lands at its start.
    expect(control(root, 'berth-aaaaaa')).toMatch(/^0om_kill_disable/);
    for (const name of ['berth-bbbbbb', 'berth-cccccc', 'berth-dddddd', 'system.slice']) expect(control(root, name)).toMatch(/^oom_kill_disable 1/);
    expect(lines).toEqual([expect.stringMatching(/^berth: the shared bound \/berth-aaaaaa of another installation was full for over 10 s/)]);
  });
});
