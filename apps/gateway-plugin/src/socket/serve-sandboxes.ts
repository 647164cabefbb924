import { chmodSync, lstatSync, statSync, unlinkSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { isBerthError, type HostLogger, type SandboxRequest, type SessionContext } from '@berth/core';
import type { Berth } from '../create-berth.js';
import { parseSandboxSocketLine, SandboxSocketRequestError } from './parse-sandbox-socket-request.js';
import { MAX_SANDBOX_SOCKET_REQUEST_BYTES, type SandboxSocketAnyRequest, type SandboxSocketErrorResponse } from './protocol.js';
import { createPendingConnections } from './pending-connections.js';
import { answer, errorResponse, runSocketRequest } from './run-socket-request.js';
import { createServeAdmission } from './serve-admission.js';
import { listen, oneLine, prepareSocketPath } from './socket-path.js';

export { SocketPathError } from './socket-path.js';

/** Options of {@link serveSandboxes}. */
export interface ServeSandboxesOptions {
  /** The Berth whose backend (and warm shell sessions) every request uses. */
  readonly berth: Berth;
  /** Path of the Unix socket; its folder is created with mode 0700 when missing. */
  readonly socket: string;
  readonly logger?: HostLogger;
  /**
   * Commands running at once. A sandbox runs its commands one after another, so this is how many
   * sandboxes may have a command in flight; a request for yet another sandbox is answered
   * `SERVER_BUSY`. Requests waiting behind their sandbox's running command do not count here.
   * @default 256
   */
  readonly maxConnections?: number;
  /**
   * Requests of one sandbox that may wait behind its running command; one more is answered
   * `SERVER_BUSY`, so that one user's queue never keeps everyone else out. @default 64
   */
  readonly maxQueuedPerSandbox?: number;
  /** Requests that may wait, all sandboxes together. @default 1024 */
  readonly maxQueued?: number;
  /**
   * Connections that have not sent their whole request yet. At the limit the oldest of them is
   * closed to make room once it has had `pendingGraceMs`, so idle connections can never keep
   * real requests out; when every one of them is younger, the newcomer is answered
   * `SERVER_BUSY`. @default 1024
   */
  readonly maxPendingConnections?: number;
  /** Milliseconds a connection keeps its place before a newcomer may push it out. @default 1000 */
  readonly pendingGraceMs?: number;
  /** Milliseconds a client has, from connecting, to send its whole request line (not an idle timer). @default 10000 */
  readonly requestReadTimeoutMs?: number;
}

/** A listening sandbox socket. */
export interface SandboxSocketServer {
  /** The absolute socket path. */
  readonly socket: string;
  /**
   * Stops listening and removes the socket at once, then waits up to `graceMs` for the
   * answers in flight before closing their connections. The Berth is left open.
   * @default graceMs 5000
   */
  close(options?: { graceMs?: number }): Promise<void>;
}

function sessionOf(request: SandboxSocketAnyRequest): SessionContext | undefined {
  const session: SessionContext = {
    ...(request.platform !== undefined ? { platform: request.platform } : {}),
    ...(request.userId !== undefined ? { userId: request.userId } : {}),
    ...(request.chatId !== undefined ? { chatId: request.chatId } : {}),
    ...(request.sessionKey !== undefined ? { sessionKey: request.sessionKey } : {}),
    ...(request.profile !== undefined ? { profile: request.profile } : {}),
  };
  return Object.keys(session).length > 0 ? session : undefined;
}

/**
 * Serves `berth.execute()` on a Unix socket, one JSON request line per connection answered by
 * one JSON line, or by a framed result when the request asks (see `protocol.ts`), so that a process the host spawns reaches the gateway's
 * warm sandbox sessions. The socket is mode 0600 in a folder only its owner can write to; a
 * stale socket is replaced, anything else at the path is refused.
 */
export async function serveSandboxes(options: ServeSandboxesOptions): Promise<SandboxSocketServer> {
  const { berth, logger } = options;
  const socket = path.resolve(options.socket);
  const readTimeout = options.requestReadTimeoutMs ?? 10_000;
  const maxInFlight = options.maxConnections ?? 256;
  const maxQueuedPerScope = options.maxQueuedPerSandbox ?? 64;
  const maxQueued = options.maxQueued ?? 1024;
  const maxPending = options.maxPendingConnections ?? 1024;
  const pendingGrace = options.pendingGraceMs ?? 1000;
  const pending = createPendingConnections({
    maxPending,
    pendingGraceMs: pendingGrace,
    readTimeoutMs: readTimeout,
    pushOut: (connection, error) => answer(connection, errorResponse(error)),
  });
  const bound = await prepareSocketPath(socket);

  const connections = new Set<net.Socket>();
  const inFlight = new Set<Promise<void>>();

  const { admit, release } = createServeAdmission({ maxInFlight, maxQueuedPerScope, maxQueued });

  const refusal = (error: unknown): SandboxSocketErrorResponse => {
    const response = errorResponse(error);
    if (!isBerthError(error)) logger?.error(`berth serve: ${response.error.message}`);
    return response;
  };
  // Half-open: a client may end its side after the request and still read the answer.
  const server = net.createServer({ allowHalfOpen: true }, (connection) => {
    connections.add(connection);
    connection.once('close', () => {
      connections.delete(connection);
      pending.remove(connection);
    });
    // A client that vanished is not the server's problem (its command is stopped: runSocketRequest).
    connection.on('error', () => {});
    const chunks: Buffer[] = [];
    let size = 0;
    let received = false;
    const refuse = (error: SandboxSocketRequestError): void => {
      if (received) return;
      received = true;
      pending.remove(connection);
      answer(connection, errorResponse(error));
    };
    const take = (line: string): void => {
      received = true;
      pending.remove(connection);
      connection.pause();
      // Whose sandbox it is, decided (and checked) before it takes a place in any queue.
      let request: SandboxSocketAnyRequest;
      let sandboxRequest: SandboxRequest;
      try {
        request = parseSandboxSocketLine(line);
        const session = sessionOf(request);
        sandboxRequest = berth.request({
          ...(session ? { session } : {}),
          ...(request.taskId !== undefined ? { taskId: request.taskId } : {}),
          ...(request.sessionRequired ? { sessionRequired: true } : {}),
          ...(request.variables ? { variables: request.variables } : {}),
        });
      } catch (error) {
        answer(connection, refusal(error));
        return;
      }
      const scopeKey = sandboxRequest.scope.key;
      const busy = admit(scopeKey);
      if (busy) {
        answer(connection, errorResponse(busy));
        return;
      }
      const task = runSocketRequest(berth, connection, request, sandboxRequest, refusal).finally(() => {
        release(scopeKey);
        inFlight.delete(task);
      });
      inFlight.add(task);
    };
    // Its deadline starts now; no room among the connections still sending (pending-connections.ts): refused.
    const full = pending.add(connection, refuse);
    if (full) {
      received = true;
      answer(connection, errorResponse(full));
      return;
    }
    connection.on('data', (chunk: Buffer) => {
      if (received) return;
      const newline = chunk.indexOf(0x0a);
      const part = newline < 0 ? chunk : chunk.subarray(0, newline);
      size += part.length;
      if (size > MAX_SANDBOX_SOCKET_REQUEST_BYTES) {
        connection.pause();
        refuse(
          new SandboxSocketRequestError('REQUEST_TOO_LARGE', `the request is larger than ${MAX_SANDBOX_SOCKET_REQUEST_BYTES} bytes; send less input with it`),
        );
        return;
      }
      chunks.push(part);
      if (newline >= 0) take(Buffer.concat(chunks).toString('utf8'));
    });
    // A client that half-closes without a newline has still sent its request.
    connection.on('end', () => {
      if (!received) take(Buffer.concat(chunks).toString('utf8'));
    });
  });
  try {
    await listen(server, bound.address, socket);
  } catch (error) {
    bound.close();
    throw error;
  }
  chmodSync(bound.address, 0o600);
  const own = statSync(bound.address);
  server.on('error', (error) => logger?.error(`berth serve: ${oneLine(error.message)}`));

  let closing: Promise<void> | undefined;
  return {
    socket,
    close(closeOptions = {}) {
      closing ??= (async () => {
        const stopped = new Promise<void>((resolve) => server.close(() => resolve()));
        try {
          // Remove only our own socket: another server may have taken the path since.
          const current = lstatSync(bound.address);
          if (current.ino === own.ino && current.dev === own.dev) unlinkSync(bound.address);
        } catch {
          // Already gone.
        }
        bound.close();
        const grace = closeOptions.graceMs ?? 5_000;
        if (inFlight.size > 0) {
          let timer: NodeJS.Timeout | undefined;
          await Promise.race([Promise.allSettled([...inFlight]), new Promise((resolve) => (timer = setTimeout(resolve, grace)))]);
          clearTimeout(timer);
        }
        pending.clear();
        for (const connection of connections) connection.destroy();
        await stopped;
      })();
      return closing;
    },
  };
}
