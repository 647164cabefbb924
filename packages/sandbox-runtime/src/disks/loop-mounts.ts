import { readdirSync, readFileSync, readlinkSync, statSync } from 'node:fs';
import path from 'node:path';
import { run, tool } from './disk-tools.js';

// What the kernel says about the mounts and loop devices of Berth's disk images
// (`/proc/self/mountinfo`, `/sys/block`), and mounting and unmounting an image.

/** Mount options: no set-user-id programs or device files from a user's disk ever count. */
const MOUNT_OPTIONS = 'loop,nosuid,nodev,noatime,discard';

/** Undoes the escaping of `/proc/self/mountinfo` (`\040` for a space, …). */
const unescapeMountPath = (text: string): string => text.replace(/\\([0-7]{3})/g, (_match, octal: string) => String.fromCharCode(Number.parseInt(octal, 8)));

/** Every mount point with its mounts, innermost last, read once from `/proc/self/mountinfo`. */
export type MountTable = ReadonlyMap<string, ReadonlyArray<{ source: string; type: string }>>;

/** The mount table now: one read of `/proc/self/mountinfo` for many folders (a listing of every sandbox's disk). */
export function readMountTable(): MountTable {
  let text: string;
  try {
    text = readFileSync('/proc/self/mountinfo', 'utf8');
  } catch {
    return new Map();
  }
  const table = new Map<string, Array<{ source: string; type: string }>>();
  for (const line of text.split('\n')) {
    const [left, right] = line.split(' - ');
    if (!left || !right) continue;
    const where = unescapeMountPath(left.split(' ')[4] ?? '');
    const [type = '', source = ''] = right.split(' ');
    const mounts = table.get(where) ?? [];
    mounts.push({ source: unescapeMountPath(source), type });
    table.set(where, mounts);
  }
  return table;
}

/** The mounts on `folder`, innermost last: their source device and file system type (from `table`, else read now). */
export function mountsOn(folder: string, table: MountTable = readMountTable()): ReadonlyArray<{ source: string; type: string }> {
  return table.get(folder) ?? [];
}

/** The image file behind a loop device, read from sysfs. */
export function backingFile(device: string): string | undefined {
  const name = path.basename(device);
  if (!/^loop\d+$/.test(name)) return undefined;
  try {
    return readFileSync(`/sys/block/${name}/loop/backing_file`, 'utf8').trim();
  } catch {
    return undefined;
  }
}

/** The loop device the image is attached to, if any: an image is only ever mounted through one device. */
export function attachedDevice(image: string): string | undefined {
  let names: string[];
  try {
    names = readdirSync('/sys/block').filter((name) => /^loop\d+$/.test(name));
  } catch {
    return undefined;
  }
  const device = names.find((name) => backingFile(`/dev/${name}`) === image);
  return device ? `/dev/${device}` : undefined;
}

/** Whether a device is the source of any mount this process can see. */
export function isMountedAnywhere(device: string): boolean {
  try {
    return readFileSync('/proc/self/mountinfo', 'utf8')
      .split('\n')
      .some((line) => unescapeMountPath(line.split(' - ')[1]?.split(' ')[1] ?? '') === device);
  } catch {
    return false;
  }
}

/**
 * An image file of Berth's under `root`, as sysfs names a loop device's backing file: a scope's
 * image, one being made (`.ext4.new`), the spare, each possibly deleted since it was attached.
 */
function isDiskImageUnder(backing: string | undefined, root: string): boolean {
  if (!backing) return false;
  const file = backing.replace(/ \(deleted\)$/, '');
  return file.startsWith(root) && /\.ext4(\.new(-\d+-[0-9a-f]+)?)?$/.test(file);
}

/** The mounts of Berth's disk images under `sandboxDir`: on scope folders and on staging folders. */
export function diskMountsUnder(sandboxDir: string): string[] {
  const root = `${path.resolve(sandboxDir)}${path.sep}`;
  let text: string;
  try {
    text = readFileSync('/proc/self/mountinfo', 'utf8');
  } catch {
    return [];
  }
  const found: string[] = [];
  for (const line of text.split('\n')) {
    const [left, right] = line.split(' - ');
    if (!left || !right) continue;
    const where = unescapeMountPath(left.split(' ')[4] ?? '');
    if (where.startsWith(root) && isDiskImageUnder(backingFile(unescapeMountPath(right.split(' ')[1] ?? '')), root)) found.push(where);
  }
  // Innermost first.
  return found.sort((a, b) => b.length - a.length);
}

/** Loop devices backed by one of Berth's images under `sandboxDir` that nothing mounts (a process killed between attaching and mounting). */
export function unmountedLoopsUnder(sandboxDir: string): string[] {
  const root = `${path.resolve(sandboxDir)}${path.sep}`;
  let names: string[];
  try {
    names = readdirSync('/sys/block').filter((name) => /^loop\d+$/.test(name));
  } catch {
    return [];
  }
  return names.map((name) => `/dev/${name}`).filter((device) => isDiskImageUnder(backingFile(device), root) && !isMountedAnywhere(device));
}

/**
 * Mounts the image, through the loop device it already has if any (never a second one: two
 * would corrupt it). A device found while the kernel is still letting it go (after an
 * unmount) cannot be mounted; once it is gone, the image gets a device of its own.
 */
export async function mountImage(image: string, where: string): Promise<void> {
  const device = attachedDevice(image);
  if (!device) {
    await run(tool('mount'), ['-o', MOUNT_OPTIONS, image, where]);
    return;
  }
  try {
    await run(tool('mount'), ['-o', MOUNT_OPTIONS.replace('loop,', ''), device, where]);
  } catch (error) {
    if (!(await detached(image))) throw error;
    await run(tool('mount'), ['-o', MOUNT_OPTIONS, image, where]);
  }
}

/** Waits (up to 2 s) until no loop device holds the image: the kernel frees one a moment after its unmount. */
export async function detached(image: string): Promise<boolean> {
  for (let wait = 0; wait < 40; wait++) {
    if (!attachedDevice(image)) return true;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return false;
}

/** Unmounts `where`, lazily when it is busy. */
export async function unmount(where: string): Promise<void> {
  try {
    await run(tool('umount'), [where]);
  } catch {
    // Busy (a shell on the host sits in it): detach now, freed when the last user leaves.
    await run(tool('umount'), ['--lazy', where]);
  }
}

/**
 * The processes (a few, with their names) whose mount namespace other than this one still mounts
 * `device`: what keeps a loop device attached after its unmount here. For the operator's message.
 */
export function holdersOf(device: string, most = 3): string[] {
  let majorMinor: string;
  try {
    const { rdev } = statSync(device);
    majorMinor = `${(rdev >> 8) & 0xfff}:${(rdev & 0xff) | ((rdev >> 12) & 0xfff00)}`;
  } catch {
    return [];
  }
  const own = readLink('/proc/self/ns/mnt');
  const seen = new Set<string>();
  const holders: string[] = [];
  for (const pid of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    const namespace = readLink(`/proc/${pid}/ns/mnt`);
    if (!namespace || namespace === own || seen.has(namespace)) continue;
    seen.add(namespace);
    try {
      if (
        readFileSync(`/proc/${pid}/mountinfo`, 'utf8')
          .split('\n')
          .some((line) => line.split(' ')[2] === majorMinor)
      ) {
        holders.push(`${pid} (${readFileSync(`/proc/${pid}/comm`, 'utf8').trim()})`);
        if (holders.length >= most) break;
      }
    } catch {
      // Gone meanwhile, or not ours to read.
    }
  }
  return holders;
}

function readLink(file: string): string | undefined {
  try {
    return readlinkSync(file);
  } catch {
    return undefined;
  }
}
