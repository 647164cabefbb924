import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { SandboxError } from '@berth/core';
import { afterEach, describe, expect, it } from 'vitest';
import { lockFileOf, lockScope } from './scope-lock.js';

const folders: string[] = [];
afterEach(() => {
  for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true });
});

function scope(name = 'telegram@1') {
  const sandboxDir = mkdtempSync(path.join(tmpdir(), 'berth-lock-'));
  folders.push(sandboxDir);
  const root = path.join(sandboxDir, 'docker');
  return { root, folder: path.join(root, name) };
}

/** Whether another process can take the lock right now (flock(1) on the lock file, not waiting). */
const freeForOthers = (file: string): boolean => spawnSync('flock', ['--exclusive', '--nonblock', file, 'true']).status === 0;

describe('lockScope', () => {
  it('keeps every other process out until it is released', async () => {
    const paths = scope();
    const lock = await lockScope(paths, { waitMs: 0, purpose: 'test' });
    expect(freeForOthers(lockFileOf(paths))).toBe(false);
    lock.release();
    expect(freeForOthers(lockFileOf(paths))).toBe(true);
  });

  it('is released by the kernel when its holder is killed, whatever its pid', async () => {
    const paths = scope();
    await lockScope(paths, { waitMs: 0, purpose: 'test' }).then((lock) => lock.release());
    // Another process holds it (flock -o: the lock is flock's own, not its child's), then dies by SIGKILL.
    const holder = spawn('flock', ['--exclusive', '--close', lockFileOf(paths), 'sleep', '30'], { stdio: 'ignore' });
    try {
      for (let i = 0; i < 200 && freeForOthers(lockFileOf(paths)); i++) await new Promise((resolve) => setTimeout(resolve, 10));
      await expect(lockScope(paths, { waitMs: 0, purpose: 'take the test lock' })).rejects.toMatchObject({ code: 'SCOPE_BUSY' });
      holder.kill('SIGKILL');
      await new Promise((resolve) => holder.once('exit', resolve));
      const lock = await lockScope(paths, { waitMs: 0, purpose: 'test' });
      lock.release();
    } finally {
      holder.kill('SIGKILL');
    }
  });

  it('gives up at once with the reason it is asked to, while another holds it', async () => {
    const paths = scope();
    const first = await lockScope(paths, { waitMs: 0, purpose: 'test' });
    try {
      const reason = new SandboxError('SANDBOX_PURGING', 'being purged');
      await expect(lockScope(paths, { waitMs: 60_000, purpose: 'test', giveUp: () => reason })).rejects.toBe(reason);
    } finally {
      first.release();
    }
  });

  it('a waiter whose lock file was deleted by the holder (a purge) locks the new one', async () => {
    const paths = scope();
    const first = await lockScope(paths, { waitMs: 0, purpose: 'test' });
    const waiting = lockScope(paths, { waitMs: 30_000, purpose: 'test' });
    await new Promise((resolve) => setTimeout(resolve, 100));
    first.discard();
    const second = await waiting;
    try {
      expect(existsSync(lockFileOf(paths))).toBe(true);
      expect(freeForOthers(lockFileOf(paths))).toBe(false);
    } finally {
      second.release();
    }
  });
});
