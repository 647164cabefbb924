import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** An HTTP(S) proxy on 127.0.0.1 that forwards nothing and remembers where the gateway tried to go. */
export interface BlackholeProxy {
  /** The value for `HTTP_PROXY`/`HTTPS_PROXY`. */
  readonly url: string;
  /** `host:port` of every refused attempt, in order. */
  attempts(): readonly string[];
  close(): Promise<void>;
}

/**
 * Starts the proxy: `CONNECT` tunnels and absolute-URL requests are answered 403 and closed.
 * The test runs in a network namespace with only loopback, so nothing could leave anyway; the
 * proxy makes the gateway's outbound attempts visible instead of slow DNS failures.
 */
export async function startBlackholeProxy(): Promise<BlackholeProxy> {
  const attempts: string[] = [];
  const server = http.createServer((request, response) => {
    try {
      attempts.push(new URL(request.url ?? '').host);
    } catch {
      attempts.push(String(request.headers.host ?? request.url));
    }
    response.writeHead(403, { connection: 'close' });
    response.end('outbound traffic is blocked in this test\n');
  });
  server.on('connect', (request: http.IncomingMessage, socket: import('node:net').Socket) => {
    attempts.push(String(request.url));
    socket.end('HTTP/1.1 403 Forbidden\r\nconnection: close\r\n\r\n');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    attempts: () => [...attempts],
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
