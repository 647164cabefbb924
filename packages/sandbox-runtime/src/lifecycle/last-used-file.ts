import { closeSync, constants, futimesSync, lstatSync, openSync } from 'node:fs';
import path from 'node:path';
import { LAST_USED_FILE } from '@berth/core/driver';
import { closeQuietly, descriptorPath, openChildFolder, openFolder } from '../host-files/folder-descriptor.js';

// When a sandbox was last used, kept as the modification time of a file in its scope folder
// (core's LAST_USED_FILE, beside `workspace` and `home`, outside every mount, so commands cannot
// touch it). A later gateway process, or `berth ls`, reads it; an adopted sandbox is reaped by
// its real idleness.

/**
 * Touches the marker of the scope folder that holds `workspace`; never throws. Synchronous (a
 * few microseconds, at most every few seconds per sandbox) so that a short-lived process such
 * as `berth exec` records its use before it exits.
 */
export function touchLastUsed(workspace: string, when: Date = new Date()): void {
  const folder = path.dirname(workspace);
  let root: number | undefined;
  let scope: number | undefined;
  try {
    // Through descriptors opened without following links, from the root down: a folder Berth
    // refused because it is a link (to anywhere) gets nothing written through it, and one
    // renamed away meanwhile (a purge) gets no marker made again.
    root = openFolder(path.dirname(folder), 'the sandbox root');
    scope = openChildFolder(root, path.basename(folder));
    // O_NOFOLLOW: a link planted in place of the file itself is not followed either.
    const descriptor = openSync(descriptorPath(scope, LAST_USED_FILE), constants.O_WRONLY | constants.O_CREAT | constants.O_NOFOLLOW, 0o600);
    try {
      futimesSync(descriptor, when, when);
    } finally {
      closeSync(descriptor);
    }
  } catch {
    // The folder is gone (purged), read-only, or a link: the last use is simply not recorded.
  } finally {
    closeQuietly(scope);
    closeQuietly(root);
  }
}

/** The last use recorded for the scope folder that holds `workspace`, in ms; `undefined` when none. */
export function readLastUsed(workspace: string | undefined): number | undefined {
  if (!workspace) return undefined;
  try {
    // lstat: a link in its place says nothing.
    const stats = lstatSync(path.join(path.dirname(workspace), LAST_USED_FILE));
    return stats.isFile() ? stats.mtimeMs : undefined;
  } catch {
    return undefined;
  }
}
