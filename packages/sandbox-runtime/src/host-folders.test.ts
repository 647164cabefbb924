import { chmod, lstat, mkdir, mkdtemp, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { PathEscapeError, type SandboxPaths } from '@berth/core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { prepareHostFolders, purgeHostFolders } from './host-folders.js';

let base: string;
const pathsOf = (root: string, name: string): SandboxPaths => {
  const folder = path.join(root, name);
  return { sandboxDir: path.dirname(root), root, folder, workspace: path.join(folder, 'workspace'), home: path.join(folder, 'home') };
};

beforeEach(async () => {
  base = await mkdtemp(path.join(tmpdir(), 'berth-folders-'));
});
afterEach(async () => {
  await chmod(base, 0o700).catch(() => undefined);
  await rm(base, { recursive: true, force: true });
});

describe('prepareHostFolders', () => {
  it('creates owner-only folders', async () => {
    const paths = pathsOf(path.join(base, 'docker'), 'telegram@1');
    await prepareHostFolders(paths);
    for (const folder of [paths.folder, paths.workspace, paths.home]) expect((await stat(folder)).mode & 0o777).toBe(0o700);
  });

  it('refuses a symbolic link at the scope folder, the workspace or the home', async () => {
    const outside = path.join(base, 'outside');
    await mkdir(outside);
    for (const which of ['folder', 'workspace', 'home'] as const) {
      const root = path.join(base, `docker-${which}`);
      const paths = pathsOf(root, 'telegram@1');
      await mkdir(which === 'folder' ? root : paths.folder, { recursive: true });
      await symlink(outside, paths[which]);
      await expect(prepareHostFolders(paths)).rejects.toBeInstanceOf(PathEscapeError);
    }
  });

  it('refuses paths not directly inside the root', async () => {
    const root = path.join(base, 'docker');
    await expect(prepareHostFolders({ ...pathsOf(root, 'x'), folder: path.join(root, 'a', 'b') })).rejects.toBeInstanceOf(PathEscapeError);
  });
});

describe('purgeHostFolders', () => {
  it('deletes the scope folder but not what a planted link points to', async () => {
    const root = path.join(base, 'docker');
    const paths = pathsOf(root, 'telegram@1');
    const neighbour = pathsOf(root, 'telegram@2');
    await prepareHostFolders(paths);
    await prepareHostFolders(neighbour);
    const outside = path.join(base, 'precious');
    await mkdir(outside);
    await writeFile(path.join(outside, 'keep.txt'), 'keep me');
    await writeFile(path.join(neighbour.workspace, 'n.txt'), 'neighbour');
    await symlink(outside, path.join(paths.workspace, 'escape'));
    await symlink(path.join(outside, 'keep.txt'), path.join(paths.home, 'file-link'));
    await purgeHostFolders(paths);
    await expect(lstat(paths.folder)).rejects.toMatchObject({ code: 'ENOENT' });
    expect(await readFile(path.join(outside, 'keep.txt'), 'utf8')).toBe('keep me');
    expect(await readFile(path.join(neighbour.workspace, 'n.txt'), 'utf8')).toBe('neighbour');
  });

  it('unlinks a scope folder that is itself a link, leaving its target', async () => {
    const root = path.join(base, 'docker');
    await mkdir(root, { recursive: true });
    const outside = path.join(base, 'precious');
    await mkdir(outside);
    await writeFile(path.join(outside, 'keep.txt'), 'keep me');
    const paths = pathsOf(root, 'telegram@1');
    await symlink(outside, paths.folder);
    await purgeHostFolders(paths);
    expect(await readFile(path.join(outside, 'keep.txt'), 'utf8')).toBe('keep me');
  });

  it('refuses a folder outside the root', async () => {
    const root = path.join(base, 'docker');
    await expect(purgeHostFolders({ ...pathsOf(root, 'x'), folder: base, workspace: path.join(base, 'workspace'), home: path.join(base, 'home') })).rejects.toBeInstanceOf(PathEscapeError);
    await expect(stat(base)).resolves.toBeTruthy();
  });
});
