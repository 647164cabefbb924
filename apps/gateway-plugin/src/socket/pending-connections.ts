import type net from 'node:net';
import { SandboxSocketRequestError } from './parse-sandbox-socket-request.js';

/**
 * The connections of `berth serve` still sending their request, oldest first, each with a
 * deadline for its whole request line from the moment of connecting.
 */
export interface PendingConnections {
  /**
   * Starts a newcomer's deadline (`refuse` is told when it passes), making room for it when
   * `maxPending` are waiting; the refusal to answer it with when there is no room.
   */
  add(connection: net.Socket, refuse: (error: SandboxSocketRequestError) => void): SandboxSocketRequestError | undefined;
  /** The connection sent its request, was refused, or closed: its deadline ends. */
  remove(connection: net.Socket): void;
  /** Ends every deadline: the server is closing. */
  clear(): void;
}

/** Connections still sending their request; the one pushed out to make room is answered through `pushOut`. */
export function createPendingConnections(options: {
  readonly maxPending: number;
  /** Milliseconds a connection keeps its place before a newcomer may push it out. */
  readonly pendingGraceMs: number;
  /** Milliseconds a client has, from connecting, to send its whole request line. */
  readonly readTimeoutMs: number;
  readonly pushOut: (connection: net.Socket, error: SandboxSocketRequestError) => void;
}): PendingConnections {
  const { maxPending, pendingGraceMs, readTimeoutMs } = options;
  // Oldest first (a Map keeps insertion order).
  const pending = new Map<net.Socket, { timer: NodeJS.Timeout; since: number }>();
  const remove = (connection: net.Socket): void => {
    clearTimeout(pending.get(connection)?.timer);
    pending.delete(connection);
  };
  return {
    add(connection, refuse) {
      // Room for the newcomer: the connection that has waited longest without a request goes, once
      // it has had its grace; a burst of newcomers never pushes out one another.
      if (pending.size >= maxPending) {
        const [oldest] = pending.entries();
        if (oldest && Date.now() - oldest[1].since >= pendingGraceMs) {
          remove(oldest[0]);
          const pushedOut = new SandboxSocketRequestError(
            'REQUEST_TIMEOUT',
            `no whole request line while ${maxPending} other connections waited; send the request at once after connecting`,
          );
          options.pushOut(oldest[0], pushedOut);
        } else {
          return new SandboxSocketRequestError('SERVER_BUSY', `${maxPending} connections are sending requests at this moment; retry in a moment`);
        }
      }
      // A deadline for the whole request from the moment of connecting: a byte every few
      // seconds does not keep a connection open.
      pending.set(connection, {
        since: Date.now(),
        timer: setTimeout(
          () =>
            refuse(
              new SandboxSocketRequestError(
                'REQUEST_TIMEOUT',
                `no whole request line within ${readTimeoutMs / 1000} s of connecting; send one JSON object ending in a newline`,
              ),
            ),
          readTimeoutMs,
        ),
      });
      return undefined;
    },
    remove,
    clear() {
      for (const { timer } of pending.values()) clearTimeout(timer);
      pending.clear();
    },
  };
}
