import { mkdtempSync, rmSync } from 'node:fs';
import type http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadCertificateAuthority, type CertificateAuthority } from './certificate-authority.js';
import { createEgressProxy, type EgressProxy, type ProxyClient } from './egress-proxy.js';
import { parseHostPattern } from './host-patterns.js';
import { placeholderFor, type BrokeredValue } from './placeholders.js';

/**
 * The proxy against a fake API of the test's own on loopback, with its own certificate chain
 * (another CA, trusted upstream only through `upstreamCa`). Sandboxes are told apart by their
 * addresses, as on an engine: here 127.0.0.2 (A) and 127.0.0.3 (B); 127.0.0.4 is no sandbox.
 */
const KEY = 'test-installation-key';
const TOKEN = 'ghp_REAL_token_value_0123456789';
const A = '127.0.0.2';
const B = '127.0.0.3';
const STRANGER = '127.0.0.4';
const placeholderA = placeholderFor(KEY, 'sandbox-a', 'GITHUB_TOKEN');
const placeholderB = placeholderFor(KEY, 'sandbox-b', 'GITHUB_TOKEN');

let folder: string;
let proxyCa: CertificateAuthority;
let upstreamCa: CertificateAuthority;
let untrustedCa: CertificateAuthority;
let api: https.Server;
let apiPort: number;
let impostor: https.Server;
let impostorPort: number;
let proxy: EgressProxy;
let proxyPort: number;
const logs: string[] = [];

/** Every name is the fake API on loopback, but `metadata.test`: 127.0.0.9, which sandboxes may not reach. */
const FORBIDDEN = '127.0.0.9';
const toLoopback = ((host: string, options: unknown, callback: (...args: unknown[]) => void) => {
  const address = host === 'metadata.test' ? FORBIDDEN : '127.0.0.1';
  const all = typeof options === 'object' && options !== null && (options as { all?: boolean }).all;
  if (all) callback(null, [{ address, family: 4 }]);
  else callback(null, address, 4);
}) as net.LookupFunction;
const allowsAddress = (address: string): boolean => address !== FORBIDDEN;

const brokered = (table: [string, BrokeredValue][]) => new Map(table);
const clients = new Map<string, ProxyClient>([
  [
    A,
    {
      sandbox: 'sandbox-a',
      placeholders: brokered([
        [placeholderA, { variable: 'GITHUB_TOKEN', value: TOKEN, hosts: [parseHostPattern('api.github.test'), parseHostPattern('*.githubusercontent.test')] }],
      ]),
    },
  ],
  [
    B,
    {
      sandbox: 'sandbox-b',
      placeholders: brokered([[placeholderB, { variable: 'GITHUB_TOKEN', value: 'ghp_B_token', hosts: [parseHostPattern('api.github.test')] }]]),
      allow: [parseHostPattern('api.github.test'), parseHostPattern('*.allowed.test')],
    },
  ],
]);

/** What the fake API saw of a request: its target and headers. */
interface Seen {
  url: string;
  headers: Record<string, string | string[] | undefined>;
  servername: string;
  /** The proxy's end of the upstream connection: which connection carried the request. */
  upstreamPort: number;
}

function serve(ca: CertificateAuthority, hosts: string[]): https.Server {
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

async function listen(server: net.Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as net.AddressInfo).port;
}

/** Opens a tunnel through the proxy from `from` to `host:port`; resolves with the socket after the proxy's answer, or the answer when it refused. */
async function connectThrough(
  from: string,
  authority: string,
  through = proxyPort,
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
function over(socket: tls.TLSSocket): https.Agent {
  const agent = new https.Agent();
  (agent as unknown as { createConnection: () => tls.TLSSocket }).createConnection = () => socket;
  return agent;
}

/** An HTTPS request through the proxy, as a sandbox's client makes it (trusting only the proxy's CA). */
async function request(
  from: string,
  host: string,
  target: string,
  options: { headers?: Record<string, string>; servername?: string; port?: number; through?: number; at?: string } = {},
): Promise<{ status: number; body: string; headers: http.IncomingHttpHeaders }> {
  const tunnel = await connectThrough(from, `${host}:${options.port ?? apiPort}`, options.through, options.at);
  if (tunnel.status !== 200) return { status: tunnel.status, body: tunnel.body, headers: {} };
  const secure = tls.connect({ socket: tunnel.socket, servername: options.servername ?? host, ca: proxyCa.certificatePem });
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

beforeAll(async () => {
  folder = mkdtempSync(path.join(os.tmpdir(), 'berth-proxy-'));
  proxyCa = loadCertificateAuthority(path.join(folder, 'proxy-ca'), 'berth test installation');
  upstreamCa = loadCertificateAuthority(path.join(folder, 'upstream-ca'), 'the fake API');
  untrustedCa = loadCertificateAuthority(path.join(folder, 'untrusted-ca'), 'nobody trusts this');
  api = serve(upstreamCa, ['api.github.test', 'raw.githubusercontent.test', 'elsewhere.test', 'x.allowed.test']);
  apiPort = await listen(api);
  impostor = serve(untrustedCa, ['api.github.test']);
  impostorPort = await listen(impostor);
  proxy = createEgressProxy({
    ca: proxyCa,
    clientOf: (remote) => clients.get(remote),
    upstreamCa: [upstreamCa.certificatePem],
    lookup: toLoopback,
    allowsAddress,
    logger: { info: (line) => logs.push(line), warn: (line) => logs.push(line) },
    perClientConnections: 8,
    headersTimeoutMs: 1_000,
  });
  proxyPort = await proxy.listen(0, '127.0.0.1');
});

afterAll(async () => {
  await proxy?.close();
  api?.close();
  impostor?.close();
  rmSync(folder, { recursive: true, force: true });
});

describe('the egress proxy', () => {
  it('puts the real value in place of the placeholder for an approved host: Bearer, a custom header, the URL and Basic credentials', async () => {
    const basic = Buffer.from(`x-access-token:${placeholderA}`).toString('base64');
    const answer = await request(A, 'api.github.test', `/repos?token=${placeholderA}`, {
      headers: { authorization: `Bearer ${placeholderA}`, 'x-api-key': placeholderA, 'proxy-authorization': `Basic ${basic}` },
    });
    expect(answer.status).toBe(200);
    const seen = JSON.parse(answer.body) as Seen;
    expect(seen.headers.authorization).toBe(`Bearer ${TOKEN}`);
    expect(seen.headers['x-api-key']).toBe(TOKEN);
    expect(seen.url).toBe(`/repos?token=${TOKEN}`);
    expect(seen.servername).toBe('api.github.test');
    // Proxy-Authorization is for the proxy: never passed on.
    expect(seen.headers['proxy-authorization']).toBeUndefined();
    const basicAnswer = await request(A, 'raw.githubusercontent.test', '/file', { headers: { authorization: `Basic ${basic}` } });
    expect(Buffer.from(String((JSON.parse(basicAnswer.body) as Seen).headers.authorization).slice(6), 'base64').toString()).toBe(`x-access-token:${TOKEN}`);
  });

  it('puts the placeholder back in a response header that echoes the value', async () => {
    const answer = await request(A, 'api.github.test', '/echo-header', { headers: { authorization: `Bearer ${placeholderA}` } });
    expect(answer.headers['x-echo']).toBe(`Bearer ${placeholderA}`);
    expect(JSON.stringify(answer.headers)).not.toContain(TOKEN);
  });

  it('leaves the placeholder as it is for a host the variable is not approved for, and logs that without the value', async () => {
    const answer = await request(A, 'elsewhere.test', '/collect', { headers: { authorization: `Bearer ${placeholderA}` } });
    expect((JSON.parse(answer.body) as Seen).headers.authorization).toBe(`Bearer ${placeholderA}`);
    expect(logs.some((line) => line.includes('sandbox-a sent the placeholder of GITHUB_TOKEN to elsewhere.test'))).toBe(true);
    expect(logs.join('\n')).not.toContain(TOKEN);
  });

  it("never substitutes another sandbox's placeholder: B sending A's gets it unchanged", async () => {
    const answer = await request(B, 'api.github.test', '/user', { headers: { authorization: `Bearer ${placeholderA}`, 'x-own': placeholderB } });
    const seen = JSON.parse(answer.body) as Seen;
    expect(seen.headers.authorization).toBe(`Bearer ${placeholderA}`);
    expect(seen.headers['x-own']).toBe('ghp_B_token');
  });

  it("never carries two sandboxes' requests on one upstream connection", async () => {
    // Both tunnels stay open, so each sandbox's kept-alive upstream connection could be reused.
    const first = await connectThrough(A, `api.github.test:${apiPort}`);
    const second = await connectThrough(B, `api.github.test:${apiPort}`);
    const over = async (tunnel: { socket: net.Socket }): Promise<number[]> => {
      const secure = tls.connect({ socket: tunnel.socket, servername: 'api.github.test', ca: proxyCa.certificatePem });
      const agent = new https.Agent({ keepAlive: true, maxSockets: 1 });
      (agent as unknown as { createConnection: () => tls.TLSSocket }).createConnection = () => secure;
      const ports: number[] = [];
      for (let index = 0; index < 2; index++) {
        ports.push(
          await new Promise<number>((resolve, reject) => {
            https
              .get({ host: 'api.github.test', path: '/', agent }, (response) => {
                let body = '';
                response.on('data', (chunk: Buffer) => (body += chunk.toString()));
                response.on('end', () => resolve((JSON.parse(body) as Seen).upstreamPort));
              })
              .on('error', reject);
          }),
        );
      }
      agent.destroy();
      return ports;
    };
    const fromA = await over(first);
    const fromB = await over(second);
    // Each sandbox reuses its own connection; none of B's is A's.
    expect(fromA[0]).toBe(fromA[1]);
    expect(fromB.filter((port) => fromA.includes(port))).toEqual([]);
  });

  it("never reaches what the sandboxes' egress policy refuses: an address outright, or a name that resolves to one", async () => {
    const outright = await connectThrough(A, `${FORBIDDEN}:${apiPort}`);
    expect(outright.status).toBe(403);
    expect(outright.body).toContain('not reachable from sandboxes');
    const byName = await request(A, 'metadata.test', '/', { headers: { authorization: `Bearer ${placeholderA}` } });
    expect(byName.status).toBe(502);
    expect(byName.body).toContain('resolves only to addresses sandboxes may not reach');
  });

  it('drops a connection from an address that is no sandbox', async () => {
    const tunnel = await connectThrough(STRANGER, `api.github.test:${apiPort}`);
    expect(tunnel.status).toBe(0);
    expect(logs.some((line) => line.includes(`a connection from ${STRANGER}, which is no sandbox`))).toBe(true);
  });

  it('in allow-list mode refuses an unlisted domain and a raw address, and serves a listed one', async () => {
    expect((await request(B, 'elsewhere.test', '/')).status).toBe(403);
    const raw = await connectThrough(B, `127.0.0.1:${apiPort}`);
    expect(raw.status).toBe(403);
    expect(raw.body).toContain('addresses never are');
    expect((await request(B, 'x.allowed.test', '/')).status).toBe(200);
  });

  it('refuses a TLS name (SNI), a Host header or an absolute target that differs from the host CONNECT named', async () => {
    await expect(request(B, 'api.github.test', '/', { servername: 'elsewhere.test' })).rejects.toThrow();
    expect(logs.some((line) => line.includes('connected for api.github.test but named elsewhere.test in TLS'))).toBe(true);
    const forged = await request(B, 'api.github.test', '/', { headers: { host: 'elsewhere.test' } });
    expect(forged.status).toBe(421);
    expect(forged.body).toContain('does not name api.github.test');
    // An absolute target naming another host, over the approved host's tunnel, is refused too.
    const elsewhere = await request(A, 'api.github.test', `https://elsewhere.test/?t=${placeholderA}`);
    expect(elsewhere.status).toBe(421);
    // One naming the same host goes on in origin form, substituted.
    const same = await request(A, 'api.github.test', `https://api.github.test/x?t=${placeholderA}`);
    expect((JSON.parse(same.body) as Seen).url).toBe(`/x?t=${TOKEN}`);
  });

  it('verifies the upstream certificate: a host whose certificate nobody trusts gets a 502, never the request', async () => {
    const answer = await request(A, 'api.github.test', '/', { port: impostorPort, headers: { authorization: `Bearer ${placeholderA}` } });
    expect(answer.status).toBe(502);
    expect(answer.body).toMatch(/could not reach api\.github\.test/);
  });

  it('passes a WebSocket-style upgrade through, with the placeholder substituted in its head', async () => {
    const tunnel = await connectThrough(A, `api.github.test:${apiPort}`);
    const secure = tls.connect({ socket: tunnel.socket, servername: 'api.github.test', ca: proxyCa.certificatePem });
    await new Promise((resolve) => secure.once('secureConnect', resolve));
    secure.write(`GET /socket HTTP/1.1\r\nHost: api.github.test\r\nConnection: Upgrade\r\nUpgrade: echo\r\nAuthorization: Bearer ${placeholderA}\r\n\r\n`);
    let received = '';
    secure.setEncoding('utf8');
    secure.on('data', (chunk: string) => (received += chunk));
    await vitestWaitFor(() => received.includes('\r\n\r\n'));
    expect(received).toMatch(/^HTTP\/1\.1 101/);
    expect(received).toContain(`x-seen-authorization: Bearer ${TOKEN}`);
    secure.write('ping-through-the-tunnel');
    await vitestWaitFor(() => received.includes('ping-through-the-tunnel'));
    secure.destroy();
  });

  it('streams a large download without holding it: 64 MiB arrive whole while the heap stays small', async () => {
    const tunnel = await connectThrough(A, `api.github.test:${apiPort}`);
    const secure = tls.connect({ socket: tunnel.socket, servername: 'api.github.test', ca: proxyCa.certificatePem });
    const heapBefore = process.memoryUsage().heapUsed;
    let peak = heapBefore;
    const bytes = 64 * 1024 * 1024;
    const received = await new Promise<number>((resolve, reject) => {
      const call = https.request({ host: 'api.github.test', path: `/download?bytes=${bytes}`, agent: over(secure) }, (response) => {
        let count = 0;
        response.on('data', (chunk: Buffer) => {
          count += chunk.length;
          if (count % (8 * 1024 * 1024) < chunk.length) peak = Math.max(peak, process.memoryUsage().heapUsed);
        });
        response.on('end', () => resolve(count));
      });
      call.on('error', reject);
      call.end();
    });
    expect(received).toBe(bytes);
    // The proxy, the fake API and the client share this process: a buffered body would be 64 MiB more.
    expect(peak - heapBefore).toBeLessThan(32 * 1024 * 1024);
  });

  it('drops a client that never finishes its request (slowloris) and holds one sandbox to its connection limit, while another is served', async () => {
    const slow = net.connect({ host: '127.0.0.1', port: proxyPort, localAddress: A });
    slow.write('CONNECT api.github.test');
    slow.resume();
    const hoarded = Array.from({ length: 12 }, () => net.connect({ host: '127.0.0.1', port: proxyPort, localAddress: A }));
    await Promise.all(hoarded.map((socket) => new Promise((resolve) => socket.once('connect', resolve))));
    // B is served whatever A does.
    expect((await request(B, 'api.github.test', '/user')).status).toBe(200);
    await vitestWaitFor(() => slow.destroyed || slow.readableEnded, 10_000);
    const open = proxy.connections().get('sandbox-a') ?? 0;
    expect(open).toBeLessThanOrEqual(8);
    for (const socket of hoarded) socket.destroy();
    slow.destroy();
  });
  it('survives clients that reset their connection after a refusal, after a tunnel opened, and inside TLS', async () => {
    const reset = async (write: string, after: 'answer' | 'at once'): Promise<void> => {
      const socket = net.connect({ host: '127.0.0.1', port: proxyPort, localAddress: A });
      socket.on('error', () => undefined);
      await new Promise((resolve) => socket.once('connect', resolve));
      socket.write(write);
      if (after === 'answer') await new Promise((resolve) => socket.once('data', resolve));
      socket.resetAndDestroy();
    };
    await reset('CONNECT 10.1.2.3:443 HTTP/1.1\r\nHost: 10.1.2.3\r\n\r\n', 'answer');
    await reset('CONNECT nowhere.test:443 HTTP/1.1\r\n\r\n', 'at once');
    await reset(`CONNECT api.github.test:${apiPort} HTTP/1.1\r\nHost: api.github.test\r\n\r\n`, 'answer');
    const tunnel = await connectThrough(A, `api.github.test:${apiPort}`);
    const secure = tls.connect({ socket: tunnel.socket, servername: 'api.github.test', ca: proxyCa.certificatePem });
    secure.on('error', () => undefined);
    await new Promise((resolve) => secure.once('secureConnect', resolve));
    tunnel.socket.resetAndDestroy();
    // Still serving (an uncaught error would also fail this file).
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect((await request(B, 'api.github.test', '/user')).status).toBe(200);
  });

  it('drops a client that trickles its headers inside a TLS tunnel, as outside one', async () => {
    const tunnel = await connectThrough(A, `api.github.test:${apiPort}`);
    expect(tunnel.status).toBe(200);
    const secure = tls.connect({ socket: tunnel.socket, servername: 'api.github.test', ca: proxyCa.certificatePem });
    await new Promise((resolve) => secure.once('secureConnect', resolve));
    secure.write('GET /user HTTP/1.1\r\nHost: api.github.test\r\n');
    secure.resume();
    const started = Date.now();
    // headersTimeoutMs is 1 s here; the idle timeout (2 minutes) must not be what ends it.
    await vitestWaitFor(() => secure.destroyed || secure.readableEnded, 10_000);
    expect(Date.now() - started).toBeLessThan(10_000);
    secure.destroy();
  });

  it('listens on each address it is given, and on one no longer once told to stop', async () => {
    const port = await proxy.listen(0, '127.0.0.4');
    expect(await proxy.listen(port, '127.0.0.4')).toBe(port);
    expect(proxy.listening()).toEqual(expect.arrayContaining(['127.0.0.1', '127.0.0.4']));
    expect((await request(A, 'api.github.test', '/user', { through: port, at: '127.0.0.4' })).status).toBe(200);
    await proxy.unlisten('127.0.0.4');
    expect(proxy.listening()).not.toContain('127.0.0.4');
    const refused = await new Promise<string>((resolve) => {
      const socket = net.connect({ host: '127.0.0.4', port });
      socket.once('connect', () => resolve('connected'));
      socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? 'error'));
    });
    expect(refused).toBe('ECONNREFUSED');
  });
});

describe('the egress proxy with its default bounds', () => {
  it('holds one sandbox opening 200 connections at once to 64, each stalled on an unread download, while another sandbox is answered', async () => {
    const bounded = createEgressProxy({
      ca: proxyCa,
      clientOf: (remote) => clients.get(remote),
      upstreamCa: [upstreamCa.certificatePem],
      lookup: toLoopback,
      allowsAddress,
    });
    const port = await bounded.listen(0, '127.0.0.1');
    const sockets: net.Socket[] = [];
    try {
      // 200 tunnels from A, each asking for 8 MiB it never reads: the proxy must not buffer them.
      const heapBefore = process.memoryUsage().heapUsed;
      await Promise.all(
        Array.from({ length: 200 }, async () => {
          const socket = net.connect({ host: '127.0.0.1', port, localAddress: A });
          sockets.push(socket);
          socket.on('error', () => undefined);
          socket.write(`CONNECT api.github.test:${apiPort} HTTP/1.1\r\nHost: api.github.test\r\n\r\n`);
          const answered = await new Promise<boolean>((resolve) => {
            socket.once('data', (chunk: Buffer) => resolve(chunk.toString('latin1').startsWith('HTTP/1.1 200')));
            socket.once('close', () => resolve(false));
          });
          if (!answered) return;
          const secure = tls.connect({ socket, servername: 'api.github.test', ca: proxyCa.certificatePem });
          secure.on('error', () => undefined);
          await new Promise((resolve) => secure.once('secureConnect', resolve).once('close', resolve));
          secure.write('GET /download?bytes=8388608 HTTP/1.1\r\nHost: api.github.test\r\n\r\n');
          secure.pause();
        }),
      );
      expect(bounded.connections().get('sandbox-a')).toBe(64);
      // B is answered while A's 64 stall.
      const answer = await request(B, 'api.github.test', '/user', { through: port });
      expect(answer.status).toBe(200);
      expect(process.memoryUsage().heapUsed - heapBefore).toBeLessThan(64 * 1024 * 1024);
    } finally {
      for (const socket of sockets) socket.destroy();
      await bounded.close();
    }
  });
});

/** Waits until `condition` holds (polled), failing after `ms`. */
async function vitestWaitFor(condition: () => boolean, ms = 5_000): Promise<void> {
  const started = Date.now();
  while (!condition()) {
    if (Date.now() - started > ms) throw new Error(`not within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
