import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { defaultConfigPath } from './config.js';
import { disksFolderOf, hermesHome, resolveSandboxDir, sandboxRootOf } from './host-layout.js';
import { resolveSandboxPaths } from './sandbox-paths.js';
import type { SandboxScope } from './scope.js';

describe('the host layout', () => {
  it('reads a leading ~ in HERMES_HOME as the home folder, as the Python bridge does', () => {
    expect(hermesHome({ HERMES_HOME: '~/profiles/work', HOME: '/home/u' })).toBe('/home/u/profiles/work');
    expect(hermesHome({ HERMES_HOME: '~', HOME: '/home/u' })).toBe('/home/u');
    expect(hermesHome({ HERMES_HOME: '/srv/hermes', HOME: '/home/u' })).toBe('/srv/hermes');
    expect(hermesHome({ HOME: '/home/u' })).toBe('/home/u/.hermes');
    expect(defaultConfigPath({ HERMES_HOME: '~/h', HOME: '/home/u' })).toBe('/home/u/h/config.yaml');
    expect(resolveSandboxDir(undefined, { HERMES_HOME: '~/h', HOME: '/home/u' })).toBe('/home/u/h/sandboxes');
  });

  it('puts scope folders under {sandbox_dir}/docker and their disks under {sandbox_dir}/disks/docker', () => {
    const root = sandboxRootOf('/srv/sandboxes');
    expect(root).toBe(path.resolve('/srv/sandboxes/docker'));
    expect(disksFolderOf(root)).toBe(path.resolve('/srv/sandboxes/disks/docker'));
    const scope = { key: 'user:telegram:1', folderName: 'telegram@1' } as SandboxScope;
    expect(resolveSandboxPaths(scope, '/srv/sandboxes').root).toBe(root);
  });
});
