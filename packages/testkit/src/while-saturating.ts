import { spawn } from 'node:child_process';
import { chmodSync, mkdirSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

/**
 * The lock file shared by every test run on the machine (`BERTH_SATURATING_LOCK` names another).
 * Its folder is open to every account, because suites run as several users (rootless Podman's
 * runs as an ordinary one) and must all see one lock; it is not sticky, so a lock file another
 * user made still opens (sticky world-writable folders refuse that under `protected_regular`).
 */
export function saturatingLockFile(): string {
  const configured = process.env.BERTH_SATURATING_LOCK;
  if (configured) return configured;
  const folder = path.join(tmpdir(), 'berth-test-locks');
  mkdirSync(folder, { recursive: true, mode: 0o777 });
  try {
    if (statSync(folder).uid === process.getuid?.()) chmodSync(folder, 0o777);
  } catch {
    // Another user's folder: theirs to open up, which they did when they made it.
  }
  return path.join(folder, 'saturating.lock');
}

/**
 * Runs `work` while holding the machine-wide lock of the cases that saturate a machine on
 * purpose (fork bombs), so that two suites running side by side — two backends' suites, or two
 * checkouts' — never do it at the same time, and each case's deadlines are measured against one
 * bomb, not two. The lock is `flock(1)`'s on {@link saturatingLockFile}: the kernel releases it
 * when the process holding it dies, so a killed run never leaves it taken. Where `flock` is not
 * installed (macOS, say) the work runs without it.
 */
export async function whileSaturating<T>(work: () => Promise<T>): Promise<T> {
  const holder = spawn('flock', ['--exclusive', saturatingLockFile(), 'sh', '-c', 'echo held; exec cat >/dev/null'], { stdio: ['pipe', 'pipe', 'ignore'] });
  // A holder that died (and so let the lock go) closed its end: nothing to tell it any more.
  holder.stdin.on('error', () => undefined);
  const held = await new Promise<boolean>((resolve) => {
    holder.once('error', () => resolve(false));
    holder.once('exit', () => resolve(false));
    holder.stdout.once('data', () => resolve(true));
  });
  try {
    return await work();
  } finally {
    if (held) holder.stdin.end();
    holder.stdout.destroy();
  }
}
