import type http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import tls from 'node:tls';
import type { CertificateAuthority } from './certificate-authority.js';

// What the egress proxy's tests share (not a test file itself): a fake API of the tests' own on
// loopback with its own certificate chain, and clients that reach it through the proxy as a
// sandbox's would, told apart by their source addresses.

/** An address sandboxes may not reach (the tests' egress policy refuses it). */
export const FORBIDDEN = '127.0.0.9';
/** A lookup where every name is the fake API on loopback, but `metadata.test`: {@link FORBIDDEN}. */
export const toLoopback = ((host: string, options: unknown, callback: (...args: unknown[]) => void) => {
  const address = host === 'metadata.test' ? FORBIDDEN : '127.0.0.1';
  const all = typeof options === 'object' && options !== null && (options as { all?: boolean }).all;
  if (all) callback(null, [{ address, family: 4 }]);
  else callback(null, address, 4);
}) as net.LookupFunction;

/** What the fake API saw of a request: its target and headers. */
export interface Seen {
  url: string;
  headers: Record<string, string | string[] | undefined>;
  servername: string;
  /** The proxy's end of the upstream connection: which connection carried the request. */
  upstreamPort: number;
}

/** Every request the fake APIs of this test file answered with what they saw, in order (answers that echo a value come back masked). */
export const received: Seen[] = [];

/** The fake API: `/download?bytes=N` streams N bytes, `/echo-header` reflects the credentials in headers, anything else says what it saw ({@link Seen}). */
export function serve(ca: CertificateAuthority, hosts: string[]): https.Server {
  const leaves = new Map(hosts.map((host) => [host, ca.leafFor(host)]));
  const first = leaves.values().next().value!;
  const server = https.createServer({
    cert: first.cert,
    key: first.key,
    SNICallback: (name, callback) => {
      const leaf = leaves.get(name) ?? first;
      callback(null, tls.createSecureContext({ cert: leaf.cert, key: leaf.key }));
    },
  });
  server.on('request', (request, response) => {
    const url = new URL(request.url ?? '/', 'https://x');
    if (url.pathname === '/download') {
      // Streamed in 64 KiB pieces, as a large file would be.
      let left = Number(url.searchParams.get('bytes'));
      const piece = Buffer.alloc(65_536, 120);
      response.writeHead(200, { 'content-length': String(left) });
      const pump = (): void => {
        while (left > 0) {
          const chunk = piece.subarray(0, Math.min(left, piece.length));
          left -= chunk.length;
          if (!response.write(chunk)) {
            response.once('drain', pump);
            return;
          }
        }
        response.end();
      };
      pump();
      return;
    }
    if (url.pathname === '/echo-header') {
      // A server that reflects the request's credentials in a response header.
      response.writeHead(302, {
        location: `https://elsewhere.test/?auth=${encodeURIComponent(String(request.headers.authorization))}`,
        'x-echo': String(request.headers.authorization),
      });
      response.end();
      return;
    }
    const seen: Seen = {
      url: request.url ?? '',
      headers: request.headers,
      servername: (request.socket as tls.TLSSocket).servername || '',
      upstreamPort: request.socket.remotePort ?? 0,
    };
    received.push(seen);
    response.writeHead(200, { 'content-type': 'application/json' });
    response.end(JSON.stringify(seen));
  });
  server.on('upgrade', (request, socket) => {
    socket.write(
      `HTTP/1.1 101 Switching Protocols\r\nupgrade: echo\r\nconnection: Upgrade\r\nx-seen-authorization: ${request.headers.authorization ?? ''}\r\n\r\n`,
    );
    socket.pipe(socket);
  });
  return server;
}

/** Listens on a free port of 127.0.0.1; resolves with it. */
export async function listen(server: net.Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as net.AddressInfo).port;
}

/** Opens a tunnel through the proxy from `from` to `host:port`; resolves with the socket after the proxy's answer, or the answer when it refused. */
export async function connectThrough(
  from: string,
  authority: string,
  through: number,
  at = '127.0.0.1',
): Promise<{ socket: net.Socket; status: number; body: string }> {
  const socket = net.connect({ host: at, port: through, localAddress: from });
  socket.write(`CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\n\r\n`);
  let received = Buffer.alloc(0);
  return new Promise((resolve, reject) => {
    let status = 0;
    let end = -1;
    const onData = (chunk: Buffer): void => {
      received = Buffer.concat([received, chunk]);
      if (status !== 0) return;
      end = received.indexOf('\r\n\r\n');
      if (end < 0) return;
      status = Number(/^HTTP\/1\.1 (\d+)/.exec(received.toString('latin1'))?.[1]);
      if (status === 200) {
        socket.off('data', onData);
        resolve({ socket, status, body: '' });
      }
    };
    socket.on('data', onData);
    socket.once('error', reject);
    // A refusal is read whole, to the close; a dropped connection has no status.
    socket.once('close', () => resolve({ socket, status, body: end < 0 ? '' : received.subarray(end + 4).toString() }));
  });
}

/** An agent whose one connection is `socket` (a TLS socket through the proxy). */
export function over(socket: tls.TLSSocket): https.Agent {
  const agent = new https.Agent();
  (agent as unknown as { createConnection: () => tls.TLSSocket }).createConnection = () => socket;
  return agent;
}

/** Where the tests' proxy and fake API listen, and the CA a sandbox's client trusts. */
export interface Setup {
  readonly proxyPort: number;
  readonly apiPort: number;
  readonly trust: string;
}

/** An HTTPS request through the proxy, as a sandbox's client makes it (trusting the proxy's CA, or `trust`). */
export async function request(
  setup: Setup,
  from: string,
  host: string,
  target: string,
  options: { headers?: Record<string, string>; servername?: string; port?: number; through?: number; at?: string; trust?: string } = {},
): Promise<{ status: number; body: string; headers: http.IncomingHttpHeaders }> {
  const tunnel = await connectThrough(from, `${host}:${options.port ?? setup.apiPort}`, options.through ?? setup.proxyPort, options.at);
  if (tunnel.status !== 200) return { status: tunnel.status, body: tunnel.body, headers: {} };
  const secure = tls.connect({ socket: tunnel.socket, servername: options.servername ?? host, ca: options.trust ?? setup.trust });
  return new Promise((resolve, reject) => {
    const call = https.request({ host, path: target, headers: { host, ...options.headers }, agent: over(secure) }, (response) => {
      let body = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (body += chunk));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, body, headers: response.headers }));
    });
    call.on('error', reject);
    call.end();
  });
}

/** Waits until `condition` holds (polled), failing after `ms`. */
export async function waitFor(condition: () => boolean, ms = 5_000): Promise<void> {
  const started = Date.now();
  while (!condition()) {
    if (Date.now() - started > ms) throw new Error(`not within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
