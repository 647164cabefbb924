import { execFileSync, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { releaseDisksUnder } from '@berth/gateway-plugin';
import { startChildGateway } from './support/child-gateway.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ATTACK_IMAGE,
  docker,
  randomTelegramUser,
  removeContainersUnder,
  startAttackGateway,
  temporarySandboxDir,
  within,
  type AttackGateway,
} from './support/attack-gateway.js';

// What a gateway killed at the wrong moment leaves on the host, and what a pid that is alive
// again (reused, or pid 1 of a restarted gateway container) must not make Berth believe: each is
// cleared by the next start that needs it, and none blocks a user.

/** Loop devices whose backing file lies under `folder` (deleted ones included). */
function loopsUnder(folder: string): string[] {
  return readdirSync('/sys/block')
    .filter((name) => /^loop\d+$/.test(name))
    .flatMap((name) => {
      try {
        const backing = readFileSync(`/sys/block/${name}/loop/backing_file`, 'utf8').trim();
        return backing.startsWith(folder) ? [`/dev/${name} ${backing}`] : [];
      } catch {
        return [];
      }
    });
}

const mountsUnder = (folder: string): string[] =>
  readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .map((line) => line.split(' ')[4] ?? '')
    .filter((where) => where.startsWith(folder));

/** What a gateway killed in the middle of copying a user's files onto their new disk leaves: the new image on its staging folder, deleted. */
function leaveInterruptedCopy(disks: string, folderName: string): void {
  const base = path.join(disks, folderName);
  mkdirSync(disks, { recursive: true, mode: 0o700 });
  execFileSync('truncate', ['-s', '64M', `${base}.ext4.new`]);
  execFileSync('mkfs.ext4', ['-q', '-F', `${base}.ext4.new`]);
  mkdirSync(`${base}.mnt`, { mode: 0o700 });
  execFileSync('mount', ['-o', 'loop', `${base}.ext4.new`, `${base}.mnt`]);
  rmSync(`${base}.ext4.new`);
}

describe.each(['docker', 'podman'] as const)('leftovers on %s, with per-user disks', (backend) => {
  let gateway: AttackGateway;
  let disks: string;

  beforeAll(async () => {
    gateway = await startAttackGateway({ config: { backend, container_disk: 64, docker_network: false } });
    disks = path.join(gateway.sandboxDir, 'disks', 'docker');
  });

  afterAll(async () => {
    await gateway?.cleanup();
  });

  it("a copy onto a new disk interrupted by a killed gateway: the user's next start unmounts its staging mount and frees its loop device", async () => {
    const user = randomTelegramUser();
    const { folder, workspace } = gateway.folderOf(user);
    // Files from before the limit, and what the killed copy left.
    mkdirSync(workspace, { recursive: true, mode: 0o700 });
    writeFileSync(path.join(workspace, 'before.txt'), 'kept');
    leaveInterruptedCopy(disks, path.basename(folder));
    expect(loopsUnder(disks).some((loop) => loop.endsWith('.ext4.new (deleted)'))).toBe(true);
    expect((await gateway.run(user, 'cat /workspace/before.txt')).output).toBe('kept');
    expect(mountsUnder(`${path.join(disks, path.basename(folder))}.mnt`)).toEqual([]);
    expect(loopsUnder(disks).filter((loop) => loop.includes('(deleted)'))).toEqual([]);
  });

  it("a tree deeper than PATH_MAX, made before per-user disks were turned on, is copied onto the user's new disk whole, and their commands run", async () => {
    const sandboxDir = temporarySandboxDir('deep-disk');
    const user = randomTelegramUser();
    const before = await startAttackGateway({ sandboxDir, config: { backend, container_disk: 0, docker_network: false } });
    try {
      // 1500 folders one in another, nested from four chains made and moved by short paths (a shell's cd stops at PATH_MAX).
      const made = await before.run(
        user,
        'cd /workspace && p=$(i=0; while [ $i -lt 375 ]; do printf aaaa/; i=$((i+1)); done) && mkdir -p "acc/$p" && ' +
          'echo bottom > "acc/${p}f" && for k in 1 2 3; do mkdir -p "b/$p" && mv acc "b/$p" && mv b acc || exit 1; done; echo made',
        { timeout: 120 },
      );
      expect(made.output).toBe('made\n');
    } finally {
      await before.cleanup();
    }
    const after = await startAttackGateway({ sandboxDir, config: { backend, container_disk: 64, docker_network: false } });
    try {
      const seen = await after.run(user, "df -P /workspace | tail -1 | awk '{print $2}'", { timeout: 120 });
      // On its own disk of container_disk (64 MB, in 1 KiB blocks, less the file system's own).
      expect(Number(seen.output.trim())).toBeLessThan(70_000);
      // All of it, to the bottom (GNU find walks by descriptors, and -execdir reads the file from its own folder).
      const { workspace } = after.folderOf(user);
      expect(execFileSync('sh', ['-c', 'find "$1" -type d -name aaaa | wc -l', 'sh', workspace]).toString().trim()).toBe('1500');
      // (-execdir refuses a PATH with relative folders in it, as a test runner's may have.)
      expect(execFileSync('find', [workspace, '-name', 'f', '-execdir', 'cat', '{}', ';'], { env: { PATH: '/usr/bin:/bin' } }).toString()).toBe('bottom\n');
      expect((await after.run(user, 'echo again')).output).toBe('again\n');
    } finally {
      await after.cleanup();
      await releaseDisksUnder(sandboxDir);
      // GNU rm walks by descriptors, so a tree past PATH_MAX goes too.
      execFileSync('rm', ['-rf', '--', sandboxDir]);
    }
  });

  it('releaseDisksUnder, for tools that delete a whole root, clears such leftovers too', async () => {
    const root = temporarySandboxDir('leftovers');
    try {
      const where = path.join(root, 'disks', 'docker');
      leaveInterruptedCopy(where, 'telegram@1');
      await releaseDisksUnder(root);
      expect({ mounts: mountsUnder(root), loops: loopsUnder(root) }).toEqual({ mounts: [], loops: [] });
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  it("a disk lock file naming a pid that is alive (pid 1, say) blocks no one: locks are the kernel's, released when their holder dies", async () => {
    const user = randomTelegramUser();
    mkdirSync(disks, { recursive: true, mode: 0o700 });
    writeFileSync(path.join(disks, `${path.basename(gateway.folderOf(user).folder)}.lock`), '1');
    const answer = await within(60_000, 'the first command of a user with a planted lock', gateway.run(user, 'echo in'));
    expect(answer.output).toBe('in\n');
  });

  it("the FIFOs of a gateway that is gone, named after a pid that is alive again, are removed at the user's next shell", async () => {
    const user = randomTelegramUser();
    await gateway.run(user, 'echo first');
    const channels = path.join(gateway.folderOf(user).folder, '.berth-channels');
    const planted = ['00000001deadbeef.in', '00000001deadbeef.out', '00000001deadbeef.err'].map((name) => path.join(channels, name));
    execFileSync('mkfifo', ['-m', '600', ...planted]);
    const past = new Date(Date.now() - 60_000);
    for (const file of planted) utimesSync(file, past, past);
    // A job left holding the session's output retires it: the next command opens a new shell.
    await gateway.run(user, '(sleep 2 &); echo left');
    expect((await gateway.run(user, 'echo next')).output).toBe('next\n');
    expect(readdirSync(channels).filter((name) => name.startsWith('00000001'))).toEqual([]);
  });
});

describe('spare networks of killed gateways (Docker)', () => {
  const sandboxDir = temporarySandboxDir('spares');
  const config = { docker_image: ATTACK_IMAGE, sandbox_dir: sandboxDir, container_memory: 128, lifetime_seconds: 0, timeout: 60 };
  const children: ChildProcessWithoutNullStreams[] = [];
  /** The gateway children's pids, in the order they started. */
  const pids = (): number[] => children.map((child) => child.pid!);

  afterAll(async () => {
    for (const child of children) child.kill('SIGKILL');
    await removeContainersUnder(sandboxDir);
    for (const network of await networksOf(pids()))
      await docker
        .getNetwork(network.Id)
        .remove()
        .catch(() => undefined);
    // The gateways' users got disks of their own (container_disk's default): unmounted first.
    await releaseDisksUnder(sandboxDir);
    rmSync(sandboxDir, { recursive: true, force: true });
  });

  /** Berth's networks made by these processes (the maker's pid is in its label). */
  async function networksOf(makers: number[]) {
    const all = await docker.listNetworks({ filters: { label: ['dev.berth.managed-by=berth'] } });
    return all.filter((network) => makers.some((pid) => (network.Labels?.['dev.berth.maker'] ?? '').split('.')[2] === String(pid)));
  }

  const startChild = async () => {
    const gateway = await startChildGateway(config, children);
    return { ...gateway, run: (userId: string, command: string) => gateway.send({ platform: 'telegram', userId, command }) };
  };

  it("a killed gateway's spare network is removed by the next gateway that makes one, not left for ten minutes", async () => {
    for (let round = 0; round < 3; round++) {
      const gateway = await startChild();
      expect(await gateway.run(randomTelegramUser().userId.toString(), 'echo up')).toMatchObject({ output: 'up\n' });
      // The spare made ahead for the next new user, then the gateway killed.
      let spares: unknown[] = [];
      for (let wait = 0; wait < 100 && spares.length < 2; wait++) {
        spares = await networksOf([gateway.process.pid!]);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect(spares).toHaveLength(2);
      await gateway.kill();
    }
    const last = await startChild();
    expect(await last.run(randomTelegramUser().userId.toString(), 'echo up')).toMatchObject({ output: 'up\n' });
    const dead = pids().slice(0, -1);
    // Each dead gateway's own sandbox keeps its network; their spares go.
    let left: unknown[] = [];
    for (let wait = 0; wait < 100; wait++) {
      left = await networksOf(dead);
      if (left.length === dead.length) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(left).toHaveLength(dead.length);
  });
});
