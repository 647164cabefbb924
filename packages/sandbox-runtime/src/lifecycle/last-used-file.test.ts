import { existsSync, lstatSync, mkdtempSync, mkdirSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { readLastUsed, touchLastUsed } from './last-used-file.js';

/** A temporary folder, removed when the test ends. */
function temporaryFolder(prefix: string): string {
  const folder = mkdtempSync(path.join(tmpdir(), prefix));
  onTestFinished(() => rmSync(folder, { recursive: true, force: true }));
  return folder;
}

describe('last-used file', () => {
  it('records a time that a later reader sees, beside the workspace', async () => {
    const folder = temporaryFolder('berth-last-used-');
    const workspace = path.join(folder, 'workspace');
    mkdirSync(workspace);
    expect(readLastUsed(workspace)).toBeUndefined();
    const when = new Date('2026-01-02T03:04:05Z');
    touchLastUsed(workspace, when);
    expect(readLastUsed(workspace)).toBe(when.getTime());
    const later = new Date('2026-01-02T04:00:00Z');
    touchLastUsed(workspace, later);
    expect(readLastUsed(workspace)).toBe(later.getTime());
  });

  it('does not throw when the folder is gone', () => {
    expect(() => touchLastUsed('/nonexistent/berth/workspace')).not.toThrow();
    expect(readLastUsed(undefined)).toBeUndefined();
  });

  it('writes nothing through a scope folder that is a link, nor through a planted file link', () => {
    const root = temporaryFolder('berth-last-used-');
    const elsewhere = temporaryFolder('berth-elsewhere-');
    symlinkSync(elsewhere, path.join(root, 'telegram@1'));
    touchLastUsed(path.join(root, 'telegram@1', 'workspace'));
    expect(readdirSync(elsewhere)).toEqual([]);

    mkdirSync(path.join(root, 'telegram@2'));
    const target = path.join(elsewhere, 'target');
    writeFileSync(target, 'x');
    symlinkSync(target, path.join(root, 'telegram@2', '.berth-last-used'));
    const before = lstatSync(target).mtimeMs;
    touchLastUsed(path.join(root, 'telegram@2', 'workspace'), new Date('2020-01-01T00:00:00Z'));
    expect(lstatSync(target).mtimeMs).toBe(before);
    expect(existsSync(path.join(elsewhere, '.berth-last-used'))).toBe(false);
  });
});
