import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statfsSync, statSync } from 'node:fs';
import { chmod, lstat, mkdir, open, readdir, rename, rm, rmdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { disksFolderOf, SandboxError, type HostLogger, type SandboxPaths } from '@berth/core';
import { copyTree } from './copy-tree.js';
import { closeQuietly, openFolder } from './folder-descriptor.js';
import { isProcessAlive } from './is-process-alive.js';
import { removeTree } from './remove-tree.js';

/**
 * `container_disk` as a hard limit: each scope's folder (its workspace and home together) is an
 * ext4 file system of its own, in a sparse image file under `{sandbox_dir}/disks/{engine}/`,
 * loop-mounted on the scope folder before its sandbox starts. A user who fills it gets "No space
 * left on device" while everyone else keeps writing, and nothing of theirs is lost. Mounting
 * needs root (and util-linux, e2fsprogs and loop devices); where they are missing the limit is
 * not enforced and `unenforced` says why, for the start-up warning and `berth doctor`.
 *
 * Why an image per scope rather than project quotas: quotas need the host's file system mounted
 * with `prjquota`, which an operator rarely has; loop devices work on any file system.
 */
export interface ScopeDisks {
  /** Why the limit is not enforced on this host, or `undefined` when it is. */
  readonly unenforced: string | undefined;
  /**
   * Mounts the scope's disk on its folder (creating, moving existing files in, or resizing it
   * first); unmounts first what an interrupted copy left. Call it holding the scope's lock.
   */
  ensure(paths: SandboxPaths): Promise<void>;
  /** Unmounts the scope's disk; its files stay in the image. Call it holding the scope's lock. */
  release(paths: SandboxPaths): Promise<void>;
  /**
   * Unmounts the scope's disk (never lazily), waits for its loop device to be detached, and
   * deletes its image; throws `PURGE_INCOMPLETE`, having deleted nothing, when the disk stays in
   * use. Call it holding the scope's lock, after the scope's sandboxes are removed.
   */
  purge(paths: SandboxPaths): Promise<void>;
  /** Use and size of the scope's disk in MB, when it has one. */
  usage(folder: string): { usedMb: number; limitMb: number } | undefined;
}

/** How long a purge tries again to unmount a disk that is busy, before it gives up. */
const PURGE_BUSY_WAIT_MS = 15_000;
const TOOLS = ['mkfs.ext4', 'mount', 'umount', 'losetup', 'resize2fs', 'e2fsck'] as const;
type Tool = (typeof TOOLS)[number];
const SEARCH = ['/usr/sbin', '/sbin', '/usr/bin', '/bin'];
/** Mount options: no set-user-id programs or device files from a user's disk ever count. */
const MOUNT_OPTIONS = 'loop,nosuid,nodev,noatime,discard';
const MB = 1024 * 1024;
/** The name of the spare disk in a `disks` folder; no scope folder's name starts with a dot. */
const SPARE_DISK = '.spare.ext4';
/** How long after a new user's disk was made the spare for the next one is made. */
const SPARE_DISK_DELAY_MS = 300;

function findTool(tool: Tool): string | undefined {
  const folders = [...SEARCH, ...(process.env.PATH ?? '').split(path.delimiter).filter(Boolean)];
  return folders.map((folder) => path.join(folder, tool)).find((candidate) => existsSync(candidate));
}

function run(file: string, args: readonly string[], okCodes: readonly number[] = [0]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(file, args, { timeout: 120_000 }, (error, stdout, stderr) => {
      if (error && !(typeof error.code === 'number' && okCodes.includes(error.code))) reject(Object.assign(new Error(`${path.basename(file)} ${args.join(' ')}: ${(stderr || error.message).trim().split('\n').pop()}`), { stderr }));
      else resolve(stdout);
    });
  });
}

/** Why `container_disk` cannot be enforced by this process, or `undefined`. */
export function diskUnenforcedReason(limitMb: number, hostFolders: boolean): string | undefined {
  // 0 is the operator's choice (berth doctor names it as a risk); without host folders the driver sizes its storage.
  if (limitMb === 0 || !hostFolders) return undefined;
  const hint = 'a user can fill the host\'s disk through /workspace and /root';
  if (process.platform !== 'linux') return `terminal.container_disk is not enforced: per-user disks need Linux; ${hint}`;
  if (process.getuid?.() !== 0) return `terminal.container_disk is not enforced: mounting a per-user disk needs root, and the gateway runs as uid ${process.getuid?.()}; ${hint}`;
  const missing = TOOLS.filter((tool) => !findTool(tool));
  if (missing.length > 0) return `terminal.container_disk is not enforced: ${missing.join(', ')} not found (install e2fsprogs and mount); ${hint}`;
  if (!existsSync('/dev/loop-control')) return `terminal.container_disk is not enforced: this host has no loop devices (/dev/loop-control); ${hint}`;
  return undefined;
}

/** Undoes the escaping of `/proc/self/mountinfo` (`\040` for a space, …). */
const unescapeMountPath = (text: string): string => text.replace(/\\([0-7]{3})/g, (_match, octal: string) => String.fromCharCode(Number.parseInt(octal, 8)));

/** The mounts on `folder`, innermost last: their source device and file system type. */
function mountsOn(folder: string): Array<{ source: string; type: string }> {
  let text: string;
  try {
    text = readFileSync('/proc/self/mountinfo', 'utf8');
  } catch {
    return [];
  }
  const found: Array<{ source: string; type: string }> = [];
  for (const line of text.split('\n')) {
    const [left, right] = line.split(' - ');
    if (!left || !right) continue;
    if (unescapeMountPath(left.split(' ')[4] ?? '') !== folder) continue;
    const [type = '', source = ''] = right.split(' ');
    found.push({ source: unescapeMountPath(source), type });
  }
  return found;
}

/** The image file behind a loop device, read from sysfs. */
function backingFile(device: string): string | undefined {
  const name = path.basename(device);
  if (!/^loop\d+$/.test(name)) return undefined;
  try {
    return readFileSync(`/sys/block/${name}/loop/backing_file`, 'utf8').trim();
  } catch {
    return undefined;
  }
}

/** The loop device the image is attached to, if any: an image is only ever mounted through one device. */
function attachedDevice(image: string): string | undefined {
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
function isMountedAnywhere(device: string): boolean {
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
function diskMountsUnder(sandboxDir: string): string[] {
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
function unmountedLoopsUnder(sandboxDir: string): string[] {
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
 * Unmounts every scope disk under a sandbox root, the staging mounts of interrupted copies
 * included, and detaches loop devices of its images that nothing mounts: for tools and tests that
 * delete a whole root (the files stay in the images). The sandboxes using them should be removed first.
 */
export async function releaseDisksUnder(sandboxDir: string): Promise<void> {
  const umount = findTool('umount') ?? 'umount';
  for (const where of diskMountsUnder(sandboxDir)) {
    await run(umount, [where]).catch(() => run(umount, ['--lazy', where]).catch(() => undefined));
  }
  for (const device of unmountedLoopsUnder(sandboxDir)) await run(findTool('losetup') ?? 'losetup', ['-d', device]).catch(() => undefined);
}

/** Builds the per-scope disks of one runtime. */
export function createScopeDisks(options: { limitMb: number; engine: string; hostFolders: boolean; logger?: HostLogger | undefined }): ScopeDisks {
  const { limitMb, logger } = options;
  const unenforced = diskUnenforcedReason(limitMb, options.hostFolders);
  const enforced = options.hostFolders && limitMb > 0 && unenforced === undefined;
  const tool = (name: Tool): string => findTool(name) ?? name;
  const warnedForeign = new Set<string>();

  const layout = (paths: Pick<SandboxPaths, 'folder'>) => {
    const folder = path.resolve(paths.folder);
    const root = path.dirname(folder);
    const disks = disksFolderOf(root);
    const base = path.join(disks, path.basename(folder));
    return { root, folder, disks, image: `${base}.ext4`, fresh: `${base}.ext4.new`, staging: `${base}.mnt`, moved: `${base}.old` };
  };
  type Layout = ReturnType<typeof layout>;

  /** `mine`: our image is mounted there; `foreign`: something else is; `none`. */
  const mountState = (where: string, image: string): 'mine' | 'foreign' | 'none' => {
    const mounts = mountsOn(where);
    if (mounts.length === 0) return 'none';
    return mounts.some((mount) => backingFile(mount.source) === image) ? 'mine' : 'foreign';
  };

  /**
   * Mounts the image, through the loop device it already has if any (never a second one: two
   * would corrupt it). A device found while the kernel is still letting it go (after an
   * unmount) cannot be mounted; once it is gone, the image gets a device of its own.
   */
  const mountImage = async (image: string, where: string): Promise<void> => {
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
  };

  /** Waits (up to 2 s) until no loop device holds the image: the kernel frees one a moment after its unmount. */
  const detached = async (image: string): Promise<boolean> => {
    for (let wait = 0; wait < 40; wait++) {
      if (!attachedDevice(image)) return true;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    return false;
  };

  const unmount = async (where: string): Promise<void> => {
    try {
      await run(tool('umount'), [where]);
    } catch {
      // Busy (a shell on the host sits in it): detach now, freed when the last user leaves.
      await run(tool('umount'), ['--lazy', where]);
    }
  };

  /**
   * Unmounts what a process killed during a copy-in left on the scope's staging folder (the
   * caller holds the scope's lock, so no live process uses it): the image's loop device goes with it.
   */
  const unmountLeftStaging = async (files: Layout): Promise<void> => {
    let guard = 0;
    while (mountsOn(files.staging).length > 0 && guard++ < 8) {
      logger?.info(`berth: unmounting the staging mount an interrupted copy left at ${files.staging}`);
      await unmount(files.staging);
    }
    await detached(files.fresh);
    await rmdir(files.staging).catch(() => undefined);
  };

  /** Waits for the image's loop device to go, detaching it when it is not mounted anywhere; false when it stays. */
  const detachImage = async (image: string): Promise<boolean> => {
    if (await detached(image)) return true;
    const device = attachedDevice(image);
    if (device && !isMountedAnywhere(device)) await run(tool('losetup'), ['-d', device]).catch(() => undefined);
    // Its file system unmounted here, a loop device is freed once no mount namespace holds it:
    // that of a sandbox just removed goes a moment later (seconds, on a busy machine).
    const until = Date.now() + PURGE_BUSY_WAIT_MS;
    while (Date.now() < until) {
      if (await detached(image)) return true;
    }
    return false;
  };

  /** Deletes `name` inside the folder `folder` (one of Berth's own) through descriptors: it holds a user's files. */
  const removeUnder = async (folder: string, name: string): Promise<void> => {
    let fd: number;
    try {
      fd = openFolder(folder, "Berth's disk folder");
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw error;
    }
    try {
      const report = await removeTree(fd, name);
      if (report.leftCount > 0) throw new SandboxError('DISK_CLEANUP', `${report.leftCount} files of ${path.join(folder, name)} could not be deleted (${report.left.join('; ')})`);
    } finally {
      closeQuietly(fd);
    }
  };

  const isEmpty = async (folder: string): Promise<boolean> => {
    try {
      return (await readdir(folder)).length === 0;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return true;
      throw error;
    }
  };

  /** An empty file system of `container_disk` in a new image file at `file`. */
  const makeFileSystem = async (file: string): Promise<void> => {
    const handle = await open(file, 'w', 0o600);
    await handle.truncate(limitMb * MB);
    await handle.close();
    // -m 0: no blocks reserved for root (the sandbox user is root); lazy init: seconds become milliseconds.
    await run(tool('mkfs.ext4'), ['-q', '-F', '-m', '0', '-E', 'lazy_itable_init=1,lazy_journal_init=1,nodiscard', '-L', 'berth', file]);
  };

  // One new user's disk made ahead, in the background once a new user's disk was made, so that
  // the next new user's first command does not wait for mkfs. It appears under its name only once
  // complete, and is taken by a rename, so two processes can never take the same one. Its name
  // starts with a dot, which no scope folder's does.
  const spareMaking = new Map<string, Promise<void>>();
  const spareOf = (disks: string): string => path.join(disks, SPARE_DISK);
  // Made a moment after it is asked for, like the spare network: made at once, it would compete
  // with the new sandbox's own start for the CPU.
  const makeSpareSoon = (disks: string): void => {
    setTimeout(() => makeSpare(disks), SPARE_DISK_DELAY_MS).unref();
  };
  const makeSpare = (disks: string): void => {
    if (spareMaking.has(disks)) return;
    const making = (async () => {
      if (existsSync(spareOf(disks))) return;
      // What a process that died making one left behind.
      for (const entry of await readdir(disks).catch(() => [] as string[])) {
        const maker = Number(/^\.spare\.ext4\.new-(\d+)-/.exec(entry)?.[1] ?? 0);
        if (maker > 0 && maker !== process.pid && !isProcessAlive(maker)) await rm(path.join(disks, entry), { force: true });
      }
      const file = `${spareOf(disks)}.new-${process.pid}-${randomBytes(4).toString('hex')}`;
      try {
        await makeFileSystem(file);
        await rename(file, spareOf(disks));
      } finally {
        await rm(file, { force: true });
      }
    })()
      .catch((error: unknown) => logger?.warn(`berth: making a spare disk in ${disks} failed (the next new user's disk is made when needed): ${error instanceof Error ? error.message : String(error)}`))
      .finally(() => spareMaking.delete(disks));
    spareMaking.set(disks, making);
  };
  /** Takes the spare as `file` when there is one of the right size. */
  const takeSpare = async (disks: string, file: string): Promise<boolean> => {
    try {
      if ((await stat(spareOf(disks))).size !== limitMb * MB) {
        // Made before container_disk changed.
        await rm(spareOf(disks), { force: true });
        return false;
      }
      await rename(spareOf(disks), file);
      return true;
    } catch {
      // None, or another process took it first.
      return false;
    }
  };

  /** Makes a new image holding the folder's current files; refuses (removing the image) when they do not fit. */
  const createImage = async (files: Layout): Promise<void> => {
    await rm(files.fresh, { force: true });
    const empty = await isEmpty(files.folder);
    if (empty && (await takeSpare(files.disks, files.fresh))) {
      makeSpareSoon(files.disks);
      return;
    }
    try {
      await makeFileSystem(files.fresh);
      // A new user (nothing to copy in): the image goes straight onto the folder (see ensure),
      // without a mount on a staging folder and the wait for its loop device to go.
      if (empty) {
        makeSpareSoon(files.disks);
        return;
      }
      await mkdir(files.staging, { recursive: true, mode: 0o700 });
      await mountImage(files.fresh, files.staging);
      try {
        await rmdir(path.join(files.staging, 'lost+found')).catch(() => undefined);
        await chmod(files.staging, 0o700);
        if (!(await isEmpty(files.folder))) {
          // Files from before the limit (or a lowered limit): copied in whole, ownership and modes kept.
          try {
            // At any depth: cp alone stops at PATH_MAX (copy-tree.ts).
            await copyTree(files.folder, files.staging);
          } catch (error) {
            const full = /No space left/i.test(String((error as { stderr?: string }).stderr ?? (error as Error).message));
            if (!full) throw error;
            throw new SandboxError(
              'DISK_TOO_SMALL',
              `the files of ${path.basename(files.folder)} do not fit in terminal.container_disk (${limitMb} MB); raise container_disk, or remove files from ${files.folder} — nothing was changed`,
            );
          }
        }
      } finally {
        await unmount(files.staging);
        // Renamed while its device lingers, the image would seem attached to a device on its way out.
        await detached(files.fresh);
      }
    } catch (error) {
      await rm(files.fresh, { force: true });
      throw error;
    } finally {
      await rmdir(files.staging).catch(() => undefined);
    }
  };

  /** Swaps the folder for the mounted image: the old files move aside first and go only once the image is on. */
  const mountOnFolder = async (files: Layout): Promise<void> => {
    const hadFolder = existsSync(files.folder);
    if (hadFolder && !(await isEmpty(files.folder))) {
      await removeUnder(files.disks, path.basename(files.moved));
      await rename(files.folder, files.moved);
    }
    await mkdir(files.folder, { recursive: true, mode: 0o700 });
    await mountImage(files.image, files.folder);
    await removeUnder(files.disks, path.basename(files.moved)).catch((error: unknown) => logger?.warn(`berth: ${error instanceof Error ? error.message : String(error)}`));
  };

  /**
   * Brings the image to `container_disk`, offline (online resizing is not allowed everywhere):
   * only while nothing else holds the disk, and shrinking only when the files fit; otherwise the
   * old size stays, with a warning.
   */
  const resize = async (files: Layout, mounted: boolean): Promise<void> => {
    const size = (await stat(files.image)).size;
    const wanted = limitMb * MB;
    if (size === wanted) return;
    const name = path.basename(files.folder);
    try {
      if (mounted) await run(tool('umount'), [files.folder]);
      // The kernel frees an unmounted loop device a moment later; one still attached after that is in use.
      if (!(await detached(files.image))) throw new Error(`${attachedDevice(files.image)} still holds it (a running sandbox)`);
      // 1: it corrected something (free-block counts, say); 2 and up: it could not.
      await run(tool('e2fsck'), ['-f', '-p', files.image], [0, 1]);
      if (wanted > size) {
        const handle = await open(files.image, 'r+');
        await handle.truncate(wanted);
        await handle.close();
        await run(tool('resize2fs'), [files.image]);
      } else {
        await run(tool('resize2fs'), [files.image, `${limitMb}M`]);
        const handle = await open(files.image, 'r+');
        await handle.truncate(wanted);
        await handle.close();
      }
      logger?.info(`berth: the disk of ${name} is now ${limitMb} MB (was ${Math.round(size / MB)} MB)`);
    } catch (error) {
      logger?.warn(`berth: the disk of ${name} stays at ${Math.round(size / MB)} MB, not terminal.container_disk (${limitMb} MB): ${error instanceof Error ? error.message : String(error)}`);
    }
  };

  const ensure: ScopeDisks['ensure'] = async (paths) => {
    if (!enforced) return;
    const files = layout(paths);
    const quick = mountState(files.folder, files.image);
    if (quick === 'mine' && (await stat(files.image)).size === limitMb * MB) return;
    if (quick === 'foreign') {
      if (!warnedForeign.has(files.folder)) logger?.warn(`berth: ${files.folder} is a mount point of the operator's; Berth leaves it and applies no container_disk there`);
      warnedForeign.add(files.folder);
      return;
    }
    await mkdir(files.disks, { recursive: true, mode: 0o700 });
    await unmountLeftStaging(files);
    let state = mountState(files.folder, files.image);
    // A move that a crash interrupted: the image is whole (it is renamed only when complete).
    if (state === 'none' && existsSync(files.moved) && !existsSync(files.image)) {
      if (!existsSync(files.folder) || (await isEmpty(files.folder))) {
        await rmdir(files.folder).catch((error: NodeJS.ErrnoException) => {
          if (error.code !== 'ENOENT') throw error;
        });
        await rename(files.moved, files.folder);
      }
    }
    let made = false;
    if (state === 'none' && !existsSync(files.image)) {
      await createImage(files);
      await rename(files.fresh, files.image);
      made = true;
      logger?.info(`berth: made a ${limitMb} MB disk for ${path.basename(files.folder)}`);
    }
    if (!made && (state === 'mine' || existsSync(files.image))) await resize(files, state === 'mine');
    state = mountState(files.folder, files.image);
    if (state === 'none') await mountOnFolder(files);
    // A new file system's own folder for fsck's finds: the user's disk starts empty.
    if (made) await rmdir(path.join(files.folder, 'lost+found')).catch(() => undefined);
    const folderStats = await lstat(files.folder);
    if ((folderStats.mode & 0o777) !== 0o700) await chmod(files.folder, 0o700);
  };

  const release: ScopeDisks['release'] = async (paths) => {
    if (!enforced) return;
    const files = layout(paths);
    while (mountState(files.folder, files.image) === 'mine') await unmount(files.folder);
  };

  const purge: ScopeDisks['purge'] = async (paths) => {
    const files = layout(paths);
    const name = path.basename(files.folder);
    const mounted = mountState(files.folder, files.image) === 'mine' || mountsOn(files.staging).length > 0;
    if (!mounted && !existsSync(files.image) && !existsSync(files.fresh) && !existsSync(files.moved)) return;
    await unmountLeftStaging(files);
    // Never lazily: a disk still mounted somewhere keeps its files readable after its image is
    // deleted, and the purge would say it removed them.
    // The engine says a removed sandbox is gone a moment before the kernel has torn down its
    // mount namespace (its last processes still exiting), which keeps the disk busy meanwhile: a
    // busy disk is tried again for a few seconds before the purge gives up.
    const busyUntil = Date.now() + PURGE_BUSY_WAIT_MS;
    while (mountState(files.folder, files.image) === 'mine') {
      try {
        await run(tool('umount'), [files.folder]);
      } catch (error) {
        if (Date.now() < busyUntil) {
          await new Promise((resolve) => setTimeout(resolve, 200));
          continue;
        }
        throw new SandboxError(
          'PURGE_INCOMPLETE',
          `the disk of ${name} is still in use on the host (${error instanceof Error ? error.message : String(error)}), so nothing was deleted; stop what uses ${files.folder} and run berth rm --purge again`,
        );
      }
    }
    for (const image of [files.image, files.fresh]) {
      if (await detachImage(image)) continue;
      throw new SandboxError(
        'PURGE_INCOMPLETE',
        `the disk image of ${name} is still attached to ${attachedDevice(image) ?? 'a loop device'} (a sandbox or process elsewhere still uses it), so nothing was deleted; stop it and run berth rm --purge again`,
      );
    }
    await rm(files.image, { force: true });
    await rm(files.fresh, { force: true });
    await removeUnder(files.disks, path.basename(files.moved));
  };

  const usage: ScopeDisks['usage'] = (folder) => {
    const files = layout({ folder });
    try {
      const image = statSync(files.image);
      if (mountState(files.folder, files.image) === 'mine') {
        const stats = statfsSync(files.folder);
        return { usedMb: Math.round(((stats.blocks - stats.bfree) * stats.bsize) / MB), limitMb: Math.round(image.size / MB) };
      }
      // Not mounted (after a reboot, say): the image's allocated blocks, a close upper bound.
      return { usedMb: Math.round((image.blocks * 512) / MB), limitMb: Math.round(image.size / MB) };
    } catch {
      return undefined;
    }
  };

  return { unenforced, ensure, release, purge, usage };
}
