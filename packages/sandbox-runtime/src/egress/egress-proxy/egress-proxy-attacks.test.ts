import { mkdtempSync, rmSync } from 'node:fs';
import https from 'node:https';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadCertificateAuthority, type CertificateAuthority } from './certificate-authority.js';
import { createEgressProxy, type EgressProxy, type ProxyClient } from './egress-proxy.js';
import { parseEgressDomain } from '@berth/core/driver';
import { parseHostPattern } from './host-patterns.js';
import { placeholderFor } from './placeholders.js';

/**
 * The findings of issue 37 against the proxy, each as what a hostile sandbox (or upstream) sends
 * and what must come of it. The fake API is Node's own HTTP server over TLS: it parses what the
 * proxy forwards as any upstream would, and records every request it parsed and every connection.
 */
const KEY = 'attack-installation-key';
const TOKEN = 'ghp_REALvalue_0123456789abcdefXYZ';
const A = '127.0.0.2';
const placeholder = placeholderFor(KEY, 'sandbox-a', 'GITHUB_TOKEN');
const HOST = 'api.github.test';

interface Parsed {
  readonly method: string;
  readonly url: string;
  readonly host: string | undefined;
  readonly authorization: string | undefined;
  /** Every Authorization header the request carried, as sent. */
  readonly authorizations: readonly string[];
  readonly connection: number;
}

let folder: string;
let proxyCa: CertificateAuthority;
let upstreamCa: CertificateAuthority;
let api: https.Server;
let apiPort: number;
let otherPort: number;
let other: https.Server;
/** A server that speaks first (as SSH does), and a third sandbox, in allow-list mode with git.test:<its port> listed. */
const banner = net.createServer((socket) => socket.end('SSH-2.0-fake\r\n'));
let bannerPort: number;
const C = '127.0.0.3';
const parsed: Parsed[] = [];
let connectionsMade = 0;
let connectionsOpen = 0;
let connectionsPeak = 0;
let proxy: EgressProxy;
let proxyPort: number;
const logs: string[] = [];

const lookup = ((_host: string, options: unknown, callback: (...args: unknown[]) => void) => {
  const all = typeof options === 'object' && options !== null && (options as { all?: boolean }).all;
  if (all) callback(null, [{ address: '127.0.0.1', family: 4 }]);
  else callback(null, '127.0.0.1', 4);
}) as net.LookupFunction;

function fakeApi(): https.Server {
  const leaf = upstreamCa.leafFor(HOST);
  const contexts = new Map(['elsewhere.test', HOST].map((name) => [name, tls.createSecureContext(upstreamCa.leafFor(name))]));
  const server = https.createServer({
    cert: leaf.cert,
    key: leaf.key,
    keepAliveTimeout: 30_000,
    SNICallback: (name, callback) => callback(null, contexts.get(name) ?? contexts.get(HOST)),
  });
  server.on('secureConnection', (socket: tls.TLSSocket) => {
    connectionsMade += 1;
    connectionsOpen += 1;
    connectionsPeak = Math.max(connectionsPeak, connectionsOpen);
    (socket as tls.TLSSocket & { id?: number }).id = connectionsMade;
    socket.once('close', () => (connectionsOpen -= 1));
  });
  server.on('request', (request, response) => {
    const connection = (request.socket as tls.TLSSocket & { id?: number }).id ?? 0;
    parsed.push({
      method: request.method ?? '',
      url: request.url ?? '',
      host: request.headers.host,
      authorization: request.headers.authorization,
      authorizations: request.rawHeaders.filter((_, index, all) => index % 2 === 1 && all[index - 1]!.toLowerCase() === 'authorization'),
      connection,
    });
    let body = '';
    request.setEncoding('latin1');
    request.on('data', (chunk: string) => (body += chunk));
    request.on('end', () => {
      const url = new URL(request.url ?? '/', 'https://x');
      if (url.pathname === '/markdown/raw') {
        // GitHub's: answers without a credential and returns the text it was sent.
        response.writeHead(200, { 'content-type': 'text/html' });
        response.end(`<p>${body}</p>`);
        return;
      }
      if (url.pathname === '/echo-auth') {
        response.writeHead(200, { 'x-echo': String(request.headers.authorization) });
        response.end(`you sent ${request.headers.authorization}`);
        return;
      }
      if (url.pathname.startsWith('/v1/models/')) {
        response.writeHead(404, { 'content-type': 'application/json' });
        response.end(JSON.stringify({ error: `The model \`${decodeURIComponent(url.pathname.slice(11))}\` does not exist` }));
        return;
      }
      response.writeHead(200, { 'content-type': 'text/plain' });
      response.end(`ok ${request.url}`);
    });
  });
  server.on('upgrade', (request, socket) => {
    socket.write(`HTTP/1.1 101 Switching Protocols\r\nupgrade: echo\r\nconnection: Upgrade\r\nx-seen: ${request.headers.authorization ?? ''}\r\n\r\n`);
    socket.end();
  });
  return server;
}

async function listen(server: net.Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as net.AddressInfo).port;
}

/** A TLS connection through a CONNECT tunnel, as a sandbox's client opens it (trusting `trust`). */
async function tunnel(authority: string, trust = proxyCa.certificatePem): Promise<tls.TLSSocket> {
  const socket = net.connect({ host: '127.0.0.1', port: proxyPort, localAddress: A });
  socket.write(`CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\n\r\n`);
  const answer = await new Promise<string>((resolve) => {
    let text = '';
    const onData = (chunk: Buffer): void => {
      text += chunk.toString('latin1');
      if (text.includes('\r\n\r\n')) {
        socket.off('data', onData);
        resolve(text);
      }
    };
    socket.on('data', onData);
    socket.once('close', () => resolve(text));
  });
  if (!answer.startsWith('HTTP/1.1 200')) throw new Error(`CONNECT refused: ${answer.split('\r\n')[0]}`);
  const secure = tls.connect({ socket, servername: authority.split(':')[0]!, ca: trust });
  await new Promise((resolve, reject) => secure.once('secureConnect', resolve).once('error', reject));
  return secure;
}

/** Writes `raw` into `secure` and collects what comes back until `done` says so (or the connection ends). */
async function converse(secure: tls.TLSSocket, raw: string, done: (text: string) => boolean, ms = 5_000): Promise<string> {
  let text = '';
  secure.on('data', (chunk: Buffer) => (text += chunk.toString('latin1')));
  secure.write(raw);
  const started = Date.now();
  while (!done(text) && !secure.destroyed && !secure.readableEnded && Date.now() - started < ms) await new Promise((resolve) => setTimeout(resolve, 10));
  return text;
}

const count = (text: string, what: string): number => text.split(what).length - 1;

beforeAll(async () => {
  folder = mkdtempSync(path.join(os.tmpdir(), 'berth-proxy-attacks-'));
  proxyCa = loadCertificateAuthority(path.join(folder, 'proxy-ca'), 'berth attack test');
  upstreamCa = loadCertificateAuthority(path.join(folder, 'upstream-ca'), 'the fake API');
  api = fakeApi();
  apiPort = await listen(api);
  bannerPort = await listen(banner);
  other = fakeApi();
  otherPort = await listen(other);
  const client: ProxyClient = {
    sandbox: 'sandbox-a',
    placeholders: new Map([[placeholder, { variable: 'GITHUB_TOKEN', value: TOKEN, hosts: [parseHostPattern(HOST)], ports: [apiPort] }]]),
  };
  proxy = createEgressProxy({
    ca: proxyCa,
    clientOf: (remote) =>
      remote === A ? client : remote === C ? { ...client, sandbox: 'sandbox-c', allow: [parseEgressDomain(`git.test:${bannerPort}`)] } : undefined,
    upstreamCa: [upstreamCa.certificatePem],
    lookup,
    allowsAddress: () => true,
    logger: { info: (line) => logs.push(line), warn: (line) => logs.push(line) },
    perClientUpstream: 4,
  });
  proxyPort = await proxy.listen(0, '127.0.0.1');
});

afterAll(async () => {
  await proxy?.close();
  api?.close();
  other?.close();
  banner.close();
  rmSync(folder, { recursive: true, force: true });
});

describe('the egress proxy keeps HTTP framing (request smuggling)', () => {
  it('sends a GET with a chunked body upstream as exactly one request: the body never becomes a request of its own', async () => {
    const before = parsed.length;
    const smuggled = `GET /smuggled HTTP/1.1\r\nHost: ${HOST}\r\n\r\n`;
    const body = `${smuggled.length.toString(16)}\r\n${smuggled}\r\n0\r\n\r\n`;
    const secure = await tunnel(`${HOST}:${apiPort}`);
    const text = await converse(secure, `GET /one HTTP/1.1\r\nHost: ${HOST}\r\nTransfer-Encoding: chunked\r\n\r\n${body}`, (t) => t.includes('ok /one'));
    await new Promise((resolve) => setTimeout(resolve, 200));
    secure.destroy();
    expect(text).toContain('ok /one');
    expect(parsed.slice(before).map((request) => request.url)).toEqual(['/one']);
  });

  it('never lets Connection remove Content-Length: a GET body named so stays the body', async () => {
    const before = parsed.length;
    const smuggled = `GET /smuggled-two HTTP/1.1\r\nHost: elsewhere.test\r\n\r\n`;
    const secure = await tunnel(`${HOST}:${apiPort}`);
    const text = await converse(
      secure,
      `GET /two HTTP/1.1\r\nHost: ${HOST}\r\nConnection: content-length, host\r\nContent-Length: ${smuggled.length}\r\n\r\n${smuggled}`,
      (t) => t.includes('ok /two'),
    );
    await new Promise((resolve) => setTimeout(resolve, 200));
    secure.destroy();
    expect(text).toContain('ok /two');
    expect(parsed.slice(before).map((request) => request.url)).toEqual(['/two']);
    expect(parsed.slice(before)[0]!.host).toBe(`${HOST}:${apiPort}`);
  });

  it('never lets a smuggled, unfinished POST swallow the next request after its value was put in', async () => {
    const before = parsed.length;
    const unfinished = `POST /markdown/raw HTTP/1.1\r\nHost: ${HOST}\r\nContent-Length: 400\r\n\r\n`;
    const body = `${unfinished.length.toString(16)}\r\n${unfinished}\r\n0\r\n\r\n`;
    const secure = await tunnel(`${HOST}:${apiPort}`);
    const text = await converse(
      secure,
      `GET /first HTTP/1.1\r\nHost: ${HOST}\r\nTransfer-Encoding: chunked\r\n\r\n${body}` +
        `GET /second HTTP/1.1\r\nHost: ${HOST}\r\nAuthorization: Bearer ${placeholder}\r\nX-Padding: ${'p'.repeat(300)}\r\n\r\n`,
      (t) => t.includes('ok /second'),
      3_000,
    );
    secure.destroy();
    expect(text).not.toContain(TOKEN);
    expect(parsed.slice(before).map((request) => request.url)).toEqual(['/first', '/second']);
    expect(parsed.slice(before)[1]!.authorization).toBe(`Bearer ${TOKEN}`);
  });

  it('refuses a request whose framing cannot be kept (Transfer-Encoding other than chunked) with a 400, and logs it', async () => {
    const before = parsed.length;
    const secure = await tunnel(`${HOST}:${apiPort}`);
    const text = await converse(secure, `POST /x HTTP/1.1\r\nHost: ${HOST}\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n`, (t) =>
      t.includes('\r\n\r\n'),
    );
    secure.destroy();
    expect(text).toMatch(/^HTTP\/1\.1 400/);
    expect(parsed.length).toBe(before);
    expect(logs.some((line) => line.includes('sandbox-a') && line.includes('Transfer-Encoding'))).toBe(true);
  });
});

describe('the egress proxy substitutes only where credentials go', () => {
  it('leaves the placeholder in the path as it is: an error body that echoes the path returns no value', async () => {
    const secure = await tunnel(`${HOST}:${apiPort}`);
    const text = await converse(secure, `GET /v1/models/${placeholder} HTTP/1.1\r\nHost: ${HOST}\r\nAuthorization: Bearer ${placeholder}\r\n\r\n`, (t) =>
      t.includes('does not exist'),
    );
    secure.destroy();
    expect(text).not.toContain(TOKEN);
    expect(parsed.at(-1)!.url).toBe(`/v1/models/${placeholder}`);
    expect(parsed.at(-1)!.authorization).toBe(`Bearer ${TOKEN}`);
  });

  it('substitutes on the ports the variable names only: another port of an approved host gets the placeholder', async () => {
    const secure = await tunnel(`${HOST}:${otherPort}`, upstreamCa.certificatePem);
    await converse(secure, `GET /port HTTP/1.1\r\nHost: ${HOST}\r\nAuthorization: Bearer ${placeholder}\r\n\r\n`, (t) => t.includes('ok /port'));
    secure.destroy();
    expect(parsed.at(-1)!.authorization).toBe(`Bearer ${placeholder}`);
  });

  it('drops a client-supplied credential sent beside the placeholder', async () => {
    const secure = await tunnel(`${HOST}:${apiPort}`);
    await converse(
      secure,
      `GET /beside HTTP/1.1\r\nHost: ${HOST}\r\nAuthorization: Basic c3RvbGVuOmNyZWRz\r\nAuthorization: Bearer ${placeholder}\r\n\r\n`,
      (t) => t.includes('ok /beside'),
    );
    secure.destroy();
    expect(parsed.at(-1)!.authorizations).toEqual([`Bearer ${TOKEN}`]);
  });
});

describe('the egress proxy masks what comes back', () => {
  it('masks the value in a response body and head, and the base64 of a Basic credential it re-encoded', async () => {
    const basic = Buffer.from(`x-access-token:${placeholder}`).toString('base64');
    const secure = await tunnel(`${HOST}:${apiPort}`);
    const text = await converse(
      secure,
      [`Bearer ${placeholder}`, `Basic ${basic}`].map((auth) => `GET /echo-auth HTTP/1.1\r\nHost: ${HOST}\r\nAuthorization: ${auth}\r\n\r\n`).join(''),
      (t) => count(t, 'you sent') === 2,
    );
    secure.destroy();
    expect(count(text, 'you sent')).toBe(2);
    expect(text).not.toContain(TOKEN);
    expect(text).not.toContain(Buffer.from(`x-access-token:${TOKEN}`).toString('base64'));
    expect(text).toContain(`x-echo: Bearer ${placeholder}`);
  });

  it("masks an upgrade's 101 response head", async () => {
    const secure = await tunnel(`${HOST}:${apiPort}`);
    const text = await converse(
      secure,
      `GET /socket HTTP/1.1\r\nHost: ${HOST}\r\nConnection: Upgrade\r\nUpgrade: echo\r\nAuthorization: Bearer ${placeholder}\r\n\r\n`,
      (t) => t.includes('\r\n\r\n'),
    );
    secure.destroy();
    expect(text).toMatch(/^HTTP\/1\.1 101/);
    expect(text).not.toContain(TOKEN);
    expect(text).toContain(`x-seen: Bearer ${placeholder}`);
  });
});

describe('the egress proxy bounds pipelining', () => {
  it('serves 400 pipelined requests of one tunnel one at a time, in order, on at most the cap of upstream connections', async () => {
    const before = parsed.length;
    const peakBefore = connectionsPeak;
    connectionsPeak = connectionsOpen;
    const secure = await tunnel(`${HOST}:${apiPort}`);
    let raw = '';
    for (let index = 0; index < 400; index++) raw += `GET /p${index} HTTP/1.1\r\nHost: ${HOST}\r\n\r\n`;
    const text = await converse(secure, raw, (t) => t.includes('ok /p399'), 20_000);
    secure.destroy();
    expect(count(text, 'HTTP/1.1 200')).toBe(400);
    expect(parsed.slice(before).map((request) => request.url)).toEqual(Array.from({ length: 400 }, (_, index) => `/p${index}`));
    expect(connectionsPeak).toBeLessThanOrEqual(4);
    connectionsPeak = Math.max(connectionsPeak, peakBefore);
  }, 30_000);
});

describe('the egress proxy does no work for names nothing needs', () => {
  it('passes TLS to a host no variable is approved for through unopened: the sandbox sees the real certificate', async () => {
    // Trusting only the upstream's CA: the handshake succeeds only if the proxy did not end the TLS.
    const secure = await tunnel(`elsewhere.test:${apiPort}`, upstreamCa.certificatePem);
    const text = await converse(secure, `GET /through HTTP/1.1\r\nHost: elsewhere.test\r\n\r\n`, (t) => t.includes('ok /through'));
    secure.destroy();
    expect(text).toContain('ok /through');
  });
});

describe('the egress proxy passes other protocols through', () => {
  it('at once, in allow-list mode too: a server that speaks first (SSH) is heard before the sandbox says anything', async () => {
    const socket = net.connect({ host: '127.0.0.1', port: proxyPort, localAddress: C });
    socket.write(`CONNECT git.test:${bannerPort} HTTP/1.1\r\nHost: git.test\r\n\r\n`);
    let text = '';
    socket.on('data', (chunk: Buffer) => (text += chunk.toString('latin1')));
    const started = Date.now();
    while (!text.includes('SSH-2.0') && Date.now() - started < 3_000) await new Promise((resolve) => setTimeout(resolve, 20));
    socket.destroy();
    expect(text).toMatch(/^HTTP\/1\.1 200[\s\S]*SSH-2\.0-fake/);
  });
});
