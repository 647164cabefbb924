import { mkdtempSync, rmSync } from 'node:fs';
import type https from 'node:https';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadCertificateAuthority, type CertificateAuthority } from './certificate-authority.js';
import { createEgressProxy, type ProxyClient } from './egress-proxy.js';
import { parseHostPattern } from './host-patterns.js';
import { placeholderFor } from './placeholders.js';
import { listen, request, serve, toLoopback } from './proxy-test-kit.js';

// The proxy with its default bounds, against the fake API on loopback: what one sandbox's flood
// of connections costs the host and the other sandboxes.
const A = '127.0.0.2';
const B = '127.0.0.3';
const allowsAddress = (): boolean => true;
let folder: string;
let proxyCa: CertificateAuthority;
let upstreamCa: CertificateAuthority;
let api: https.Server;
let apiPort: number;
const clients = new Map<string, ProxyClient>();

beforeAll(async () => {
  folder = mkdtempSync(path.join(os.tmpdir(), 'berth-proxy-bounds-'));
  proxyCa = loadCertificateAuthority(path.join(folder, 'proxy-ca'), 'berth test installation');
  upstreamCa = loadCertificateAuthority(path.join(folder, 'upstream-ca'), 'the fake API');
  api = serve(upstreamCa, ['api.github.test']);
  apiPort = await listen(api);
  for (const [address, sandbox] of [
    [A, 'sandbox-a'],
    [B, 'sandbox-b'],
  ] as const) {
    const placeholder = placeholderFor('bounds-key', sandbox, 'GITHUB_TOKEN');
    clients.set(address, {
      sandbox,
      placeholders: new Map([
        [placeholder, { variable: 'GITHUB_TOKEN', value: `ghp_${sandbox}`, hosts: [parseHostPattern('api.github.test')], ports: [apiPort] }],
      ]),
    });
  }
});

afterAll(() => {
  api?.close();
  rmSync(folder, { recursive: true, force: true });
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
      const answer = await request({ proxyPort: port, apiPort, trust: proxyCa.certificatePem }, B, 'api.github.test', '/user');
      expect(answer.status).toBe(200);
      expect(process.memoryUsage().heapUsed - heapBefore).toBeLessThan(64 * 1024 * 1024);
    } finally {
      for (const socket of sockets) socket.destroy();
      await bounded.close();
    }
  });
});
