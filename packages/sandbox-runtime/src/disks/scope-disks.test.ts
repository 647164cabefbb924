import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createPlatformRegistry, createSandboxResolver, parseTerminalConfig, type SandboxPaths } from '@berth/core';
import { afterEach, describe, expect, it } from 'vitest';
import { createScopeDisks, diskUnenforcedReason, releaseDisksUnder } from './scope-disks.js';
import { lockScope } from '../host-files/scope-lock.js';

// Real loop devices and real ext4 file systems, no engine: what the disk logic does to the
// host's folders. Mounting needs root; CI runs as root. Elsewhere these are skipped, and
// diskUnenforcedReason says the same to the operator (tested below either way).
const root = process.getuid?.() === 0 && diskUnenforcedReason(64, true) === undefined;

const folders: string[] = [];
afterEach(async () => {
  for (const folder of folders.splice(0)) {
    await releaseDisksUnder(folder);
    rmSync(folder, { recursive: true, force: true });
  }
});

function pathsOf(userId: string, sandboxDir?: string): SandboxPaths {
  const dir = sandboxDir ?? mkdtempSync(path.join(tmpdir(), 'berth-disks-'));
  if (!sandboxDir) folders.push(dir);
  const config = parseTerminalConfig({ sandbox_dir: dir });
  return createSandboxResolver({ config, registry: createPlatformRegistry(), environment: {} }).resolve({ session: { platform: 'telegram', userId } }).paths;
}

/** Writes `mb` megabytes into `file` from the host, returning how far it got and the error. */
function fill(file: string, mb: number): { written: number; error: string } {
  try {
    execFileSync('dd', ['if=/dev/zero', `of=${file}`, 'bs=1M', `count=${mb}`], { stdio: 'pipe' });
    return { written: statSync(file).size, error: '' };
  } catch (error) {
    return { written: existsSync(file) ? statSync(file).size : 0, error: String((error as { stderr?: Buffer }).stderr ?? error) };
  }
}

const isMountPoint = (folder: string): boolean =>
  readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .some((line) => line.split(' ')[4] === folder);

describe('diskUnenforcedReason', () => {
  it('says why the limit cannot hold for a gateway that is not root, and nothing for 0 or drivers without host folders', () => {
    expect(diskUnenforcedReason(0, true)).toBeUndefined();
    expect(diskUnenforcedReason(1024, false)).toBeUndefined();
    const reason = diskUnenforcedReason(1024, true);
    if (process.getuid?.() !== 0) expect(reason).toMatch(/terminal\.container_disk is not enforced: mounting a per-user disk needs root/);
    else expect(reason).toBeUndefined();
  });
});

describe.skipIf(!root)('scope disks (root: real loop devices)', () => {
  it('gives each scope a disk of container_disk MB: one user fills theirs, another keeps writing', async () => {
    const disks = createScopeDisks({ limitMb: 64, engine: 'docker', hostFolders: true });
    const alice = pathsOf('1');
    const bob = pathsOf('2', alice.root.replace(/\/docker$/, ''));
    for (const paths of [alice, bob]) {
      await disks.ensure(paths);
      mkdirSync(paths.workspace, { recursive: true });
      mkdirSync(paths.home, { recursive: true });
    }
    expect(isMountPoint(alice.folder)).toBe(true);
    expect(statSync(alice.folder).mode & 0o777).toBe(0o700);
    const filled = fill(path.join(alice.workspace, 'big'), 200);
    expect(filled.error).toMatch(/No space left on device/);
    expect(filled.written).toBeLessThanOrEqual(64 * 1024 * 1024);
    // Workspace and home share the one limit.
    expect(fill(path.join(alice.home, 'more'), 8).error).toMatch(/No space left on device/);
    expect(fill(path.join(bob.workspace, 'ok'), 16)).toEqual({ written: 16 * 1024 * 1024, error: '' });
    expect(disks.usage(alice.folder)).toEqual({ usedMb: expect.any(Number), limitMb: 64 });
    expect(disks.usage(alice.folder)!.usedMb).toBeGreaterThan(50);
    // Mounted again (a second runtime, a restart): the same disk, the files still there.
    await disks.release(alice);
    expect(isMountPoint(alice.folder)).toBe(false);
    await createScopeDisks({ limitMb: 64, engine: 'docker', hostFolders: true }).ensure(alice);
    expect(statSync(path.join(alice.workspace, 'big')).size).toBe(filled.written);
  });

  it('moves the files a folder had before the limit onto the new disk, and refuses (changing nothing) when they do not fit', async () => {
    const paths = pathsOf('3');
    mkdirSync(paths.workspace, { recursive: true, mode: 0o700 });
    writeFileSync(path.join(paths.workspace, 'notes.txt'), 'kept\n', { mode: 0o640 });
    writeFileSync(path.join(paths.workspace, 'blob'), Buffer.alloc(40 * 1024 * 1024, 1));
    const small = createScopeDisks({ limitMb: 32, engine: 'docker', hostFolders: true });
    await expect(small.ensure(paths)).rejects.toMatchObject({
      code: 'DISK_TOO_SMALL',
      message: expect.stringMatching(/do not fit in terminal\.container_disk \(32 MB\).*nothing was changed/),
    });
    expect(isMountPoint(paths.folder)).toBe(false);
    expect(readFileSync(path.join(paths.workspace, 'notes.txt'), 'utf8')).toBe('kept\n');
    expect(existsSync(path.join(path.dirname(paths.root), 'disks', 'docker', 'telegram@3.ext4'))).toBe(false);

    await createScopeDisks({ limitMb: 128, engine: 'docker', hostFolders: true }).ensure(paths);
    expect(isMountPoint(paths.folder)).toBe(true);
    expect(readFileSync(path.join(paths.workspace, 'notes.txt'), 'utf8')).toBe('kept\n');
    expect(statSync(path.join(paths.workspace, 'notes.txt')).mode & 0o777).toBe(0o640);
    expect(statSync(path.join(paths.workspace, 'blob')).size).toBe(40 * 1024 * 1024);
    // The old copy under the mount is gone: it would take the host's disk unseen.
    await releaseDisksUnder(path.dirname(paths.root));
    expect(existsSync(path.join(paths.workspace, 'notes.txt'))).toBe(false);
  });

  it('follows container_disk up and down, keeping the files', async () => {
    const paths = pathsOf('4');
    await createScopeDisks({ limitMb: 64, engine: 'docker', hostFolders: true }).ensure(paths);
    mkdirSync(paths.workspace, { recursive: true });
    writeFileSync(path.join(paths.workspace, 'a'), 'a\n');
    const grown = createScopeDisks({ limitMb: 128, engine: 'docker', hostFolders: true });
    await grown.ensure(paths);
    expect(grown.usage(paths.folder)!.limitMb).toBe(128);
    expect(fill(path.join(paths.workspace, 'big'), 96).error).toBe('');
    rmSync(path.join(paths.workspace, 'big'));
    const shrunk = createScopeDisks({ limitMb: 48, engine: 'docker', hostFolders: true });
    await shrunk.ensure(paths);
    expect(shrunk.usage(paths.folder)!.limitMb).toBe(48);
    expect(readFileSync(path.join(paths.workspace, 'a'), 'utf8')).toBe('a\n');
  });

  it("makes one disk when two runtimes prepare the same scope at once, each under the scope's lock as acquire takes it, and purge deletes it", async () => {
    const paths = pathsOf('5');
    const first = createScopeDisks({ limitMb: 64, engine: 'docker', hostFolders: true });
    const second = createScopeDisks({ limitMb: 64, engine: 'docker', hostFolders: true });
    const locked = async (task: () => Promise<void>): Promise<void> => {
      const lock = await lockScope(paths, { waitMs: 60_000, purpose: 'test' });
      try {
        await task();
      } finally {
        lock.release();
      }
    };
    await Promise.all([locked(() => first.ensure(paths)), locked(() => second.ensure(paths)), locked(() => first.ensure(paths))]);
    const stacked = readFileSync('/proc/self/mountinfo', 'utf8')
      .split('\n')
      .filter((line) => line.split(' ')[4] === paths.folder);
    expect(stacked).toHaveLength(1);
    await first.purge(paths);
    expect(isMountPoint(paths.folder)).toBe(false);
    expect(existsSync(path.join(path.dirname(paths.root), 'disks', 'docker', 'telegram@5.ext4'))).toBe(false);
  });

  it('gives a new user the spare disk made ahead, made again after, and never one of another size', async () => {
    const alice = pathsOf('7');
    const sandboxDir = alice.root.replace(/\/docker$/, '');
    const disksFolder = path.join(sandboxDir, 'disks', 'docker');
    const spare = path.join(disksFolder, '.spare.ext4');
    const until = async (what: () => boolean): Promise<void> => {
      for (let wait = 0; wait < 100 && !what(); wait++) await new Promise((resolve) => setTimeout(resolve, 50));
      expect(what()).toBe(true);
    };
    // What a process that died making a spare left.
    const dead = execFileSync('sh', ['-c', 'echo $$']).toString().trim();
    mkdirSync(disksFolder, { recursive: true });
    const leftover = path.join(disksFolder, `.spare.ext4.new-${dead}-00000000`);
    writeFileSync(leftover, 'half made');
    const disks = createScopeDisks({ limitMb: 64, engine: 'docker', hostFolders: true });
    await disks.ensure(alice);
    await until(() => existsSync(spare));
    expect(existsSync(leftover)).toBe(false);
    const made = statSync(spare).ino;
    const bob = pathsOf('8', sandboxDir);
    await disks.ensure(bob);
    expect(statSync(path.join(disksFolder, 'telegram@8.ext4')).ino).toBe(made);
    expect(disks.usage(bob.folder)).toMatchObject({ limitMb: 64 });
    mkdirSync(bob.workspace, { recursive: true });
    writeFileSync(path.join(bob.workspace, 'b'), 'b\n');
    expect(execFileSync('ls', ['-A', bob.folder]).toString()).toBe('workspace\n');
    // The next spare, a new file.
    await until(() => existsSync(spare) && statSync(spare).ino !== made);
    const smaller = createScopeDisks({ limitMb: 32, engine: 'docker', hostFolders: true });
    const carol = pathsOf('9', sandboxDir);
    await smaller.ensure(carol);
    expect(smaller.usage(carol.folder)).toMatchObject({ limitMb: 32 });
    await until(() => existsSync(spare) && statSync(spare).size === 32 * 1024 * 1024);
  });

  it('does nothing with container_disk 0, or for a driver without host folders', async () => {
    const paths = pathsOf('6');
    mkdirSync(paths.folder, { recursive: true });
    await createScopeDisks({ limitMb: 0, engine: 'docker', hostFolders: true }).ensure(paths);
    await createScopeDisks({ limitMb: 64, engine: 'kubernetes', hostFolders: false }).ensure(paths);
    expect(isMountPoint(paths.folder)).toBe(false);
  });
});
