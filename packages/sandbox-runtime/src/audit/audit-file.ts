import { constants } from 'node:fs';
import { open, rename, stat, type FileHandle } from 'node:fs/promises';
import type { HostLogger } from '@berth/core';

/** Lines one user may have waiting for the audit file; more are dropped and counted. */
export const AUDIT_LINES_PER_USER = 64;
/** Lines all users together may have waiting for the audit file; more are dropped and counted. */
export const AUDIT_LINES_IN_ALL = 4096;
/** How long after a failed open or write the audit file is tried again, ms. */
export const AUDIT_RETRY_AFTER_MS = 30_000;
/** Lines written in one write call, at most. */
const BATCH_LINES = 256;

/** Options of {@link openAuditFile}. */
export interface AuditFileOptions {
  /** The file, absolute; created mode 0600, appended with `O_APPEND`. */
  readonly path: string;
  /** A write that would take the file past this size rotates it first. */
  readonly maxBytes: number;
  /** Old files kept: `{path}.1` (the newest) to `{path}.{keep}`. */
  readonly keep: number;
  readonly logger?: HostLogger | undefined;
  /** @default {@link AUDIT_LINES_PER_USER} */
  readonly linesPerUser?: number;
  /** @default {@link AUDIT_LINES_IN_ALL} */
  readonly linesInAll?: number;
  /** @default {@link AUDIT_RETRY_AFTER_MS} */
  readonly retryAfterMs?: number;
}

/** An audit file: lines queued without waiting, written in order by one writer, never failing its caller. */
export interface AuditFile {
  /** Queues one record as a JSON line, counted against `user`'s share; never throws, never waits. */
  append(user: string, record: Readonly<Record<string, unknown>>): void;
  /** Resolves once every line queued so far is written or dropped. */
  flush(): Promise<void>;
  /** Lines dropped so far: the queue was full, or the file could not be written. */
  readonly dropped: number;
  /** Writes what is queued, then closes the file. */
  close(): Promise<void>;
}

const errorCode = (error: unknown): string => (error as NodeJS.ErrnoException)?.code ?? String(error);

/**
 * An audit file. A slow or full disk never holds a command up and never grows memory without
 * bound: each user may have {@link AUDIT_LINES_PER_USER} lines waiting and all together
 * {@link AUDIT_LINES_IN_ALL}; past that a line is dropped, counted, and the count written into
 * the file as a `dropped` record once it can be. A file that cannot be written is logged once
 * and tried again later; the commands keep running.
 */
export function openAuditFile(options: AuditFileOptions): AuditFile {
  const { path: file, logger } = options;
  const linesPerUser = options.linesPerUser ?? AUDIT_LINES_PER_USER;
  const linesInAll = options.linesInAll ?? AUDIT_LINES_IN_ALL;
  const retryAfterMs = options.retryAfterMs ?? AUDIT_RETRY_AFTER_MS;
  const queue: Array<{ user: string; line: string }> = [];
  const waiting = new Map<string, number>();
  let handle: FileHandle | undefined;
  let inode = -1;
  let size = 0;
  let dropped = 0;
  let unrecorded = 0; // dropped lines not yet counted in the file
  let slowSaid = false;
  let failedSince: number | undefined;
  let retryAt = 0;
  let rotateSaid = false;
  let draining: Promise<void> | undefined;
  let closed = false;

  const drop = (count: number, why: 'full' | 'unwritable'): void => {
    dropped += count;
    unrecorded += count;
    if (why === 'full' && !slowSaid) {
      slowSaid = true;
      logger?.warn(
        `berth: the audit file ${file} is not keeping up; audit lines are dropped and counted (a "dropped" record in the file) — commands keep running; put it on a faster disk`,
      );
    }
  };

  const reopen = async (): Promise<FileHandle> => {
    await handle?.close().catch(() => undefined);
    handle = undefined;
    // O_NOFOLLOW: a link planted in the file's place is refused, never written through.
    const opened = await open(file, constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_NOFOLLOW, 0o600);
    const facts = await opened.stat();
    if (!facts.isFile()) {
      await opened.close();
      throw Object.assign(new Error(`${file} is not a regular file`), { code: 'ENOTFILE' });
    }
    handle = opened;
    inode = facts.ino;
    size = facts.size;
    return opened;
  };

  /** The open file, reopened when another process (or logrotate) moved it away. */
  const current = async (): Promise<FileHandle> => {
    if (!handle) return reopen();
    const facts = await stat(file).catch(() => undefined);
    if (!facts || facts.ino !== inode) return reopen();
    size = Math.max(size, facts.size);
    return handle;
  };

  const rotate = async (): Promise<void> => {
    try {
      for (let index = options.keep - 1; index >= 1; index--) {
        await rename(`${file}.${index}`, `${file}.${index + 1}`).catch((error: unknown) => {
          if (errorCode(error) !== 'ENOENT') throw error;
        });
      }
      await rename(file, `${file}.1`);
    } catch (error) {
      if (!rotateSaid) logger?.warn(`berth: cannot rotate the audit file ${file} (${errorCode(error)}); it keeps growing — check its folder's permissions`);
      rotateSaid = true;
      return;
    }
    rotateSaid = false;
    await reopen();
  };

  /** Writes `text` (rotating first when it would pass the size); whether it was written. */
  const write = async (text: string): Promise<boolean> => {
    if (failedSince !== undefined && Date.now() < retryAt) return false;
    const bytes = Buffer.from(text, 'utf8');
    try {
      let target = await current();
      if (size > 0 && size + bytes.length > options.maxBytes) {
        await rotate();
        target = await current();
      }
      for (let offset = 0; offset < bytes.length; ) {
        const { bytesWritten } = await target.write(bytes, offset, bytes.length - offset);
        offset += bytesWritten;
      }
      size += bytes.length;
      if (failedSince !== undefined) logger?.info(`berth: the audit file ${file} is written again`);
      failedSince = undefined;
      return true;
    } catch (error) {
      if (failedSince === undefined) {
        logger?.warn(
          `berth: cannot write the audit file ${file} (${errorCode(error)}); commands keep running unaudited, the lines dropped are counted, ` +
            `and it is tried again every ${Math.round(retryAfterMs / 1000)} s — make it writable by the gateway's user`,
        );
        failedSince = Date.now();
      }
      retryAt = Date.now() + retryAfterMs;
      await handle?.close().catch(() => undefined);
      handle = undefined;
      return false;
    }
  };

  const drain = async (): Promise<void> => {
    while (queue.length > 0) {
      const batch = queue.splice(0, BATCH_LINES);
      for (const { user } of batch) {
        const left = (waiting.get(user) ?? 1) - 1;
        if (left > 0) waiting.set(user, left);
        else waiting.delete(user);
      }
      let text = batch.map(({ line }) => line).join('');
      const counted = unrecorded;
      if (counted > 0) text = `${JSON.stringify({ time: new Date().toISOString(), type: 'dropped', count: counted })}\n${text}`;
      if (await write(text)) {
        // Those drops are in the file now.
        unrecorded -= counted;
        if (queue.length === 0) slowSaid = false;
      } else {
        drop(batch.length, 'unwritable');
      }
    }
  };

  const schedule = (): void => {
    // Started after the caller's turn: what one turn appends is written in one batch.
    draining ??= Promise.resolve()
      .then(drain)
      .finally(() => {
        draining = undefined;
        if (queue.length > 0 && !closed) schedule();
      });
  };

  return {
    append(user, record) {
      if (closed) return;
      const held = waiting.get(user) ?? 0;
      if (held >= linesPerUser || queue.length >= linesInAll) {
        drop(1, 'full');
        return;
      }
      waiting.set(user, held + 1);
      queue.push({ user, line: `${JSON.stringify(record)}\n` });
      schedule();
    },
    async flush() {
      while (draining) await draining;
    },
    get dropped() {
      return dropped;
    },
    async close() {
      while (draining) await draining;
      closed = true;
      await handle?.close().catch(() => undefined);
      handle = undefined;
    },
  };
}
