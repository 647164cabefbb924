import type net from 'node:net';
import type { ProxyClient } from './egress-proxy.js';
import type { RefusalLog } from './refusal-log.js';
import type { UpstreamPool } from './upstream-pool.js';

/** The connections sandboxes hold open to the proxy, counted per sandbox and in all. */
export interface ProxyConnections {
  /**
   * Counts `socket` as `client`'s until it closes; false (logged) when the sandbox, or all of
   * them together, hold as many as they may: the caller drops it.
   */
  admit(client: ProxyClient, socket: net.Socket): boolean;
  /** Connections open now, per sandbox. */
  counts(): ReadonlyMap<string, number>;
  /** Ends every connection: the proxy is closing. */
  destroyAll(): void;
}

/** The proxy's connection caps; a sandbox's kept-alive upstream connections go `lingerMs` after its last connection closed. */
export function createProxyConnections(options: {
  readonly perClient: number;
  readonly total: number;
  readonly lingerMs: number;
  readonly refusals: RefusalLog;
  readonly pool: UpstreamPool;
}): ProxyConnections {
  const { perClient, total, refusals, pool } = options;
  const open = new Map<string, number>();
  let openTotal = 0;
  const sockets = new Set<net.Socket>();
  return {
    admit(client, socket) {
      const count = open.get(client.sandbox) ?? 0;
      if (count >= perClient || openTotal >= total) {
        refusals.warn(
          `full ${client.sandbox}`,
          `berth: egress proxy: ${client.sandbox} holds ${count} connections (at most ${perClient}); more are dropped until some close`,
        );
        return false;
      }
      open.set(client.sandbox, count + 1);
      openTotal += 1;
      sockets.add(socket);
      socket.once('close', () => {
        sockets.delete(socket);
        openTotal -= 1;
        const left = (open.get(client.sandbox) ?? 1) - 1;
        if (left > 0) open.set(client.sandbox, left);
        else {
          // Its last connection closed: its kept-alive upstream connections stay a while for its next one (a CLI tool makes one request per run), then go.
          open.delete(client.sandbox);
          setTimeout(() => open.has(client.sandbox) || pool.closeIdle(client.sandbox), options.lingerMs).unref();
        }
      });
      return true;
    },
    counts: () => new Map(open),
    destroyAll() {
      for (const socket of sockets) socket.destroy();
    },
  };
}
