import { mkdtempSync, rmSync } from 'node:fs';
import https from 'node:https';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROPERTY_TEST_TIMEOUT_MS } from '../../../../../vitest.shared.js';
import { loadCertificateAuthority, type CertificateAuthority } from './certificate-authority.js';
import { createEgressProxy, type EgressProxy } from './egress-proxy.js';
import { parseHostPattern } from './host-patterns.js';
import type { ForwardedRequest } from './message-session.js';
import { placeholderFor } from './placeholders.js';

/**
 * The proxy's request path under random input (issue 37): random framings (none, Content-Length,
 * chunked in random pieces, and the ambiguous ones: both, a Transfer-Encoding other than chunked,
 * two lengths), header names in random case, random Connection lists naming the framing headers,
 * bodies that hold whole requests, all pipelined in one tunnel and split at random points. What
 * must hold: the upstream (Node's own parser) parses exactly the requests the proxy says it sent,
 * in order, and never one hidden in a body.
 */
const HOST = 'api.fuzz.test';
const A = '127.0.0.2';
const placeholder = placeholderFor('fuzz-key', 'sandbox-fuzz', 'TOKEN');

let folder: string;
let proxyCa: CertificateAuthority;
let api: https.Server;
let apiPort: number;
let proxy: EgressProxy;
let proxyPort: number;
const parsed: string[] = [];
const forwarded: ForwardedRequest[] = [];

beforeAll(async () => {
  folder = mkdtempSync(path.join(os.tmpdir(), 'berth-proxy-fuzz-'));
  proxyCa = loadCertificateAuthority(path.join(folder, 'proxy-ca'), 'fuzz installation');
  const upstreamCa = loadCertificateAuthority(path.join(folder, 'upstream-ca'), 'fuzz API');
  api = https.createServer({ ...upstreamCa.leafFor(HOST), keepAliveTimeout: 30_000 }, (request, response) => {
    parsed.push(`${request.method} ${request.url}`);
    request.resume();
    request.on('end', () => {
      response.writeHead(200, { 'content-length': '2' });
      response.end('ok');
    });
  });
  await new Promise<void>((resolve) => api.listen(0, '127.0.0.1', resolve));
  apiPort = (api.address() as net.AddressInfo).port;
  proxy = createEgressProxy({
    ca: proxyCa,
    clientOf: (remote) =>
      remote === A
        ? {
            sandbox: 'sandbox-fuzz',
            placeholders: new Map([[placeholder, { variable: 'TOKEN', value: 'real', hosts: [parseHostPattern(HOST)], ports: [apiPort] }]]),
          }
        : undefined,
    upstreamCa: [upstreamCa.certificatePem],
    lookup: ((_host: string, _options: unknown, callback: (...args: unknown[]) => void) =>
      callback(null, [{ address: '127.0.0.1', family: 4 }])) as net.LookupFunction,
    allowsAddress: () => true,
    headersTimeoutMs: 2_000,
    onForward: (request) => forwarded.push(request),
  });
  proxyPort = await proxy.listen(0, '127.0.0.1');
});

afterAll(async () => {
  await proxy?.close();
  api?.close();
  rmSync(folder, { recursive: true, force: true });
});

/** A name in random case. */
const cased = (name: string) =>
  fc
    .array(fc.boolean(), { minLength: name.length, maxLength: name.length })
    .map((upper) => [...name].map((c, i) => (upper[i] ? c.toUpperCase() : c.toLowerCase())).join(''));

/** A body, sometimes holding a whole request of its own (what a smuggler sends). */
const body = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.constant(`GET /smuggled HTTP/1.1\r\nHost: ${HOST}\r\n\r\n`),
  fc.constant(`POST /smuggled HTTP/1.1\r\nHost: ${HOST}\r\nContent-Length: 300\r\n\r\n`),
);

/** One request's bytes: its method, a random framing, random casing and Connection list. */
const requestBytes = (index: number) =>
  fc
    .record({
      method: fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'HEAD', 'OPTIONS', 'PATCH'),
      // Mostly framings the proxy keeps; the ambiguous ones (refused, ending the tunnel) now and then.
      framing: fc.oneof(
        { arbitrary: fc.constantFrom('none', 'length', 'chunked'), weight: 5 },
        { arbitrary: fc.constantFrom('both', 'gzip-chunked', 'two-lengths', 'folded'), weight: 1 },
      ),
      body,
      pieces: fc.integer({ min: 1, max: 4 }),
      connection: fc.subarray(['content-length', 'transfer-encoding', 'host', 'keep-alive', 'x-extra', 'authorization']),
      lengthName: cased('content-length'),
      codingName: cased('transfer-encoding'),
      hostName: cased('host'),
      connectionName: cased('connection'),
    })
    .map((r) => {
      const bytes = Buffer.byteLength(r.body);
      const chunked = () => {
        const size = Math.max(1, Math.ceil(r.body.length / r.pieces));
        let text = '';
        for (let at = 0; at < r.body.length; at += size) {
          const piece = r.body.slice(at, at + size);
          text += `${Buffer.byteLength(piece).toString(16)}\r\n${piece}\r\n`;
        }
        return `${text}0\r\n\r\n`;
      };
      const framing: Record<string, [string, string]> = {
        none: ['', ''],
        length: [`${r.lengthName}: ${bytes}\r\n`, r.body],
        chunked: [`${r.codingName}: chunked\r\n`, chunked()],
        both: [`${r.codingName}: chunked\r\n${r.lengthName}: ${bytes}\r\n`, chunked()],
        'gzip-chunked': [`${r.codingName}: gzip, chunked\r\n`, chunked()],
        'two-lengths': [`${r.lengthName}: ${bytes}\r\n${r.lengthName}: ${bytes + 1}\r\n`, r.body],
        folded: [`X-Folded: a\r\n b\r\n${r.lengthName}: ${bytes}\r\n`, r.body],
      };
      const [headers, payload] = framing[r.framing]!;
      const connection = r.connection.length > 0 ? `${r.connectionName}: ${r.connection.join(', ')}\r\n` : '';
      return `${r.method} /f${index} HTTP/1.1\r\n${r.hostName}: ${HOST}\r\nAuthorization: Bearer ${placeholder}\r\n${connection}${headers}\r\n${payload}`;
    });

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Opens a TLS tunnel through the proxy, writes `text` (`count` requests) in `splits` pieces, and
 * waits until the proxy is done with it: it closed the tunnel (a refusal), or every request was
 * answered (the upstream answers each with a fixed `200`, so its status lines count the answers).
 * Not a quiet period: on a busy machine the proxy may take longer than any quiet period to answer.
 */
async function send(text: string, count: number, splits: number[]): Promise<void> {
  const socket = net.connect({ host: '127.0.0.1', port: proxyPort, localAddress: A });
  socket.write(`CONNECT ${HOST}:${apiPort} HTTP/1.1\r\nHost: ${HOST}\r\n\r\n`);
  await new Promise((resolve) => socket.once('data', resolve));
  const secure = tls.connect({ socket, servername: HOST, ca: proxyCa.certificatePem });
  await new Promise((resolve) => secure.once('secureConnect', resolve));
  let received = '';
  let closed = false;
  secure.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')));
  secure.on('close', () => (closed = true));
  secure.on('error', () => (closed = true));
  const bytes = Buffer.from(text, 'utf8');
  let at = 0;
  for (const split of [...splits.map((fraction) => Math.floor(fraction * bytes.length)).sort((a, b) => a - b), bytes.length]) {
    if (split > at) secure.write(bytes.subarray(at, split));
    at = Math.max(at, split);
  }
  const answers = () => received.split('HTTP/1.1 200 ').length - 1;
  for (const deadline = Date.now() + 20_000; !closed && !secure.readableEnded && answers() < count && Date.now() < deadline; ) await sleep(20);
  secure.destroy();
  // The upstream may still be parsing what the proxy sent last before the tunnel closed.
  for (const deadline = Date.now() + 5_000; parsed.length < forwarded.length && Date.now() < deadline; ) await sleep(20);
  await sleep(50);
}

describe('the egress proxy under random framings (property)', () => {
  it('the upstream parses exactly the requests the proxy says it sent, in order, and never one from a body', {
    timeout: PROPERTY_TEST_TIMEOUT_MS,
  }, async () => {
    let sent = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 5 }).chain((count) => fc.tuple(...Array.from({ length: count }, (_, index) => requestBytes(index)))),
        fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { maxLength: 3 }),
        async (requests, splits) => {
          parsed.length = 0;
          forwarded.length = 0;
          await send(requests.join(''), requests.length, splits);
          expect(parsed).toEqual(forwarded.map((request) => `${request.method} ${request.target}`));
          expect(parsed.every((line) => !line.includes('smuggled'))).toBe(true);
          sent += forwarded.length;
        },
      ),
      { numRuns: 60 },
    );
    // Not a property that holds because nothing is sent: most generated requests are well framed.
    expect(sent).toBeGreaterThan(40);
  });
});
