import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseTerminalConfig } from '@berth/core';
import { afterEach, describe, expect, it } from 'vitest';
import { frozenCheck, poolCheck, sharesCheck } from './doctor-capacity.js';

// The shares line of `berth doctor`, over a folder laid out as cgroup v1 lays out a bound; the
// real bound is read by tests/adversarial/src/fair-share.attack.test.ts's gateways.
const roots: string[] = [];
afterEach(() => {
  for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true });
});

describe('berth doctor: shares', () => {
  it("names each sandbox's share and use, the largest first, and which is over its share", async () => {
    const root = mkdtempSync(path.join(os.tmpdir(), 'berth-doctor-shares-'));
    roots.push(root);
    const hog = 'a'.repeat(64);
    const light = 'b'.repeat(64);
    for (const [id, mb, pids] of [
      [hog, 380, 19],
      [light, 20, 3],
    ] as const) {
      mkdirSync(path.join(root, 'memory', 'berth-a1b2c3', `libpod-${id}`), { recursive: true });
      mkdirSync(path.join(root, 'pids', 'berth-a1b2c3', `libpod-${id}`), { recursive: true });
      writeFileSync(path.join(root, 'memory', 'berth-a1b2c3', `libpod-${id}`, 'memory.usage_in_bytes'), String(mb * 2 ** 20));
      writeFileSync(path.join(root, 'pids', 'berth-a1b2c3', `libpod-${id}`, 'pids.current'), String(pids));
    }
    const config = parseTerminalConfig({ docker_share_floor: 64 });
    const check = await sharesCheck(config, { parent: '/berth-a1b2c3', memoryMb: 600, pids: 1000, enforced: true }, root);
    expect(check).toEqual({
      name: 'shares',
      status: 'ok',
      detail:
        "2 sandboxes under /berth-a1b2c3, each one's share 300 MB and 500 pids (when the bound runs short, the one holding the most gives way); " +
        'in use (container id): aaaaaaaaaaaa 380 MB, 19 pids (over its share); bbbbbbbbbbbb 20 MB, 3 pids',
    });
    // Not enforced, or not on this host: no line.
    expect(await sharesCheck(config, { parent: '/berth-a1b2c3', memoryMb: 600, pids: 1000, enforced: false }, root)).toBeUndefined();
    expect(await sharesCheck(config, { parent: '/berth-ffffff', memoryMb: 600, pids: 1000, enforced: true }, root)).toBeUndefined();
  });
});

describe('berth doctor: frozen sandboxes', () => {
  it('counts the frozen sandboxes and the memory they still hold in the shared bound, and says when they stop', async () => {
    const root = mkdtempSync(path.join(os.tmpdir(), 'berth-doctor-frozen-'));
    roots.push(root);
    const [frozenOne, frozenTwo, running] = ['c'.repeat(64), 'd'.repeat(64), 'e'.repeat(64)];
    for (const [id, mb] of [
      [frozenOne, 120],
      [frozenTwo, 30],
      [running, 500],
    ] as const) {
      mkdirSync(path.join(root, 'memory', 'berth-a1b2c3', id), { recursive: true });
      writeFileSync(path.join(root, 'memory', 'berth-a1b2c3', id, 'memory.usage_in_bytes'), String(mb * 2 ** 20));
    }
    const sandboxes = [
      { state: 'paused', containerId: frozenOne },
      { state: 'paused', containerId: frozenTwo },
      { state: 'running', containerId: running },
    ];
    const bound = { parent: '/berth-a1b2c3', memoryMb: 2048, pids: 1000, enforced: true };
    const config = parseTerminalConfig({});
    const check = await frozenCheck(config, sandboxes, bound, root);
    expect(check).toMatchObject({ name: 'frozen', status: 'ok' });
    expect(check.detail).toBe(
      "2 sandboxes are frozen, holding 150 MB of the shared bound's 2048 MB while frozen; idle sandboxes are frozen at lifetime_seconds (300 s) " +
        'and stopped once frozen for docker_freeze_seconds (3600 s), or sooner by docker_max_running, which counts them as running',
    );
    // Without a bound on this host: what each may hold.
    expect((await frozenCheck(config, sandboxes, undefined, root)).detail).toMatch(
      /^2 sandboxes are frozen, their memory stays held while frozen \(up to container_memory, \d+ MB, each\)/,
    );
    expect((await frozenCheck(config, sandboxes.slice(2), bound, root)).detail).toMatch(/^no sandbox is frozen; /);
    expect((await frozenCheck(parseTerminalConfig({ docker_freeze_seconds: 0 }), sandboxes, bound, root)).detail).toMatch(/^freezing is off/);
  });

  it('says what the warm pool keeps ready, and that it does nothing on Kubernetes', () => {
    expect(poolCheck(parseTerminalConfig({}), 'docker')).toMatchObject({ status: 'ok', detail: expect.stringMatching(/^no warm pool/) });
    expect(poolCheck(parseTerminalConfig({ docker_pool_size: 2 }), 'podman')).toMatchObject({
      status: 'ok',
      detail: expect.stringMatching(/keeps 2 started sandboxes ready/),
    });
    expect(poolCheck(parseTerminalConfig({ docker_pool_size: 2 }), 'kubernetes')).toMatchObject({
      status: 'warning',
      fix: expect.stringMatching(/remove docker_pool_size/),
    });
  });
});
