import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { SandboxPaths } from '@berth/core';
import { afterEach, describe, expect, it } from 'vitest';
import { prepareHostFolders } from './host-folders.js';
import { finishInterruptedPurge, isBeingPurged, purgeScope, tombstoneOf } from './purge-scope.js';
import { createScopeDisks } from '../disks/scope-disks.js';
import { lockFileOf, lockScope } from './scope-lock.js';

const folders: string[] = [];
afterEach(() => {
  for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true });
});

function setUp() {
  const sandboxDir = mkdtempSync(path.join(tmpdir(), 'berth-purge-'));
  folders.push(sandboxDir);
  const root = path.join(sandboxDir, 'docker');
  const pathsOf = (name: string): SandboxPaths => {
    const folder = path.join(root, name);
    return { sandboxDir, root, folder, workspace: path.join(folder, 'workspace'), home: path.join(folder, 'home') };
  };
  return { sandboxDir, root, pathsOf };
}

// Without per-user disks (container_disk: 0): the case every non-root and rootless gateway is in.
const disks = createScopeDisks({ limitMb: 0, engine: 'test', hostFolders: true });

describe('purgeScope', () => {
  it("deletes the scope's files and its bookkeeping, never what its links point to nor a neighbour's", async () => {
    const { sandboxDir, pathsOf } = setUp();
    const paths = pathsOf('telegram@1');
    const neighbour = pathsOf('telegram@2');
    await prepareHostFolders(paths);
    await prepareHostFolders(neighbour);
    writeFileSync(path.join(neighbour.workspace, 'n.txt'), 'neighbour');
    const outside = path.join(sandboxDir, 'precious');
    mkdirSync(outside);
    writeFileSync(path.join(outside, 'keep.txt'), 'keep me');
    symlinkSync(outside, path.join(paths.workspace, 'escape'));
    symlinkSync(neighbour.workspace, path.join(paths.home, 'next-door'));
    symlinkSync(path.join(outside, 'keep.txt'), path.join(paths.home, 'file-link'));
    await lockScope(paths, { waitMs: 0, purpose: 'test' }).then((lock) => lock.release());
    let tombstoneFirst = false;
    await purgeScope({
      paths,
      disks,
      removeSandboxes: async () => {
        tombstoneFirst = isBeingPurged(paths);
      },
    });
    expect(tombstoneFirst).toBe(true);
    expect(existsSync(paths.folder)).toBe(false);
    expect(isBeingPurged(paths)).toBe(false);
    expect(existsSync(lockFileOf(paths))).toBe(false);
    expect(readFileSync(path.join(outside, 'keep.txt'), 'utf8')).toBe('keep me');
    expect(readFileSync(path.join(neighbour.workspace, 'n.txt'), 'utf8')).toBe('neighbour');
  });

  it('refuses at once, to anyone honouring the lock, to start the scope while it is purged', async () => {
    const { pathsOf } = setUp();
    const paths = pathsOf('telegram@1');
    await prepareHostFolders(paths);
    let refusal: unknown;
    await purgeScope({
      paths,
      disks,
      removeSandboxes: async () => {
        refusal = await lockScope(paths, {
          waitMs: 60_000,
          purpose: 'start it',
          giveUp: () => (isBeingPurged(paths) ? new Error('being purged') : undefined),
        }).catch((error: unknown) => error);
      },
    });
    expect(refusal).toMatchObject({ message: 'being purged' });
  });

  it.runIf(process.getuid?.() === 0)('says what it could not delete, keeps it out of reach, and finishes on the next purge', async () => {
    const { pathsOf } = setUp();
    const paths = pathsOf('telegram@1');
    await prepareHostFolders(paths);
    writeFileSync(path.join(paths.workspace, 'gone.txt'), 'x');
    const mounted = path.join(paths.workspace, 'mounted');
    mkdirSync(mounted);
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'berth-test', mounted]);
    const where = (): string =>
      readFileSync('/proc/self/mountinfo', 'utf8')
        .split('\n')
        .map((line) => line.split(' ')[4] ?? '')
        .find((line) => line.endsWith('/workspace/mounted') && line.startsWith(paths.root)) ?? mounted;
    try {
      const failure = await purgeScope({ paths, disks, removeSandboxes: async () => undefined }).catch((error: unknown) => error);
      expect(failure).toMatchObject({ code: 'PURGE_INCOMPLETE' });
      expect((failure as Error).message).toMatch(/1 of its files could not be deleted .*a mount point/);
      expect(existsSync(paths.folder)).toBe(false);
      expect(isBeingPurged(paths)).toBe(true);
      expect(where().startsWith(tombstoneOf(paths))).toBe(true);
    } finally {
      execFileSync('umount', [where()]);
    }
    await purgeScope({ paths, disks, removeSandboxes: async () => undefined });
    expect(isBeingPurged(paths)).toBe(false);
    expect(readdirSync(paths.root).filter((entry) => !entry.startsWith('.'))).toEqual([]);
  });

  it('a purge that was interrupted is finished before the scope is made again', async () => {
    const { pathsOf } = setUp();
    const paths = pathsOf('telegram@1');
    // What a killed `berth rm --purge` leaves: the files moved into the tombstone, half deleted.
    const left = path.join(tombstoneOf(paths), 'files-0badc0de', 'workspace', 'deep');
    mkdirSync(left, { recursive: true });
    writeFileSync(path.join(left, 'old.txt'), 'old');
    expect(isBeingPurged(paths)).toBe(true);
    await finishInterruptedPurge(paths);
    expect(isBeingPurged(paths)).toBe(false);
    await prepareHostFolders(paths);
    expect(readdirSync(paths.workspace)).toEqual([]);
  });
});
