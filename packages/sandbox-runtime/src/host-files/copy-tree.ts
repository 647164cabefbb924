import { spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { closeQuietly, descriptorPath, openChildFolder, openFolder } from './folder-descriptor.js';

/** A relative path longer than this is copied again from a folder on its way, where its paths are short. */
const CUT_BYTES = 1536;

/** `cp -a` failed for a reason other than a path too long; `stderr` says which. */
export class CopyTreeError extends Error {
  readonly stderr: string;

  constructor(stderr: string) {
    super(`cp: ${stderr.trim().split('\n').pop() ?? 'failed'}`);
    this.name = 'CopyTreeError';
    this.stderr = stderr;
  }
}

/** Runs `cp -a` from the folder `source` is open on into the one `target` is open on, both handed to it as descriptors. */
function copyDescriptors(source: number, target: number): Promise<{ status: number | null; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('/bin/cp', ['-a', '--', `${descriptorPath(3)}/.`, `${descriptorPath(4)}/`], { stdio: ['ignore', 'ignore', 'pipe', source, target] });
    let stderr = '';
    child.stderr?.on('data', (chunk: Buffer) => {
      // Enough to tell why; a tree of a million too-long paths need not be kept whole.
      if (stderr.length < 1 << 20) stderr += chunk.toString('utf8');
    });
    child.on('error', reject);
    child.on('close', (status) => resolve({ status, stderr }));
  });
}

/**
 * The folders below `fd` whose path from it first grows longer than {@link CUT_BYTES}, as lists
 * of names; the walk goes no deeper than them, through descriptors (no link is followed).
 */
function foldersPastCut(fd: number, prefix: readonly string[] = [], length = 0, found: string[][] = []): string[][] {
  for (const entry of readdirSync(descriptorPath(fd), { withFileTypes: true })) {
    if (!entry.isDirectory()) continue;
    const names = [...prefix, entry.name];
    const grown = length + Buffer.byteLength(entry.name) + 1;
    if (grown > CUT_BYTES) {
      found.push(names);
      continue;
    }
    let child: number;
    try {
      child = openChildFolder(fd, entry.name);
    } catch {
      continue;
    }
    try {
      foldersPastCut(child, names, grown, found);
    } finally {
      closeQuietly(child);
    }
  }
  return found;
}

/** Opens the folder `names` leads to below `fd`, one descriptor at a time (making missing ones, owner-only, when asked). */
function openChain(fd: number, names: readonly string[], create = false): number {
  let current = fd;
  let owned = false;
  for (const name of names) {
    const next = openChildFolder(current, name, create ? { create: 0o700 } : {});
    if (owned) closeQuietly(current);
    current = next;
    owned = true;
  }
  return current;
}

/**
 * Copies what is in the folder `source` into the folder `target` as `cp -a` does (links as
 * links, FIFOs made again, sparse files kept sparse, modes, owners and times kept) at any depth:
 * `cp` works by paths and cannot reach past `PATH_MAX`, so the parts it could not reach are
 * copied again, each by a `cp` started from a folder on their way (handed to it as a
 * descriptor), where their paths are short. Hard links between such parts are copied as
 * separate files. Throws {@link CopyTreeError} for any other failure (a full disk, say).
 */
export async function copyTree(source: string, target: string): Promise<void> {
  const sourceFd = openFolder(source, 'the folder to copy');
  try {
    const targetFd = openFolder(target, 'the folder to copy into');
    try {
      await copyBetween(sourceFd, targetFd);
    } finally {
      closeQuietly(targetFd);
    }
  } finally {
    closeQuietly(sourceFd);
  }
}

async function copyBetween(sourceFd: number, targetFd: number): Promise<void> {
  const { status, stderr } = await copyDescriptors(sourceFd, targetFd);
  if (status === 0) return;
  const problems = stderr.split('\n').filter((line) => line.trim() !== '');
  if (problems.length === 0 || !problems.every((line) => /File name too long/.test(line))) throw new CopyTreeError(stderr);
  for (const names of foldersPastCut(sourceFd)) {
    const from = openChain(sourceFd, names);
    try {
      const to = openChain(targetFd, names, true);
      try {
        await copyBetween(from, to);
      } finally {
        closeQuietly(to);
      }
    } finally {
      closeQuietly(from);
    }
  }
}
