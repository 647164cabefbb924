import { closeSync, constants, lstatSync, openSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import {
  MAX_SANDBOX_SOCKET_REQUEST_BYTES,
  MAX_SOCKET_PATH_BYTES,
  type SandboxSocketFileRequest,
  type SandboxSocketFileResult,
  type SandboxSocketRequest,
  type SandboxSocketResponse,
  type SandboxSocketResult,
} from './protocol.js';

// This file is on the spawned client's path and must not import @berth/core (zod and yaml
// cost about 100 ms to load), so its error is a plain Error with the same `code` convention.

/** The sandbox socket could not be used, or `berth serve` refused the request (`code` says which). */
export class SandboxSocketClientError extends Error {
  /** A stable code: `SOCKET_MISSING`, `SOCKET_REFUSED`, … or the server's own, e.g. `IDENTITY_INVALID`. */
  readonly code: string;

  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'SandboxSocketClientError';
    this.code = code;
  }
}

function errorCode(error: unknown): string | undefined {
  return (error as NodeJS.ErrnoException | null)?.code;
}

/** Where to connect: the socket's path, or past what a socket address holds, its name under a descriptor of its folder. */
interface SocketAddress {
  readonly address: string;
  readonly close: () => void;
}

/**
 * The address to connect to `socket` by: its path, or, when the path is longer than a Unix socket
 * address holds, its name under a descriptor of its folder (`/proc/self/fd/N/name`) — the way
 * `berth serve` binds such a path (socket-path.ts), so every path it serves can be reached.
 */
function socketAddress(socket: string): SocketAddress {
  if (Buffer.byteLength(socket) <= MAX_SOCKET_PATH_BYTES) return { address: socket, close: () => undefined };
  let folder: number;
  try {
    folder = openSync(path.dirname(socket), constants.O_RDONLY | constants.O_DIRECTORY);
  } catch (error) {
    throw unusable(socket, error);
  }
  let open = true;
  const close = (): void => {
    // Once only: a descriptor number closed twice could be another file's by then.
    if (open) closeSync(folder);
    open = false;
  };
  return { address: `/proc/self/fd/${folder}/${path.basename(socket)}`, close };
}

/** The client's error for a socket (or its folder) that could not be inspected. */
function unusable(socket: string, error: unknown): SandboxSocketClientError {
  const start = `start the server with "berth serve --socket ${socket}"`;
  if (errorCode(error) === 'ENOENT') return new SandboxSocketClientError('SOCKET_MISSING', `no berth server at ${socket}: the socket does not exist; ${start}`);
  if (errorCode(error) === 'EACCES')
    return new SandboxSocketClientError('SOCKET_DENIED', `cannot reach ${socket}: permission denied; run as the user that started berth serve`);
  return new SandboxSocketClientError('SOCKET_UNUSABLE', `cannot inspect ${socket} (${errorCode(error) ?? 'error'}); ${start}`, { cause: error });
}

function checkSocket(socket: string, address: string): void {
  const start = `start the server with "berth serve --socket ${socket}"`;
  let stats: ReturnType<typeof lstatSync>;
  try {
    stats = lstatSync(address);
  } catch (error) {
    throw unusable(socket, error);
  }
  if (!stats.isSocket()) throw new SandboxSocketClientError('SOCKET_UNUSABLE', `${socket} is not a socket; ${start}`);
  // Commands and their input go only to a server of our own user: another user's socket at the
  // path could be a stand-in that collects them.
  const uid = process.getuid?.();
  if (uid !== undefined && stats.uid !== uid) {
    throw new SandboxSocketClientError(
      'SOCKET_FOREIGN',
      `${socket} belongs to uid ${stats.uid}, not to you (uid ${uid}); refusing to send a command to another user's server`,
    );
  }
}

/**
 * Sends one request to `berth serve` over its Unix socket and resolves with the command's
 * result. Throws {@link SandboxSocketClientError} when the socket is missing, stale, foreign or
 * refused, and with the server's code and one-line message when it refused the request.
 * Loads nothing but Node's own modules, so a spawned client stays fast.
 */
export function requestSandboxExec(socketPath: string, request: SandboxSocketRequest): Promise<SandboxSocketResult> {
  return requestSandboxSocket<SandboxSocketResult>(socketPath, request);
}

/** As {@link requestSandboxExec}, for a file between the host and the sandbox (`put-file`, `get-file`). */
export function requestSandboxFile(socketPath: string, request: SandboxSocketFileRequest): Promise<SandboxSocketFileResult> {
  return requestSandboxSocket<SandboxSocketFileResult>(socketPath, request);
}

function requestSandboxSocket<T extends Exclude<SandboxSocketResponse, { error: unknown }>>(
  socketPath: string,
  request: SandboxSocketRequest | SandboxSocketFileRequest,
): Promise<T> {
  const socket = path.resolve(socketPath);
  const line = JSON.stringify(request);
  if (Buffer.byteLength(line) > MAX_SANDBOX_SOCKET_REQUEST_BYTES) {
    return Promise.reject(
      new SandboxSocketClientError('REQUEST_TOO_LARGE', `the request is larger than ${MAX_SANDBOX_SOCKET_REQUEST_BYTES} bytes; send less input with it`),
    );
  }
  let target: SocketAddress;
  try {
    target = socketAddress(socket);
  } catch (error) {
    return Promise.reject(error);
  }
  try {
    checkSocket(socket, target.address);
  } catch (error) {
    target.close();
    return Promise.reject(error);
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let settled = false;
    const fail = (error: SandboxSocketClientError): void => {
      if (settled) return;
      settled = true;
      connection.destroy();
      reject(error);
    };
    const connection = net.connect(target.address);
    // The folder's descriptor is needed only to connect.
    connection.once('connect', target.close);
    connection.once('close', target.close);
    connection.on('connect', () => connection.write(`${line}\n`));
    connection.on('data', (chunk: Buffer) => chunks.push(chunk));
    connection.on('error', (error) => {
      const code = errorCode(error);
      // The server may close after answering while a write is pending; what it sent still counts.
      if ((code === 'EPIPE' || code === 'ECONNRESET') && chunks.length > 0) return;
      if (code === 'ECONNREFUSED') {
        fail(
          new SandboxSocketClientError(
            'SOCKET_REFUSED',
            `nothing listens on ${socket} (a socket left by a stopped server); start the server with "berth serve --socket ${socket}"`,
          ),
        );
      } else if (code === 'EACCES') {
        fail(new SandboxSocketClientError('SOCKET_DENIED', `cannot connect to ${socket}: permission denied; run as the user that started berth serve`));
      } else {
        fail(
          new SandboxSocketClientError('SOCKET_FAILED', `the connection to ${socket} failed (${code ?? error.message}); check that berth serve is running`, {
            cause: error,
          }),
        );
      }
    });
    connection.on('close', () => {
      if (settled) return;
      const text = Buffer.concat(chunks).toString('utf8');
      const newline = text.indexOf('\n');
      if (newline < 0) {
        fail(new SandboxSocketClientError('SERVER_CLOSED', `the berth server on ${socket} closed the connection without answering; see its log`));
        return;
      }
      let response: SandboxSocketResponse;
      try {
        response = JSON.parse(text.slice(0, newline)) as SandboxSocketResponse;
      } catch {
        fail(new SandboxSocketClientError('PROTOCOL', `the server on ${socket} answered something that is not JSON; is it berth serve?`));
        return;
      }
      if ('error' in response) {
        fail(new SandboxSocketClientError(String(response.error.code), String(response.error.message)));
        return;
      }
      settled = true;
      resolve(response as T);
    });
  });
}
