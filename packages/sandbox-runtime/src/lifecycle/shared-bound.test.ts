import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { prepareSharedBound, sharedBoundName, sharedBoundSize } from './shared-bound.js';

// The logic around the cgroup files, on a folder laid out as the kernel lays out a cgroup file
// system (the kernel makes a new cgroup's files itself; here they are made first). The real
// bound is tried on the real engine by tests/adversarial/src/shared-bound.attack.test.ts.
const roots: string[] = [];
afterEach(() => {
  for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true });
});

function fakeCgroups(version: 1 | 2, name: string): string {
  const root = mkdtempSync(path.join(os.tmpdir(), 'berth-cgroup-'));
  roots.push(root);
  const files = version === 1 ? { memory: ['memory.limit_in_bytes'], pids: ['pids.max'] } : { '': ['memory.max', 'pids.max'] };
  for (const [controller, names] of Object.entries(files)) {
    mkdirSync(path.join(root, controller, name), { recursive: true });
    for (const file of names) writeFileSync(path.join(root, controller, name, file), 'max\n');
  }
  if (version === 2) writeFileSync(path.join(root, 'cgroup.subtree_control'), '');
  return root;
}

const settings = { docker_cgroup_parent: 'auto', docker_total_memory: 2048, docker_total_pids: 1000 } as const;

describe('the shared bound', () => {
  it('is named after the installation unless the operator names it, and sized from the host unless set', () => {
    expect(sharedBoundName({ docker_cgroup_parent: 'auto' }, 'a1b2c3')).toBe('berth-a1b2c3');
    expect(sharedBoundName({ docker_cgroup_parent: 'gateways' }, 'a1b2c3')).toBe('gateways');
    expect(sharedBoundSize({ docker_total_memory: 'auto', docker_total_pids: 'auto' }, { memoryMb: 24_000 }).memoryMb).toBe(21_600);
    expect(sharedBoundSize({ docker_total_memory: 512, docker_total_pids: 300 })).toEqual({ memoryMb: 512, pids: 300 });
  });

  it('writes the memory and pids limits where cgroupfs v1 and v2 keep them, and names the parent', async () => {
    const v1 = fakeCgroups(1, 'berth-a1b2c3');
    const bound = await prepareSharedBound({
      settings,
      installationTag: 'a1b2c3',
      cgroupRoot: v1,
      description: { engine: 'docker', cgroups: { manager: 'cgroupfs', version: 1 } },
    });
    expect(bound).toEqual({
      parent: '/berth-a1b2c3',
      memoryMb: 2048,
      pids: 1000,
      paths: [path.join(v1, 'memory', 'berth-a1b2c3'), path.join(v1, 'pids', 'berth-a1b2c3')],
      version: 1,
    });
    expect(readFileSync(path.join(v1, 'memory', 'berth-a1b2c3', 'memory.limit_in_bytes'), 'utf8')).toBe(String(2048 * 1024 * 1024));
    expect(readFileSync(path.join(v1, 'pids', 'berth-a1b2c3', 'pids.max'), 'utf8')).toBe('1000');

    const v2 = fakeCgroups(2, 'berth-a1b2c3');
    const unified = await prepareSharedBound({
      settings,
      installationTag: 'a1b2c3',
      cgroupRoot: v2,
      description: { engine: 'podman', cgroups: { manager: 'cgroupfs', version: 2 } },
    });
    expect(unified.unenforced).toBeUndefined();
    expect(readFileSync(path.join(v2, 'berth-a1b2c3', 'memory.max'), 'utf8')).toBe(String(2048 * 1024 * 1024));
    expect(readFileSync(path.join(v2, 'cgroup.subtree_control'), 'utf8')).toBe('+memory +pids');
  });

  it('says in one line why the bound does not hold, and never throws', async () => {
    const engineWithout = await prepareSharedBound({ settings, installationTag: 'a1b2c3', description: { engine: 'podman' } });
    expect(engineWithout).toMatchObject({ memoryMb: 2048, paths: [] });
    expect(engineWithout.parent).toBeUndefined();
    expect(engineWithout.unenforced).toMatch(/^the podman engine's cgroups are not this host's to bound/);

    const none = await prepareSharedBound({
      settings: { ...settings, docker_cgroup_parent: '' },
      installationTag: 'a1b2c3',
      description: { engine: 'docker', cgroups: { manager: 'cgroupfs', version: 1 } },
    });
    expect(none.unenforced).toMatch(/docker_cgroup_parent is "": sandboxes share no bound.*set it to auto$/);

    const systemd = await prepareSharedBound({
      settings,
      installationTag: 'a1b2c3',
      description: { engine: 'docker', cgroups: { manager: 'systemd', version: 2 } },
    });
    expect(systemd).toMatchObject({ parent: 'berth-a1b2c3.slice' });
    expect(systemd.unenforced).toContain('systemctl set-property berth-a1b2c3.slice MemoryMax=2048M TasksMax=1000');
    // Described before the installation has its key (berth doctor on a new host): named, never made up.
    const keyless = await prepareSharedBound({
      settings,
      installationTag: undefined,
      dryRun: true,
      description: { engine: 'docker', cgroups: { manager: 'systemd', version: 2 } },
    });
    expect(keyless.unenforced).toContain(
      'systemctl set-property berth-{tag}.slice MemoryMax=2048M TasksMax=1000" ({tag} is named once the first sandbox is made',
    );

    // A file system the gateway cannot write (here: no cgroup files at all).
    const empty = mkdtempSync(path.join(os.tmpdir(), 'berth-cgroup-'));
    roots.push(empty);
    const unwritable = await prepareSharedBound({
      settings,
      installationTag: 'a1b2c3',
      cgroupRoot: empty,
      description: { engine: 'docker', cgroups: { manager: 'cgroupfs', version: 1 } },
    });
    expect(unwritable.parent).toBe('/berth-a1b2c3');
    expect(unwritable.unenforced).toMatch(/^could not write the shared bound's limits under .* \(ENOENT\): run the gateway as root/);
    for (const line of [engineWithout, none, systemd, unwritable].map((bound) => bound.unenforced!)) expect(line).not.toContain('\n');
  });
});
