import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseTerminalConfig } from '@berth/core';
import { afterEach, describe, expect, it } from 'vitest';
import { sharesCheck } from './doctor-capacity.js';

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
