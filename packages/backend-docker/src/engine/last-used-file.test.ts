import { mkdtempSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { readLastUsed, touchLastUsed } from './last-used-file.js';

describe('last-used file', () => {
  it('records a time that a later reader sees, beside the workspace', async () => {
    const folder = mkdtempSync(path.join(tmpdir(), 'berth-last-used-'));
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
});
