import { existsSync, mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { STALE_BOUND_MS, sweepStaleBounds } from './stale-bounds.js';

// On a folder laid out as cgroup v1's hierarchies: an ordinary folder refuses rmdir while it has
// a child, as a cgroup does while it has a member or a child.
const roots: string[] = [];
afterEach(() => {
  for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true });
});

describe("other installations' stale bounds", () => {
  it('go when empty and made over an hour ago, in every hierarchy; a bound in use, a young one, our own and an operator-named one stay', async () => {
    const root = mkdtempSync(path.join(os.tmpdir(), 'berth-stale-'));
    roots.push(root);
    const now = Date.now();
    const old = new Date(now - STALE_BOUND_MS - 60_000);
    const make = (hierarchy: string, name: string, made: Date, child = false) => {
      const folder = path.join(root, hierarchy, name);
      mkdirSync(child ? path.join(folder, 'abc') : folder, { recursive: true });
      utimesSync(folder, made, made);
    };
    for (const hierarchy of ['memory', 'pids', 'cpu', 'blkio']) {
      make(hierarchy, 'berth-0a0b0c', old);
      make(hierarchy, 'berth-111111', old);
      make(hierarchy, 'berth-222222', new Date(now - 60_000));
      make(hierarchy, 'berth-gateway', old);
    }
    make('memory', 'berth-333333', old, true);
    make('cpu', 'berth-333333', old);
    // A member: an ordinary folder with a file in it refuses rmdir, as a cgroup with a process does.
    const abc = path.join(root, 'memory', 'berth-333333', 'abc');
    writeFileSync(path.join(abc, 'member'), '');
    utimesSync(abc, old, old);
    // Podman's empty `conmon` cgroup, made with the bound: it goes, and the bound with it.
    for (const hierarchy of ['memory', 'pids']) {
      make(hierarchy, 'berth-444444', old, true);
      const conmon = path.join(root, hierarchy, 'berth-444444', 'abc');
      utimesSync(conmon, old, old);
    }
    // An empty cgroup made a minute ago in an old bound: an engine making a sandbox in it.
    make('memory', 'berth-555555', old, true);
    const removed = await sweepStaleBounds({ cgroupRoot: root, version: 1, own: 'berth-111111', now });
    expect(removed.sort()).toEqual(['berth-0a0b0c', 'berth-333333', 'berth-444444']);
    for (const hierarchy of ['memory', 'pids']) expect(existsSync(path.join(root, hierarchy, 'berth-444444'))).toBe(false);
    expect(existsSync(path.join(root, 'memory', 'berth-555555', 'abc'))).toBe(true);
    for (const hierarchy of ['memory', 'pids', 'cpu', 'blkio']) {
      expect(existsSync(path.join(root, hierarchy, 'berth-0a0b0c'))).toBe(false);
      for (const kept of ['berth-111111', 'berth-222222', 'berth-gateway']) expect(existsSync(path.join(root, hierarchy, kept))).toBe(true);
    }
    // One with a sandbox in it stays where it has one, and goes where it is empty.
    expect(existsSync(path.join(root, 'memory', 'berth-333333', 'abc'))).toBe(true);
    expect(existsSync(path.join(root, 'cpu', 'berth-333333'))).toBe(false);
  });
});
