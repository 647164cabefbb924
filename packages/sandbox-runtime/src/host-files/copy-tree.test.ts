import { execFileSync } from 'node:child_process';
import { lstatSync, mkdirSync, mkdtempSync, readFileSync, readlinkSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { copyTree } from './copy-tree.js';

/** Makes, in the folder named by its argument, 1500 folders one in another (7500 bytes of path) and a file at the bottom. */
const DEEP_TREE =
  "const fs = require('fs'); fs.mkdirSync(process.argv[1], { recursive: true }); process.chdir(process.argv[1]); for (let i = 0; i < 1500; i++) { " +
  "fs.mkdirSync('aaaa'); process.chdir('aaaa'); } fs.writeFileSync('f', 'bottom')";

const folders: string[] = [];
afterEach(() => {
  for (const folder of folders.splice(0)) execFileSync('rm', ['-rf', '--', folder]);
});

function pair(): { source: string; target: string } {
  const base = mkdtempSync(path.join(tmpdir(), 'berth-copy-tree-'));
  folders.push(base);
  mkdirSync(path.join(base, 'source'));
  mkdirSync(path.join(base, 'target'));
  return { source: path.join(base, 'source'), target: path.join(base, 'target') };
}

describe('copyTree', () => {
  it('copies as cp -a does: links as links, FIFOs made again, sparse files sparse, modes kept', async () => {
    const { source, target } = pair();
    mkdirSync(path.join(source, 'sub'), { mode: 0o750 });
    writeFileSync(path.join(source, 'sub', 'f'), 'data', { mode: 0o640 });
    symlinkSync('/etc/passwd', path.join(source, 'link'));
    execFileSync('mkfifo', [path.join(source, 'fifo')]);
    execFileSync('truncate', ['-s', '1G', path.join(source, 'sparse')]);
    await copyTree(source, target);
    expect(readFileSync(path.join(target, 'sub', 'f'), 'utf8')).toBe('data');
    expect(statSync(path.join(target, 'sub', 'f')).mode & 0o777).toBe(0o640);
    expect(statSync(path.join(target, 'sub')).mode & 0o777).toBe(0o750);
    expect(readlinkSync(path.join(target, 'link'))).toBe('/etc/passwd');
    expect(lstatSync(path.join(target, 'fifo')).isFIFO()).toBe(true);
    expect(statSync(path.join(target, 'sparse')).size).toBe(2 ** 30);
    expect(statSync(path.join(target, 'sparse')).blocks).toBeLessThan(64);
  });

  it('copies a tree deeper than PATH_MAX, which cp alone cannot', async () => {
    const { source, target } = pair();
    execFileSync(process.execPath, ['-e', DEEP_TREE, '.'], { cwd: source });
    await copyTree(source, target);
    const depth = execFileSync(
      process.execPath,
      ['-e', "let n = 0; while (require('fs').existsSync('aaaa')) { process.chdir('aaaa'); n++; } console.log(n, require('fs').readFileSync('f', 'utf8'))"],
      { cwd: target },
    ).toString();
    expect(depth).toBe('1500 bottom\n');
    // 1500 levels made, copied and walked: over 20 s with both cores taken by other work.
  }, 180_000);

  it('says why when it is not a path too long (a full disk, say)', async () => {
    const { source, target } = pair();
    writeFileSync(path.join(source, 'f'), 'x');
    rmSync(target, { recursive: true });
    await expect(copyTree(source, target)).rejects.toThrow();
  });
});
