import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statfsSync, statSync } from 'node:fs';
import { chmod, lstat, mkdir, open, readdir, rename, rm, rmdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { SandboxError, type HostLogger, type SandboxPaths } from '@berth/core';
import { isProcessAlive } from './is-process-alive.js';

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
  /** Mounts the scope's disk on its folder (creating, moving existing files in, or resizing it first). */
  ensure(paths: SandboxPaths): Promise<void>;
  /** Unmounts the scope's disk; its files stay in the image. */
  release(paths: SandboxPaths): Promise<void>;
  /** Unmounts and deletes the scope's disk (before its folder is purged). */
  purge(paths: SandboxPaths): Promise<void>;
  /** Use and size of the scope's disk in MB, when it has one. */
  usage(folder: string): { usedMb: number; limitMb: number } | undefined;
}

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
/** How long a process waits for another that prepares the same disk (a big first copy takes a while). */
const LOCK_WAIT_MS = 600_000;


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

/** The disk images mounted on scope folders under `sandboxDir` (or on their staging folders). */
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
    const backing = backingFile(unescapeMountPath(right.split(' ')[1] ?? ''));
    if (where.startsWith(root) && backing?.startsWith(root) && backing.endsWith('.ext4')) found.push(where);
  }
  // Innermost first.
  return found.sort((a, b) => b.length - a.length);
}

/**
 * Unmounts every scope disk under a sandbox root, for tools and tests that delete a whole root
 * (the files stay in the images). The sandboxes using them should be removed first.
 */
export async function releaseDisksUnder(sandboxDir: string): Promise<void> {
  const umount = findTool('umount') ?? 'umount';
  for (const where of diskMountsUnder(sandboxDir)) {
    await run(umount, [where]).catch(() => run(umount, ['--lazy', where]).catch(() => undefined));
  }
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
    const disks = path.join(path.dirname(root), 'disks', path.basename(root));
    const base = path.join(disks, path.basename(folder));
    return { root, folder, disks, image: `${base}.ext4`, fresh: `${base}.ext4.new`, staging: `${base}.mnt`, moved: `${base}.old`, lock: `${base}.lock` };
  };
  type Layout = ReturnType<typeof layout>;

  /** `mine`: our image is mounted there; `foreign`: something else is; `none`. */
  const mountState = (where: string, image: string): 'mine' | 'foreign' | 'none' => {
    const mounts = mountsOn(where);
    if (mounts.length === 0) return 'none';
    return mounts.some((mount) => backingFile(mount.source) === image) ? 'mine' : 'foreign';
  };

  const withLock = async <T>(files: Layout, task: () => Promise<T>): Promise<T> => {
    await mkdir(files.disks, { recursive: true, mode: 0o700 });
    const deadline = Date.now() + LOCK_WAIT_MS;
    for (;;) {
      try {
        const handle = await open(files.lock, 'wx', 0o600);
        await handle.writeFile(String(process.pid));
        await handle.close();
        break;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
        // Another process prepares this disk; a lock whose process is gone is stale.
        let holder = 0;
        let young = false;
        try {
          holder = Number(readFileSync(files.lock, 'utf8') || '0');
          // Made but not yet written (its maker writes its pid right after): not stale.
          young = holder === 0 && Date.now() - statSync(files.lock).mtimeMs < 5_000;
        } catch {
          continue;
        }
        let alive = holder > 0 || young;
        try {
          if (holder > 0) process.kill(holder, 0);
        } catch (killError) {
          alive = (killError as NodeJS.ErrnoException).code === 'EPERM';
        }
        if (!alive) await rm(files.lock, { force: true });
        else if (Date.now() > deadline) throw new SandboxError('DISK_BUSY', `the disk of ${path.basename(files.folder)} is being prepared by process ${holder}; retry the command`);
        else await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }
    try {
      return await task();
    } finally {
      await rm(files.lock, { force: true });
    }
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
            await run('/bin/cp', ['-a', '--', `${files.folder}/.`, `${files.staging}/`]);
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
      await rm(files.moved, { recursive: true, force: true });
      await rename(files.folder, files.moved);
    }
    await mkdir(files.folder, { recursive: true, mode: 0o700 });
    await mountImage(files.image, files.folder);
    await rm(files.moved, { recursive: true, force: true });
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
    await withLock(files, async () => {
      let state = mountState(files.folder, files.image);
      // A move that a crash interrupted: the image is whole (it is renamed only when complete).
      if (state === 'none' && existsSync(files.moved) && !existsSync(files.image)) {
        if (!existsSync(files.folder) || (await isEmpty(files.folder))) {
          await rm(files.folder, { recursive: true, force: true });
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
    });
  };

  const release: ScopeDisks['release'] = async (paths) => {
    if (!enforced) return;
    const files = layout(paths);
    await withLock(files, async () => {
      while (mountState(files.folder, files.image) === 'mine') await unmount(files.folder);
    });
  };

  const purge: ScopeDisks['purge'] = async (paths) => {
    const files = layout(paths);
    if (!existsSync(files.image) && !existsSync(files.fresh)) return;
    await withLock(files, async () => {
      while (mountState(files.folder, files.image) === 'mine') await unmount(files.folder);
      await rm(files.image, { force: true });
      await rm(files.fresh, { force: true });
      await rm(files.moved, { recursive: true, force: true });
    });
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
