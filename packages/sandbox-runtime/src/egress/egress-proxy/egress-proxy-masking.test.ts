import { mkdtempSync, rmSync } from 'node:fs';
import https from 'node:https';
import type net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadCertificateAuthority, type CertificateAuthority } from './certificate-authority.js';
import { createEgressProxy, type EgressProxy } from './egress-proxy.js';
import { parseHostPattern } from './host-patterns.js';
import { placeholderFor } from './placeholders.js';
import { connectThrough, listen, toLoopback } from './proxy-test-kit.js';

/**
 * What a hostile upstream (an approved host that turns on its users, or one that reflects what it
 * was sent) can try on the way back, and the proxy's own work per name: masking that fails
 * closed, answers that would hide a value from masking, and certificates for many names.
 */
const TOKEN = 'ghp_REALvalue_for_masking_0123456789';
const A = '127.0.0.2';
const placeholder = placeholderFor('masking-key', 'sandbox-m', 'TOKEN');

let folder: string;
let proxyCa: CertificateAuthority;
let api: https.Server;
let apiPort: number;
let proxy: EgressProxy;
let proxyPort: number;
const logs: string[] = [];
const seen: Array<Record<string, string | string[] | undefined>> = [];

beforeAll(async () => {
  folder = mkdtempSync(path.join(os.tmpdir(), 'berth-proxy-masking-'));
  proxyCa = loadCertificateAuthority(path.join(folder, 'proxy-ca'), 'masking test');
  const upstreamCa = loadCertificateAuthority(path.join(folder, 'upstream-ca'), 'masking API');
  api = https.createServer({
    ...upstreamCa.leafFor('api.mask.test'),
    SNICallback: (name, done) => done(null, tls.createSecureContext(upstreamCa.leafFor(name))),
  });
  api.on('request', (request, response) => {
    seen.push(request.headers);
    const auth = String(request.headers.authorization ?? '');
    if (request.url === '/cut') {
      // Announces more than it sends, and stops inside the value it echoes.
      response.writeHead(200, { 'content-length': '400' });
      response.write(`you are ${auth.slice(7, 7 + 20)}`);
      setTimeout(() => response.socket?.destroy(), 100);
    } else if (request.url === '/gzip') {
      response.writeHead(200, { 'content-encoding': 'gzip', 'content-length': '4' });
      response.end('\x1f\x8b\x08\x00');
    } else {
      response.writeHead(200, { 'content-type': 'text/plain' });
      response.end(`ok ${request.url}`);
    }
  });
  apiPort = await listen(api);
  proxy = createEgressProxy({
    ca: proxyCa,
    clientOf: (remote) =>
      remote === A
        ? {
            sandbox: 'sandbox-m',
            placeholders: new Map([[placeholder, { variable: 'TOKEN', value: TOKEN, hosts: [parseHostPattern('*.mask.test')], ports: [apiPort] }]]),
          }
        : undefined,
    upstreamCa: [upstreamCa.certificatePem],
    lookup: toLoopback,
    allowsAddress: () => true,
    logger: { info: (line) => logs.push(line), warn: (line) => logs.push(line) },
  });
  proxyPort = await proxy.listen(0, '127.0.0.1');
});

afterAll(async () => {
  await proxy?.close();
  api?.close();
  rmSync(folder, { recursive: true, force: true });
});

/** One request in a fresh tunnel; everything that came back until the connection ended (or 3 s). */
async function exchange(host: string, raw: string): Promise<string> {
  const tunnel = await connectThrough(A, `${host}:${apiPort}`, proxyPort);
  const secure = tls.connect({ socket: tunnel.socket, servername: host, ca: proxyCa.certificatePem });
  secure.on('error', () => undefined);
  await new Promise((resolve) => secure.once('secureConnect', resolve));
  let text = '';
  secure.on('data', (chunk: Buffer) => (text += chunk.toString('latin1')));
  secure.write(raw);
  const started = Date.now();
  while (!secure.destroyed && !secure.readableEnded && !/ok \//.test(text) && Date.now() - started < 3_000)
    await new Promise((resolve) => setTimeout(resolve, 20));
  secure.destroy();
  return text;
}

describe('the egress proxy against a hostile upstream', () => {
  it('fails closed: an answer cut off in the middle of a value never passes that part of it', async () => {
    const text = await exchange('api.mask.test', `GET /cut HTTP/1.1\r\nHost: api.mask.test\r\nAuthorization: Bearer ${placeholder}\r\n\r\n`);
    expect(text).toMatch(/^HTTP\/1\.1 200/);
    expect(text).not.toContain(TOKEN.slice(0, 8));
  });

  it('asks for answers without content coding where a value may come back, and refuses a coded one (502)', async () => {
    const text = await exchange(
      'api.mask.test',
      `GET /gzip HTTP/1.1\r\nHost: api.mask.test\r\nAuthorization: Bearer ${placeholder}\r\nAccept-Encoding: gzip, br\r\nRange: bytes=5-20\r\n\r\n`,
    );
    expect(text).toMatch(/^HTTP\/1\.1 502/);
    expect(text).toContain('Content-Encoding gzip although asked for identity');
    // A partial answer could hold a value's middle, past masking: no Range either.
    expect(seen.at(-1)).toMatchObject({ 'accept-encoding': 'identity' });
    expect(seen.at(-1)!.range).toBeUndefined();
  });

  it('signs certificates for new names at a bounded rate per sandbox, and a name already signed still works', async () => {
    const connects = await Promise.all(
      Array.from({ length: 80 }, async (_, index) => {
        const tunnel = await connectThrough(A, `n${index}.mask.test:${apiPort}`, proxyPort);
        const secure = tls.connect({ socket: tunnel.socket as net.Socket, servername: `n${index}.mask.test`, ca: proxyCa.certificatePem });
        const handshake = await new Promise<boolean>((resolve) => {
          secure.once('secureConnect', () => resolve(true));
          secure.once('error', () => resolve(false));
        });
        secure.destroy();
        return handshake;
      }),
    );
    const made = connects.filter(Boolean).length;
    // The burst (32), less what this file signed before, and what refilled meanwhile.
    expect(made).toBeGreaterThanOrEqual(28);
    expect(made).toBeLessThan(50);
    expect(logs.some((line) => line.includes('sandbox-m asks for new host names faster than'))).toBe(true);
    expect(await exchange('n0.mask.test', 'GET /again HTTP/1.1\r\nHost: n0.mask.test\r\n\r\n')).toContain('ok /again');
  });
});
