import { chmod, mkdir, mkdtemp, readdir, rm, stat, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { PathEscapeError, type SandboxPaths } from '@berth/core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { prepareHostFolders } from './host-folders.js';

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

  it('refuses a link at the channel folder, and makes nothing where it points', async () => {
    const outside = path.join(base, 'outside');
    await mkdir(outside);
    const paths = pathsOf(path.join(base, 'docker'), 'telegram@1');
    await mkdir(paths.folder, { recursive: true });
    await symlink(outside, path.join(paths.folder, '.berth-channels'));
    await expect(prepareHostFolders(paths)).rejects.toBeInstanceOf(PathEscapeError);
    expect(await readdir(outside)).toEqual([]);
  });

  it("refuses paths not directly inside the root, and names that are Berth's own", async () => {
    await expect(prepareHostFolders(pathsOf(path.join(base, 'docker'), '.berth-locks'))).rejects.toBeInstanceOf(PathEscapeError);
    const root = path.join(base, 'docker');
    await expect(prepareHostFolders({ ...pathsOf(root, 'x'), folder: path.join(root, 'a', 'b') })).rejects.toBeInstanceOf(PathEscapeError);
  });
});
