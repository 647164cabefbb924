import { execFileSync, spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { closeQuietly, openFolder } from './folder-descriptor.js';
import { removeTree } from './remove-tree.js';

/** Makes, in the folder named by its argument, 1500 folders one in another (7500 bytes of path) and a file at the bottom. */
const DEEP_TREE =
  "const fs = require('fs'); fs.mkdirSync(process.argv[1], { recursive: true }); process.chdir(process.argv[1]); for (let i = 0; i < 1500; i++) { " +
  "fs.mkdirSync('aaaa'); process.chdir('aaaa'); } fs.writeFileSync('f', 'bottom')";

const folders: string[] = [];
afterEach(() => {
  for (const folder of folders.splice(0)) {
    execFileSync('chmod', ['-R', 'u+rwx', folder]);
    rmSync(folder, { recursive: true, force: true });
  }
});

function base(): string {
  const folder = mkdtempSync(path.join(tmpdir(), 'berth-remove-tree-'));
  folders.push(folder);
  return folder;
}

async function remove(parent: string, name: string) {
  const fd = openFolder(parent, 'the test folder');
  try {
    return await removeTree(fd, name);
  } finally {
    closeQuietly(fd);
  }
}

/** A folder with files, an absolute and a relative link to another folder, and a link to a file. */
function precious(at: string): { folder: string; file: string } {
  const folder = path.join(at, 'precious');
  mkdirSync(folder);
  writeFileSync(path.join(folder, 'keep.txt'), 'keep me');
  return { folder, file: path.join(folder, 'keep.txt') };
}

describe('removeTree', () => {
  it('deletes a tree and its links, never what the links point to', async () => {
    const at = base();
    const outside = precious(at);
    const tree = path.join(at, 'tree');
    mkdirSync(path.join(tree, 'a', 'b'), { recursive: true });
    writeFileSync(path.join(tree, 'a', 'b', 'f'), 'x');
    symlinkSync(outside.folder, path.join(tree, 'a', 'absolute'));
    symlinkSync('../../precious', path.join(tree, 'a', 'relative'));
    symlinkSync(outside.file, path.join(tree, 'file-link'));
    execFileSync('mkfifo', [path.join(tree, 'a', 'fifo')]);
    const report = await remove(at, 'tree');
    expect(report).toMatchObject({ leftCount: 0 });
    expect(existsSync(tree)).toBe(false);
    expect(readFileSync(outside.file, 'utf8')).toBe('keep me');
    expect(readdirSync(outside.folder)).toEqual(['keep.txt']);
  });

  it('deletes a tree deeper than PATH_MAX', async () => {
    const at = base();
    // 1500 levels of "aaaa/": 7500 bytes of path, past Linux's 4096, which path-based deletion cannot reach.
    execFileSync(process.execPath, ['-e', DEEP_TREE, 'tree'], { cwd: at });
    const report = await remove(at, 'tree');
    expect(report).toMatchObject({ leftCount: 0 });
    expect(readdirSync(at)).toEqual([]);
  });

  it('never follows a folder swapped for a link while it walks', async () => {
    const at = base();
    const outside = precious(at);
    for (let i = 0; i < 40; i++) writeFileSync(path.join(outside.folder, `victim-${i}`), 'v');
    const tree = path.join(at, 'tree');
    // Many folders of many files, each swapped for a link to the precious folder over and over
    // by another process while the walk runs (what a sandbox's user can do to its own files).
    // `ln -n`: a second `ln -s` onto a link to a folder would make the link inside the precious
    // folder itself (the swapper's own doing, not the walk's; seen as a stray `precious` there).
    for (let d = 0; d < 20; d++) {
      mkdirSync(path.join(tree, `d${d}`), { recursive: true });
      for (let f = 0; f < 300; f++) writeFileSync(path.join(tree, `d${d}`, `f${f}`), '');
    }
    const swapper = spawn(
      'sh',
      [
        '-c',
        `while :; do for d in $(seq 0 19); do mv -T d$d x$d 2>/dev/null && ln -sn ${outside.folder} d$d 2>/dev/null; rm -f d$d 2>/dev/null; mv -T ` +
          `x$d d$d 2>/dev/null; ln -sn ${outside.folder} l$d 2>/dev/null; done; done`,
      ],
      { cwd: tree, stdio: 'ignore' },
    );
    try {
      await remove(at, 'tree');
    } finally {
      swapper.kill('SIGKILL');
    }
    expect(readdirSync(outside.folder).sort()).toEqual(['keep.txt', ...Array.from({ length: 40 }, (_, i) => `victim-${i}`)].sort());
    expect(readFileSync(outside.file, 'utf8')).toBe('keep me');
  });

  it.runIf(process.getuid?.() === 0)('leaves a mount point inside the tree, and says so', async () => {
    const at = base();
    const mounted = path.join(at, 'tree', 'mounted');
    mkdirSync(mounted, { recursive: true });
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'berth-test', mounted]);
    try {
      writeFileSync(path.join(mounted, 'other.txt'), 'not in the tree');
      const report = await remove(at, 'tree');
      expect(report.leftCount).toBe(1);
      expect(report.left[0]).toMatch(/^tree\/mounted \(a mount point/);
      expect(readFileSync(path.join(mounted, 'other.txt'), 'utf8')).toBe('not in the tree');
    } finally {
      execFileSync('umount', [mounted]);
    }
  });

  it.runIf(process.getuid?.() !== 0)('empties folders of its own that a sandbox made unreadable and unwritable', async () => {
    const at = base();
    const locked = path.join(at, 'tree', 'locked', 'deeper');
    mkdirSync(locked, { recursive: true });
    writeFileSync(path.join(locked, 'f'), 'x');
    chmodSync(locked, 0);
    chmodSync(path.dirname(locked), 0o500);
    const report = await remove(at, 'tree');
    expect(report).toMatchObject({ leftCount: 0 });
    expect(existsSync(path.join(at, 'tree'))).toBe(false);
  });

  it('deletes a single file or link, and nothing when the name is gone', async () => {
    const at = base();
    const outside = precious(at);
    symlinkSync(outside.folder, path.join(at, 'link'));
    expect(await remove(at, 'link')).toMatchObject({ removed: 1, leftCount: 0 });
    expect(await remove(at, 'missing')).toMatchObject({ removed: 0, leftCount: 0 });
    expect(readdirSync(outside.folder)).toEqual(['keep.txt']);
  });
});
