import { existsSync, mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { defaultConfigPath } from './config.js';
import { ConfigError } from './errors.js';
import { disksFolderOf, expandHome, hermesHome, resolveSandboxDir, sandboxRootOf } from './host-layout.js';
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

  it("reads ~ alone or before / as the home folder ($HOME, else the account's), and leaves every other path as it is", () => {
    expect(expandHome('~/.kube/config', { HOME: '/home/u' })).toBe('/home/u/.kube/config');
    expect(expandHome('~', { HOME: '/home/u' })).toBe('/home/u');
    expect(expandHome('~/x', {})).toBe(path.join(os.homedir(), 'x'));
    expect(expandHome('~/x', { HOME: '' })).toBe(path.join(os.homedir(), 'x'));
    for (const other of ['~other/x', 'a/~/b', '/srv/~', 'relative', '']) expect(expandHome(other, { HOME: '/home/u' })).toBe(other);
  });

  it('puts scope folders under {sandbox_dir}/docker and their disks under {sandbox_dir}/disks/docker', () => {
    const root = sandboxRootOf('/srv/sandboxes');
    expect(root).toBe(path.resolve('/srv/sandboxes/docker'));
    expect(disksFolderOf(root)).toBe(path.resolve('/srv/sandboxes/disks/docker'));
    const scope = { key: 'user:telegram:1', folderName: 'telegram@1' } as SandboxScope;
    expect(resolveSandboxPaths(scope, '/srv/sandboxes').root).toBe(root);
  });

  it('refuses in one line, naming where it came from, a sandbox folder that is relative, under a kernel file system, or past a file', () => {
    const folder = mkdtempSync(path.join(os.tmpdir(), 'berth-layout-'));
    writeFileSync(path.join(folder, 'a-file'), '');
    symlinkSync('/proc/self', path.join(folder, 'to-proc'));
    const refusal = (configured: string | undefined, environment: NodeJS.ProcessEnv): ConfigError => {
      try {
        resolveSandboxDir(configured, environment);
      } catch (error) {
        if (error instanceof ConfigError) return error;
        throw error;
      }
      throw new Error(`${configured} was accepted`);
    };
    expect(refusal('sandboxes', {}).message).toMatch(/^terminal\.sandbox_dir gives the sandbox folder "sandboxes", a relative path, .*write an absolute path/);
    expect(refusal(undefined, { TERMINAL_SANDBOX_DIR: './s' }).key).toBe('TERMINAL_SANDBOX_DIR');
    expect(refusal(undefined, { HERMES_HOME: 'relative-home' }).key).toBe('HERMES_HOME');
    for (const kernel of ['/proc/berth-nope', '/sys/berth', '/dev/shm/x', path.join(folder, 'to-proc', 'x')]) {
      expect(refusal(kernel, {}).message, kernel).toMatch(
        /under \/(proc|sys|dev), a kernel file system where no folder can be kept; choose a folder on a disk/,
      );
    }
    expect(refusal(path.join(folder, 'a-file', 'sandboxes'), {}).message).toMatch(/is a file, not a folder; choose another path or move the file$/);
    // Nothing is made by asking.
    expect(resolveSandboxDir(path.join(folder, 'new', 'sandboxes'), {})).toBe(path.join(folder, 'new', 'sandboxes'));
    expect(existsSync(path.join(folder, 'new'))).toBe(false);
  });
});
