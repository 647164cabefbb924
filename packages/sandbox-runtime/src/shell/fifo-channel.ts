import { randomBytes } from 'node:crypto';
import { closeSync, constants, lstatSync, openSync, readdirSync, unlinkSync, writeSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { CHANNELS_FOLDER, type ExecChannel } from '@berth/core/driver';
import { createExecChannelEvents } from './exec-channel-events.js';
import { closeQuietly, descriptorPath, makeFifosIn, openFolder } from '../host-files/folder-descriptor.js';

/**
 * A sandbox's shells without an engine exec: its main process (the launcher, see
 * `KEEP_ALIVE_COMMAND`) reads shell requests from a FIFO in the sandbox's channel folder, a
 * host folder of the scope mounted read-only at `/run/berth`, and starts `/bin/sh` on three FIFOs
 * the gateway made there. The gateway then talks to the shell through those FIFOs directly:
 * no engine exec to start it (the engine runs execs of one container one after another, tens of
 * milliseconds each), and no engine in the way of each command's bytes. Every FIFO is made,
 * opened and removed through a descriptor of the channel folder opened without following links.
 */

/** The FIFO on which the launcher takes requests: one line, a channel's name. */
export const LAUNCH_FIFO = 'launch';
/** How long a request may take to get its shell before the engine's exec is used instead. @default */
const HELLO_TIMEOUT_MS = 3_000;
/**
 * How long a request waits for the launcher to read its FIFO before the engine's exec is used
 * instead, once the launcher has answered in this sandbox (it reopens the FIFO after each
 * request). @default
 */
const READER_WAIT_MS = 500;
/** A channel's FIFOs: the making process's instance (8 hex digits), a random part, the stream. */
const FIFO_NAME = /^([0-9a-f]{8})[0-9a-f]{8}\.(in|out|err)$/;
/** How old another process's FIFOs must be before their lack of a reader makes them stale (the maker opens them right after making them). */
const STALE_AFTER_MS = 10_000;
/**
 * This process's mark on the FIFOs it makes: random, not its pid, which another process may
 * have again later (and every gateway that is pid 1 of its container has).
 */
const INSTANCE = randomBytes(4).toString('hex');

/** The channel folder of a scope's folder. */
export function channelsFolderOf(scopeFolder: string): string {
  return path.join(scopeFolder, CHANNELS_FOLDER);
}

/** Whether anything reads the FIFO (its maker keeps a channel's `.out` open for reading for as long as it lives). */
function hasReader(fifo: string): boolean {
  try {
    const fd = openSync(fifo, constants.O_WRONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW);
    closeSync(fd);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code !== 'ENXIO';
  }
}

/**
 * Removes the FIFOs that processes which are gone (a gateway killed) left in the folder: another
 * instance's channel whose `.out` nobody reads any more, once it is old enough that its maker
 * would have opened it.
 */
function removeStale(folder: number): void {
  try {
    const channels = new Map<string, string[]>();
    for (const entry of readdirSync(descriptorPath(folder))) {
      const match = FIFO_NAME.exec(entry);
      if (!match || match[1] === INSTANCE) continue;
      const name = entry.slice(0, 16);
      channels.set(name, [...(channels.get(name) ?? []), entry]);
    }
    for (const [name, entries] of channels) {
      try {
        const out = descriptorPath(folder, `${name}.out`);
        const stats = lstatSync(descriptorPath(folder, entries[0]!));
        if (Date.now() - stats.mtimeMs < STALE_AFTER_MS) continue;
        if (entries.includes(`${name}.out`) && (!lstatSync(out).isFIFO() || hasReader(out))) continue;
        for (const entry of entries) unlinkSync(descriptorPath(folder, entry));
      } catch {
        // Gone meanwhile.
      }
    }
  } catch {
    // The folder went, or a file did: nothing to clean.
  }
}

/**
 * Writes one request line to the launcher. False when there is none: the FIFO is missing (a
 * sandbox made before channels, or where the host has no mkfifo) or nobody reads it (the
 * launcher was killed, or the engine runs elsewhere and the FIFO is not shared).
 */
async function requestShell(folder: number, name: string, readerWaitMs: number): Promise<boolean> {
  // The launcher reopens the FIFO after each writer leaves, and a sandbox that just started may
  // not have reached it yet: nobody reads it for a moment. Then the engine's exec.
  const deadline = performance.now() + readerWaitMs;
  for (let attempt = 0; ; attempt++) {
    let fd: number;
    try {
      fd = openSync(descriptorPath(folder, LAUNCH_FIFO), constants.O_WRONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENXIO' || performance.now() >= deadline) return false;
      await new Promise((resolve) => setTimeout(resolve, Math.min(2 ** attempt, 250)));
      continue;
    }
    try {
      // Shorter than PIPE_BUF: written whole, never mixed with another process's request.
      writeSync(fd, `${name}\n`);
      return true;
    } catch {
      return false;
    } finally {
      closeSync(fd);
    }
  }
}

/**
 * Opens a `/bin/sh` in the sandbox whose channel folder is at `location`, through its launcher.
 * Resolves with the channel once the shell runs, or `undefined` when the sandbox has no
 * launcher or it did not answer in time (the caller then uses the engine's exec).
 */
export async function openFifoChannel(location: string, options: { helloTimeoutMs?: number; readerWaitMs?: number } = {}): Promise<ExecChannel | undefined> {
  let folder: number;
  try {
    folder = openFolder(location, 'the channel folder');
  } catch {
    return undefined;
  }
  removeStale(folder);
  // The maker's instance first, so that what a killed gateway leaves is known to be someone else's.
  const name = `${INSTANCE}${randomBytes(4).toString('hex')}`;
  const names = { in: `${name}.in`, out: `${name}.out`, err: `${name}.err` };
  const files = { in: descriptorPath(folder, names.in), out: descriptorPath(folder, names.out), err: descriptorPath(folder, names.err) };
  // The names stay until the channel closes (see below); the folder's descriptor with them.
  let cleaned = false;
  const unlinkAll = (): void => {
    if (cleaned) return;
    cleaned = true;
    for (const file of Object.values(files)) {
      try {
        unlinkSync(file);
      } catch {
        // Already gone.
      }
    }
    closeQuietly(folder);
  };
  try {
    await makeFifosIn(folder, [names.in, names.out, names.err]);
  } catch {
    closeQuietly(folder);
    return undefined;
  }
  const opened: number[] = [];
  const closeOpened = (): void => {
    for (const fd of opened.splice(0)) {
      try {
        closeSync(fd);
      } catch {
        // Closed by a socket already.
      }
    }
  };
  const fifoFlags = constants.O_NONBLOCK | constants.O_NOFOLLOW;
  try {
    // Read-write first, so that the shell's own opens (stdin to read, stdout and stderr to write)
    // never wait for this side, and these never fail for want of the other side.
    const outBoth = openSync(files.out, constants.O_RDWR | fifoFlags);
    opened.push(outBoth);
    opened.push(openSync(files.err, constants.O_RDWR | fifoFlags));
    opened.push(openSync(files.in, constants.O_RDWR | fifoFlags));
    if (!(await requestShell(folder, name, options.readerWaitMs ?? READER_WAIT_MS))) {
      closeOpened();
      unlinkAll();
      return undefined;
    }
    // The shell says its name once its three ends are open, then becomes /bin/sh.
    const hello = new net.Socket({ fd: outBoth, readable: true, writable: false });
    opened.splice(opened.indexOf(outBoth), 1);
    const greeted = await new Promise<boolean>((resolve) => {
      let text = '';
      const timer = setTimeout(() => resolve(false), options.helloTimeoutMs ?? HELLO_TIMEOUT_MS);
      hello.on('data', (chunk: Buffer) => {
        text += chunk.toString('latin1');
        if (text.includes('\n')) {
          clearTimeout(timer);
          hello.pause();
          resolve(text === `${name}\n`);
        }
      });
      hello.on('error', () => undefined);
    });
    if (!greeted) {
      hello.destroy();
      closeOpened();
      unlinkAll();
      return undefined;
    }
    // The ends this side keeps: read-only for stdout and stderr (their end comes when the shell
    // and whatever holds its output are gone) and write-only for stdin (its end is the shell's
    // stdin closing, when this process closes it or dies). Opened before the read-write ones
    // close, so the FIFOs never lack a reader or a writer in between. The names stay until the
    // channel closes: a file system with an unlinked file still open cannot be remounted
    // read-only, and the names let nobody in but the sandbox's own user, who owns the session.
    const readWrite = opened.splice(0);
    const kept: number[] = [];
    try {
      for (const [file, flags] of [
        [files.out, constants.O_RDONLY],
        [files.err, constants.O_RDONLY],
        [files.in, constants.O_WRONLY],
      ] as const) {
        kept.push(openSync(file, flags | fifoFlags));
      }
    } catch (error) {
      for (const fd of kept) closeSync(fd);
      throw error;
    } finally {
      hello.destroy();
      for (const fd of readWrite) closeSync(fd);
    }
    const [stdoutFd, stderrFd, stdinFd] = kept as [number, number, number];
    return fifoChannel(
      new net.Socket({ fd: stdinFd, readable: false, writable: true }),
      new net.Socket({ fd: stdoutFd, readable: true, writable: false }),
      new net.Socket({ fd: stderrFd, readable: true, writable: false }),
      unlinkAll,
    );
  } catch {
    closeOpened();
    unlinkAll();
    return undefined;
  }
}

function fifoChannel(stdin: net.Socket, stdout: net.Socket, stderr: net.Socket, removeNames: () => void): ExecChannel {
  const events = createExecChannelEvents(() => {
    stdin.destroy();
    stdout.destroy();
    stderr.destroy();
    removeNames();
  });
  stdout.on('data', events.stdout);
  stderr.on('data', events.stderr);
  // The shell is gone when either output ends, or its stdin has no reader left (EPIPE).
  for (const socket of [stdin, stdout, stderr]) {
    socket.on('end', events.close);
    socket.on('close', events.close);
    socket.on('error', events.close);
  }
  return {
    write(data) {
      if (!events.closed) stdin.write(data);
    },
    end() {
      if (!events.closed) stdin.end();
    },
    destroy() {
      events.close();
    },
    ...events.listeners,
    async exitCode() {
      // The launcher does not report it; sessions and kill shells never ask.
      return undefined;
    },
  };
}
