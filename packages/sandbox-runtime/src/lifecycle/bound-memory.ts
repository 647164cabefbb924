import { promises as fs } from 'node:fs';
import path from 'node:path';
import { boundFolders, memoryFile } from './fair-share.js';
import { writeValue, type SharedBound } from './shared-bound.js';

// The bound's memory as the fair-share guard (fair-share-guard.ts) reads and steers it: whose
// OOM decision it is, and whether it is short.

/** cgroup v2: `memory.high` of the bound, as a share of its `memory.max`. */
export const HIGH_SHARE = 0.95;
/** cgroup v1: the share of the bound's memory in use from which the largest sandbox gives way, before a write meets the limit. */
export const NEARLY_FULL = 0.97;

/** A kernel file's text, trimmed. */
export async function readText(file: string): Promise<string> {
  return (await fs.readFile(file, 'utf8')).trim();
}

export const numberIn = (text: string, key: string): number => Number(new RegExp(`^${key} (\\d+)$`, 'm').exec(text)?.[1] ?? 0);
export const asCount = (text: string): number => (text === 'max' ? Number.POSITIVE_INFINITY : Number(text));

/** Makes the bound the guard's to decide on: v1's OOM killer off, v2's `memory.high` set. Throws what it could not write. */
export async function takeOomDecision(bound: SharedBound): Promise<void> {
  const folders = boundFolders(bound);
  if (!folders) return;
  if (bound.version === 1) await writeValue(path.join(folders.memory, 'memory.oom_control'), '1');
  else await writeValue(path.join(folders.memory, 'memory.high'), String(Math.floor(bound.memoryMb * 2 ** 20 * HIGH_SHARE)));
}

/** Gives the decision back to the kernel (the last process of the installation to leave). */
export async function returnOomDecision(bound: SharedBound): Promise<void> {
  const folders = boundFolders(bound);
  if (!folders) return;
  if (bound.version === 1) await writeValue(path.join(folders.memory, 'memory.oom_control'), '0').catch(() => undefined);
  else await writeValue(path.join(folders.memory, 'memory.high'), 'max').catch(() => undefined);
}

/**
 * Whether the bound is short of memory: v1 waits in its OOM (`under_oom 1`), or is nearly full
 * (`NEARLY_FULL` of its limit in use, page cache the kernel could drop not counted): v1 makes
 * only a page fault wait at the limit, and a write that meets it (a file in a tmpfs, a pipe)
 * fails at once with ENOMEM, so room is made before; v2 is past `memory.high`.
 */
export async function shortOfMemory(bound: SharedBound, folder: string): Promise<{ short: 'short' | 'nearly' | false; used: number }> {
  const limit = bound.memoryMb * 2 ** 20;
  if (bound.version === 1) {
    const [control, usage, stat] = await Promise.all(
      ['memory.oom_control', 'memory.usage_in_bytes', 'memory.stat'].map((file) => readText(path.join(folder, file))),
    );
    const used = (asCount(usage!) - numberIn(stat!, 'total_inactive_file')) / limit;
    return { short: numberIn(control!, 'under_oom') === 1 ? 'short' : used >= NEARLY_FULL ? 'nearly' : false, used };
  }
  const [current, high] = await Promise.all([readText(path.join(folder, memoryFile(2))), readText(path.join(folder, 'memory.high'))]);
  return { short: asCount(current) >= asCount(high) ? 'short' : false, used: asCount(current) / limit };
}
