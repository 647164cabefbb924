import { randomBytes } from 'node:crypto';
import { lstatSync, opendirSync, renameSync, rmdirSync, unlinkSync, type Dir } from 'node:fs';
import { PathEscapeError } from '@berth/core';
import { closeQuietly, descriptorPath, mountIdOf, openChildFolder, unlockFolder } from './folder-descriptor.js';

/** What {@link removeTree} could not delete. */
export interface RemoveTreeReport {
  /** Entries deleted. */
  readonly removed: number;
  /** How many entries are left. */
  readonly leftCount: number;
  /** The first few of them, each as a path relative to the tree and why, for a message. */
  readonly left: readonly string[];
}

/** Folders held open at once; a deeper folder is moved up to the top of the tree and walked from there. */
const MAX_OPEN_DEPTH = 48;
/** Operations between two turns of the event loop, so that a big tree never stalls a gateway. */
const OPERATIONS_PER_TURN = 2_000;
/** Entries named in a report. */
const LEFT_SAMPLES = 5;
/** Characters of a relative path shown in a report. */
const SHOWN_PATH = 120;

interface Frame {
  readonly fd: number;
  readonly dir: Dir;
  /** The folder's parent's descriptor and the folder's name in it (the top's parent is the caller's). */
  readonly parent: number;
  readonly name: string;
  readonly relative: string;
  readonly removedBefore: number;
  readonly leftBefore: number;
  readonly walks: number;
}

function errorCode(error: unknown): string | undefined {
  return (error as NodeJS.ErrnoException | null)?.code;
}

const yieldToLoop = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * Deletes the entry `name` of the folder descriptor `parent` is open on, and everything below it,
 * without ever following a link or crossing into another mount, at any depth, in bounded memory
 * and descriptors. A link is deleted, never what it points to; a folder swapped for a link
 * between two steps is refused (its descriptor is opened with `O_NOFOLLOW`), and what was opened
 * stays the folder that was opened. A mount point inside is left, and said. A gateway that is not
 * root first gives itself rights on each folder it owns (through the folder's descriptor), so a
 * `chmod 000` from inside the sandbox cannot keep its files. Folders deeper than a few dozen
 * levels are moved up to the top of the tree (one `rename` inside it) and emptied from there, so
 * a tree deeper than `PATH_MAX` goes as well.
 */
export async function removeTree(parent: number, name: string): Promise<RemoveTreeReport> {
  let removed = 0;
  let leftCount = 0;
  const left: string[] = [];
  const note = (relative: string, why: string): void => {
    leftCount++;
    if (left.length < LEFT_SAMPLES) left.push(`${relative.length > SHOWN_PATH ? `…${relative.slice(-SHOWN_PATH)}` : relative} (${why})`);
  };
  let operations = 0;
  const step = async (): Promise<void> => {
    if (++operations % OPERATIONS_PER_TURN === 0) await yieldToLoop();
  };

  let top: { fd: number; mount: string };
  try {
    const stats = lstatSync(descriptorPath(parent, name));
    if (!stats.isDirectory()) {
      unlinkSync(descriptorPath(parent, name));
      return { removed: 1, leftCount: 0, left: [] };
    }
    const fd = openChildFolder(parent, name, { unlock: true });
    top = { fd, mount: mountIdOf(fd) };
    if (top.mount !== mountIdOf(parent)) {
      closeQuietly(fd);
      note(name, 'a mount point; unmount it first');
      return { removed, leftCount, left };
    }
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return { removed: 0, leftCount: 0, left: [] };
    note(name, errorCode(error) ?? (error as Error).message);
    return { removed, leftCount, left };
  }

  const stack: Frame[] = [];
  const push = (fd: number, frameParent: number, frameName: string, relative: string): void => {
    unlockFolder(fd);
    stack.push({
      fd,
      dir: opendirSync(descriptorPath(fd)),
      parent: frameParent,
      name: frameName,
      relative,
      removedBefore: removed,
      leftBefore: leftCount,
      walks: 1,
    });
  };
  try {
    push(top.fd, parent, name, name);
  } catch (error) {
    closeQuietly(top.fd);
    note(name, errorCode(error) ?? (error as Error).message);
    return { removed, leftCount, left };
  }

  /** Enters the folder `entryName` of `frame`; false when it is not (or no longer) a folder to enter. */
  const enter = (frame: Frame, entryName: string, relative: string): boolean => {
    let child: number;
    try {
      child = openChildFolder(frame.fd, entryName, { unlock: true });
    } catch (error) {
      // Swapped for a link or a file since it was listed: deleted as one.
      if (errorCode(error) === 'ENOENT' || error instanceof PathEscapeError) return false;
      note(relative, errorCode(error) ?? 'cannot open');
      return true;
    }
    if (mountIdOf(child) !== top.mount) {
      closeQuietly(child);
      note(relative, 'a mount point; unmount it first');
      return true;
    }
    if (stack.length >= MAX_OPEN_DEPTH) {
      closeQuietly(child);
      try {
        renameSync(descriptorPath(frame.fd, entryName), descriptorPath(top.fd, `.berth-deep-${randomBytes(6).toString('hex')}`));
      } catch (error) {
        note(relative, errorCode(error) ?? 'cannot move up');
      }
      return true;
    }
    try {
      push(child, frame.fd, entryName, relative);
    } catch (error) {
      closeQuietly(child);
      note(relative, errorCode(error) ?? 'unreadable');
    }
    return true;
  };

  while (stack.length > 0) {
    const frame = stack[stack.length - 1]!;
    let entry: ReturnType<typeof frame.dir.readSync>;
    try {
      entry = frame.dir.readSync();
    } catch (error) {
      note(frame.relative, errorCode(error) ?? 'unreadable');
      entry = null;
    }
    await step();
    if (entry === null) {
      frame.dir.closeSync();
      try {
        rmdirSync(descriptorPath(frame.parent, frame.name));
        removed++;
        closeQuietly(frame.fd);
        stack.pop();
      } catch (error) {
        const code = errorCode(error);
        // Entries moved up from deeper down, or put there meanwhile: walked again while that helps
        // (not for what this walk already found it could not delete, which is said once).
        if (code === 'ENOTEMPTY' && leftCount === frame.leftBefore && (removed > frame.removedBefore || frame.walks < 3)) {
          stack[stack.length - 1] = {
            ...frame,
            dir: opendirSync(descriptorPath(frame.fd)),
            removedBefore: removed,
            leftBefore: leftCount,
            walks: frame.walks + 1,
          };
        } else {
          if (code !== 'ENOENT' && code !== 'ENOTEMPTY') note(frame.relative, code ?? 'not deleted');
          closeQuietly(frame.fd);
          stack.pop();
        }
      }
      continue;
    }
    const relative = `${frame.relative}/${entry.name}`;
    if (entry.isDirectory() && enter(frame, entry.name, relative)) continue;
    const where = descriptorPath(frame.fd, entry.name);
    try {
      unlinkSync(where);
      removed++;
    } catch (error) {
      const code = errorCode(error);
      if (code === 'ENOENT') continue;
      // A folder (listed as something else, or put in its place since).
      let folder = false;
      try {
        folder = (code === 'EISDIR' || code === 'EPERM') && lstatSync(where).isDirectory();
      } catch {
        // Gone.
      }
      if (!folder || !enter(frame, entry.name, relative)) note(relative, code ?? 'not deleted');
    }
  }
  return { removed, leftCount, left };
}
