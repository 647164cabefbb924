import { existsSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadInstallationKey, readInstallationKey, sandboxName } from './sandbox-name.js';

const folders: string[] = [];
const scratch = (): string => {
  const folder = mkdtempSync(path.join(os.tmpdir(), 'berth-key-'));
  folders.push(folder);
  return folder;
};
afterEach(() => {
  for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true });
});

describe('the installation key', () => {
  it('is not made by reading it: a root without one stays as it was', () => {
    const root = path.join(scratch(), 'sandboxes', 'docker');
    expect(readInstallationKey(root)).toBeUndefined();
    expect(existsSync(path.dirname(root))).toBe(false);
  });

  it('is read, once made, as the key that names the sandboxes', () => {
    const root = path.join(scratch(), 'docker');
    const made = loadInstallationKey(root);
    expect(readInstallationKey(root)?.equals(made)).toBe(true);
    expect(sandboxName({ root, scopeKey: 'user:telegram:1' })).toMatch(/^berth-[0-9a-f]{24}$/);
  });

  it('is never read through a sandbox root that is a symbolic link', () => {
    const folder = scratch();
    loadInstallationKey(path.join(folder, 'real'));
    symlinkSync(path.join(folder, 'real'), path.join(folder, 'link'));
    expect(() => readInstallationKey(path.join(folder, 'link'))).toThrow(/is a symbolic link/);
  });
});
