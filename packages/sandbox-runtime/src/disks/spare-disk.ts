import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readdir, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import type { HostLogger } from '@berth/core';
import { makeFileSystem, MB } from './disk-tools.js';
import { isProcessAlive } from './is-process-alive.js';

/** The name of the spare disk in a `disks` folder; no scope folder's name starts with a dot. */
const SPARE_DISK = '.spare.ext4';
/** How long after a new user's disk was made the spare for the next one is made. */
const SPARE_DISK_DELAY_MS = 300;

/** One runtime's spare disks, one per `disks` folder. */
export interface SpareDisks {
  /** Makes the spare of `disks` a moment from now, unless there is one or it is being made. */
  makeSoon(disks: string): void;
  /** Takes the spare as `file` when there is one of the right size. */
  take(disks: string, file: string): Promise<boolean>;
}

/**
 * One new user's disk made ahead, in the background once a new user's disk was made, so that
 * the next new user's first command does not wait for mkfs. It appears under its name only once
 * complete, and is taken by a rename, so two processes can never take the same one. Its name
 * starts with a dot, which no scope folder's does.
 */
export function createSpareDisks(options: { limitMb: number; logger?: HostLogger | undefined }): SpareDisks {
  const { limitMb, logger } = options;
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
        await makeFileSystem(file, limitMb);
        await rename(file, spareOf(disks));
      } finally {
        await rm(file, { force: true });
      }
    })()
      .catch((error: unknown) =>
        logger?.warn(
          `berth: making a spare disk in ${disks} failed (the next new user's disk is made when needed): ` +
            `${error instanceof Error ? error.message : String(error)}`,
        ),
      )
      .finally(() => spareMaking.delete(disks));
    spareMaking.set(disks, making);
  };
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
  return { makeSoon: makeSpareSoon, take: takeSpare };
}
