import { closeSync, constants, existsSync, fstatSync, lstatSync, mkdirSync, openSync, statSync, unlinkSync, type Stats } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { BerthError } from '@berth/core';
import { MAX_SOCKET_PATH_BYTES } from './protocol.js';

// Where `berth serve` listens: a socket folder only its owner can write to, a stale socket
// replaced and anything else at the path refused, and a socket that is 0600 from its first moment.

/** The socket path cannot be served: in use, not a socket, too long, or in an unsafe folder. */
export class SocketPathError extends BerthError {
  /** The socket path at fault. */
  readonly socket: string;

  constructor(socket: string, message: string, options?: { cause?: unknown }) {
    super('SOCKET_PATH', message, options);
    this.socket = socket;
  }
}

function errorCode(error: unknown): string | undefined {
  return (error as NodeJS.ErrnoException | null)?.code;
}

/** The text on one line: a message in a JSON answer or a log line. */
export function oneLine(text: string): string {
  return text.replace(/\s*[\r\n]+\s*/g, ' ').trim();
}

/** True when something answers on the socket; false when it is a stale file nobody listens on. */
function isListening(socket: string): Promise<boolean> {
  return new Promise((resolve, reject) => {
    const probe = net.connect(socket);
    probe.once('connect', () => {
      probe.destroy();
      resolve(true);
    });
    probe.once('error', (error) => (errorCode(error) === 'ECONNREFUSED' ? resolve(false) : reject(error)));
  });
}

/** Where the server binds: the socket's path, or its name under a descriptor of its folder. */
export interface SocketAddress {
  /** What bind, connect, lstat and unlink are given. */
  readonly address: string;
  /** Closes the folder's descriptor, if one was opened. */
  readonly close: () => void;
}

/**
 * Checks the socket's folder and clears a stale socket. The folder is opened once and every later
 * step names the socket through that descriptor (`/proc/self/fd/N/name`), so the folder checked
 * is the folder the socket is made in, and a path longer than a Unix socket allows is served
 * too (only the socket's own name must be short).
 */
export async function prepareSocketPath(socket: string): Promise<SocketAddress> {
  const folder = path.dirname(socket);
  const name = path.basename(socket);
  let folderStats: Stats;
  let folderFd: number | undefined;
  try {
    mkdirSync(folder, { recursive: true, mode: 0o700 });
    if (existsSync('/proc/self/fd')) {
      folderFd = openSync(folder, constants.O_RDONLY | constants.O_DIRECTORY);
      folderStats = fstatSync(folderFd);
    } else {
      folderStats = statSync(folder);
    }
  } catch (error) {
    if (folderFd !== undefined) closeSync(folderFd);
    throw new SocketPathError(socket, `cannot create the socket folder ${folder} (${errorCode(error) ?? 'error'}); choose a folder you can write to`, {
      cause: error,
    });
  }
  const address = folderFd === undefined ? socket : `/proc/self/fd/${folderFd}/${name}`;
  const close = (): void => {
    if (folderFd !== undefined) closeSync(folderFd);
    folderFd = undefined;
  };
  try {
    if (Buffer.byteLength(address) > MAX_SOCKET_PATH_BYTES) {
      throw new SocketPathError(
        socket,
        `socket path ${socket} is ${Buffer.byteLength(socket)} bytes, but Unix sockets allow ${MAX_SOCKET_PATH_BYTES}; choose a shorter path`,
      );
    }
    const uid = process.getuid?.();
    // Whoever can write to the folder (without the sticky bit) or owns it can swap the socket for
    // their own and receive every command and its input.
    const othersWrite = (folderStats.mode & 0o022) !== 0 && (folderStats.mode & 0o1000) === 0;
    const foreignOwner = uid !== undefined && folderStats.uid !== uid && folderStats.uid !== 0;
    if (othersWrite || foreignOwner) {
      const why = othersWrite ? 'writable by other users' : `owned by uid ${folderStats.uid}`;
      throw new SocketPathError(
        socket,
        `the socket folder ${folder} is ${why}, so the socket could be replaced; ` +
          'use a folder only you can write to (berth serve creates a missing one with mode 0700)',
      );
    }
    let existing: Stats;
    try {
      existing = lstatSync(address);
    } catch (error) {
      if (errorCode(error) === 'ENOENT') return { address, close };
      throw new SocketPathError(socket, `cannot inspect ${socket} (${errorCode(error) ?? 'error'}); choose another --socket path`, { cause: error });
    }
    if (!existing.isSocket()) {
      throw new SocketPathError(socket, `${socket} exists and is not a socket; berth serve will not replace it; remove it or choose another --socket path`);
    }
    let listening: boolean;
    try {
      listening = await isListening(address);
    } catch (error) {
      throw new SocketPathError(
        socket,
        `cannot probe the existing socket ${socket} (${errorCode(error) ?? 'error'}); remove it or choose another --socket path`,
        { cause: error },
      );
    }
    if (listening) throw new SocketPathError(socket, `another server already listens on ${socket}; stop it or choose another --socket path`);
    // A socket nobody listens on is what a killed server leaves behind.
    unlinkSync(address);
    return { address, close };
  } catch (error) {
    close();
    throw error;
  }
}

/** Listens on `address`, the socket made mode 0600 by bind() itself; `socket` is the path messages name. */
export function listen(server: net.Server, address: string, socket: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const onError = (error: Error) =>
      reject(
        new SocketPathError(socket, `cannot listen on ${socket} (${errorCode(error) ?? oneLine(error.message)}); choose another --socket path`, {
          cause: error,
        }),
      );
    server.once('error', onError);
    // The socket is created by bind(), synchronously inside listen(): a umask of 0177 makes it
    // 0600 from its first moment, not after a chmod that another user could race.
    const previous = process.umask(0o177);
    try {
      server.listen(address, () => {
        server.off('error', onError);
        resolve();
      });
    } finally {
      process.umask(previous);
    }
  });
}
