import { mkdtempSync, rmSync } from 'node:fs';
import https from 'node:https';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import { parseEgressDomain } from '@berth/core/driver';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadCertificateAuthority, type CertificateAuthority } from './certificate-authority.js';
import { createEgressProxy, type EgressProxy, type ProxyClient } from './egress-proxy.js';
import { parseHostPattern } from './host-patterns.js';
import { placeholderFor } from './placeholders.js';
import {
  connectThrough as through,
  FORBIDDEN,
  listen,
  over,
  received,
  request as requestVia,
  type Seen,
  serve,
  toLoopback,
  waitFor as vitestWaitFor,
} from './proxy-test-kit.js';

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
const clients = new Map<string, ProxyClient>();

const allowsAddress = (address: string): boolean => address !== FORBIDDEN;
const connectThrough = (from: string, authority: string, port = proxyPort, at = '127.0.0.1') => through(from, authority, port, at);
const request = (from: string, host: string, target: string, options: Parameters<typeof requestVia>[4] = {}) =>
  requestVia({ proxyPort, apiPort, trust: proxyCa.certificatePem }, from, host, target, options);

beforeAll(async () => {
  folder = mkdtempSync(path.join(os.tmpdir(), 'berth-proxy-'));
  proxyCa = loadCertificateAuthority(path.join(folder, 'proxy-ca'), 'berth test installation');
  upstreamCa = loadCertificateAuthority(path.join(folder, 'upstream-ca'), 'the fake API');
  untrustedCa = loadCertificateAuthority(path.join(folder, 'untrusted-ca'), 'nobody trusts this');
  api = serve(upstreamCa, ['api.github.test', 'raw.githubusercontent.test', 'elsewhere.test', 'x.allowed.test']);
  apiPort = await listen(api);
  impostor = serve(untrustedCa, ['api.github.test']);
  impostorPort = await listen(impostor);
  // The fake API listens on a port of its own: the variables and the allow list name it.
  const ports = [apiPort, impostorPort];
  clients.set(A, {
    sandbox: 'sandbox-a',
    placeholders: new Map([
      [
        placeholderA,
        {
          variable: 'GITHUB_TOKEN',
          value: TOKEN,
          hosts: [parseHostPattern('api.github.test'), parseHostPattern('*.githubusercontent.test')],
          headers: ['x-api-key'],
          query: ['token'],
          ports,
        },
      ],
    ]),
  });
  clients.set(B, {
    sandbox: 'sandbox-b',
    placeholders: new Map([[placeholderB, { variable: 'GITHUB_TOKEN', value: 'ghp_B_token', hosts: [parseHostPattern('api.github.test')], ports }]]),
    allow: [parseEgressDomain(`api.github.test:${apiPort}`), parseEgressDomain(`*.allowed.test:${apiPort}`)],
  });
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
  it('puts the real value where credentials go for an approved host: Bearer, Proxy-Authorization, a named header, a named query parameter, Basic', async () => {
    const basic = Buffer.from(`x-access-token:${placeholderA}`).toString('base64');
    const answer = await request(A, 'api.github.test', `/repos?token=${placeholderA}&other=${placeholderA}`, {
      headers: { authorization: `Bearer ${placeholderA}`, 'x-api-key': placeholderA, 'proxy-authorization': `Basic ${basic}`, 'x-other': placeholderA },
    });
    expect(answer.status).toBe(200);
    // What the API saw; what came back to the sandbox is masked.
    const seen = received.at(-1)!;
    expect(answer.body).not.toContain(TOKEN);
    expect(seen.headers.authorization).toBe(`Bearer ${TOKEN}`);
    expect(seen.headers['x-api-key']).toBe(TOKEN);
    expect(Buffer.from(String(seen.headers['proxy-authorization']).slice(6), 'base64').toString()).toBe(`x-access-token:${TOKEN}`);
    // Only the named parameter and headers: the rest keep the placeholder.
    expect(seen.url).toBe(`/repos?token=${TOKEN}&other=${placeholderA}`);
    expect(seen.headers['x-other']).toBe(placeholderA);
    expect(seen.servername).toBe('api.github.test');
    // The proxy's own framing, for a GET too.
    expect(seen.headers['content-length']).toBe('0');
    expect(logs.some((line) => line.includes('sandbox-a sent the placeholder of GITHUB_TOKEN to api.github.test'))).toBe(true);
    expect(logs.join('\n')).not.toContain(TOKEN);
    await request(A, 'raw.githubusercontent.test', '/file', { headers: { authorization: `Basic ${basic}` } });
    expect(Buffer.from(String(received.at(-1)!.headers.authorization).slice(6), 'base64').toString()).toBe(`x-access-token:${TOKEN}`);
  });

  it("reads a host written in another case as the same host, for the check and the substitution alike (a case-variant host once bypassed a broker's host check)", async () => {
    const answer = await request(A, 'API.GitHub.TEST', '/cased', {
      headers: { host: 'Api.Github.Test', authorization: `Bearer ${placeholderA}` },
      servername: 'api.github.test',
    });
    expect(answer.status).toBe(200);
    expect(received.at(-1)!.headers.authorization).toBe(`Bearer ${TOKEN}`);
    // In allow-list mode the case changes nothing either way: listed stays listed, unlisted stays refused.
    expect((await request(B, 'ELSEWHERE.TEST', '/')).status).toBe(403);
    expect((await request(B, 'API.GITHUB.TEST', '/', { headers: { authorization: `Bearer ${placeholderB}` }, servername: 'api.github.test' })).status).toBe(
      200,
    );
    expect(received.at(-1)!.headers.authorization).toBe('Bearer ghp_B_token');
    // A value never goes to a host that only looks like the approved one in another case.
    await request(A, 'API.GITHUB.TEST.ELSEWHERE.TEST', '/', { headers: { authorization: `Bearer ${placeholderA}` }, trust: upstreamCa.certificatePem }).catch(
      () => undefined,
    );
    expect(received.filter((seen) => seen.headers.authorization === `Bearer ${TOKEN}` && seen.servername !== 'api.github.test')).toEqual([]);
  });

  it('puts the placeholder back in a response header that echoes the value', async () => {
    const answer = await request(A, 'api.github.test', '/echo-header', { headers: { authorization: `Bearer ${placeholderA}` } });
    expect(answer.headers['x-echo']).toBe(`Bearer ${placeholderA}`);
    expect(JSON.stringify(answer.headers)).not.toContain(TOKEN);
  });

  it('passes TLS to a host no variable is approved for through unopened: the placeholder arrives as it was', async () => {
    const answer = await request(A, 'elsewhere.test', '/collect', { headers: { authorization: `Bearer ${placeholderA}` }, trust: upstreamCa.certificatePem });
    expect((JSON.parse(answer.body) as Seen).headers.authorization).toBe(`Bearer ${placeholderA}`);
    // The proxy's own certificate was never made for it.
    expect(proxyCa.has('elsewhere.test')).toBe(false);
  });

  it("never substitutes another sandbox's placeholder, and drops a credential of B's own where B's value goes", async () => {
    const foreign = await request(B, 'api.github.test', '/user', { headers: { authorization: `Bearer ${placeholderA}` } });
    expect((JSON.parse(foreign.body) as Seen).headers.authorization).toBeUndefined();
    await request(B, 'api.github.test', '/user', { headers: { authorization: `token ${placeholderB}`, 'x-own': placeholderB } });
    const seen = received.at(-1)!;
    expect(seen.headers.authorization).toBe('token ghp_B_token');
    expect(seen.headers['x-own']).toBe(placeholderB);
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
    const byName = await connectThrough(A, `metadata.test:${apiPort}`);
    expect(byName.status).toBe(502);
    expect(byName.body).toContain('resolves only to addresses sandboxes may not reach');
  });

  it('drops a connection from an address that is no sandbox', async () => {
    const tunnel = await connectThrough(STRANGER, `api.github.test:${apiPort}`);
    expect(tunnel.status).toBe(0);
    expect(logs.some((line) => line.includes(`a connection from ${STRANGER}, which is no sandbox`))).toBe(true);
  });

  it('in allow-list mode refuses an unlisted domain, a listed one on another port, a raw address, and a forged SNI; serves a listed one', async () => {
    expect((await request(B, 'elsewhere.test', '/')).status).toBe(403);
    const otherPort = await connectThrough(B, `api.github.test:22`);
    expect(otherPort.status).toBe(403);
    expect(otherPort.body).toContain('api.github.test:22 is not on this sandbox');
    const raw = await connectThrough(B, `127.0.0.1:${apiPort}`);
    expect(raw.status).toBe(403);
    expect(raw.body).toContain('addresses never are');
    // x.allowed.test is listed but no variable is approved for it: its TLS passes unopened.
    expect((await request(B, 'x.allowed.test', '/', { trust: upstreamCa.certificatePem })).status).toBe(200);
    // Unopened, its SNI must still be the listed name.
    await expect(request(B, 'x.allowed.test', '/', { trust: upstreamCa.certificatePem, servername: 'elsewhere.test' })).rejects.toThrow();
    expect(logs.some((line) => line.includes('sandbox-b connected for x.allowed.test but named elsewhere.test in TLS'))).toBe(true);
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
    // One naming the same host and port goes on in origin form, substituted.
    await request(A, 'api.github.test', `https://api.github.test:${apiPort}/x?token=${placeholderA}`);
    expect(received.at(-1)!.url).toBe(`/x?token=${TOKEN}`);
  });

  it('verifies the upstream certificate: a host whose certificate nobody trusts gets a 502, never the request', async () => {
    const answer = await request(A, 'api.github.test', '/', { port: impostorPort, headers: { authorization: `Bearer ${placeholderA}` } });
    expect(answer.status).toBe(502);
    expect(answer.body).toMatch(/could not reach api\.github\.test/);
  });

  it('passes a WebSocket-style upgrade through, with the placeholder substituted in its head and the answer masked', async () => {
    const tunnel = await connectThrough(A, `api.github.test:${apiPort}`);
    const secure = tls.connect({ socket: tunnel.socket, servername: 'api.github.test', ca: proxyCa.certificatePem });
    await new Promise((resolve) => secure.once('secureConnect', resolve));
    secure.write(`GET /socket HTTP/1.1\r\nHost: api.github.test\r\nConnection: Upgrade\r\nUpgrade: echo\r\nAuthorization: Bearer ${placeholderA}\r\n\r\n`);
    let received = '';
    secure.setEncoding('utf8');
    secure.on('data', (chunk: string) => (received += chunk));
    await vitestWaitFor(() => received.includes('\r\n\r\n'));
    expect(received).toMatch(/^HTTP\/1\.1 101/);
    expect(received).toContain(`x-seen-authorization: Bearer ${placeholderA}`);
    expect(received).not.toContain(TOKEN);
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
