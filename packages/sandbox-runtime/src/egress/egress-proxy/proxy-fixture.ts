import { mkdtempSync, rmSync } from 'node:fs';
import type https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { parseEgressDomain } from '@berth/core/driver';
import { afterAll, beforeAll } from 'vitest';
import { loadCertificateAuthority, type CertificateAuthority } from './certificate-authority.js';
import { createEgressProxy, type EgressProxy, type ProxyClient } from './egress-proxy.js';
import { parseHostPattern } from './host-patterns.js';
import { placeholderFor } from './placeholders.js';
import { connectThrough as through, FORBIDDEN, listen, request as requestVia, serve, toLoopback } from './proxy-test-kit.js';

// The proxy egress-proxy.test.ts and egress-proxy-connections.test.ts run against (not a test
// file itself): each test file that calls useProxy() gets its own, in its own worker.

/**
 * The proxy against a fake API of the test's own on loopback, with its own certificate chain
 * (another CA, trusted upstream only through `upstreamCa`). Sandboxes are told apart by their
 * addresses, as on an engine: here 127.0.0.2 (A) and 127.0.0.3 (B); 127.0.0.4 is no sandbox.
 */
const KEY = 'test-installation-key';
export const TOKEN = 'ghp_REAL_token_value_0123456789';
export const A = '127.0.0.2';
export const B = '127.0.0.3';
export const STRANGER = '127.0.0.4';
export const placeholderA = placeholderFor(KEY, 'sandbox-a', 'GITHUB_TOKEN');
export const placeholderB = placeholderFor(KEY, 'sandbox-b', 'GITHUB_TOKEN');

let folder: string;
export let proxyCa: CertificateAuthority;
export let upstreamCa: CertificateAuthority;
let untrustedCa: CertificateAuthority;
let api: https.Server;
export let apiPort: number;
let impostor: https.Server;
export let impostorPort: number;
export let proxy: EgressProxy;
export let proxyPort: number;
export const logs: string[] = [];
const clients = new Map<string, ProxyClient>();

const allowsAddress = (address: string): boolean => address !== FORBIDDEN;
export const connectThrough = (from: string, authority: string, port = proxyPort, at = '127.0.0.1') => through(from, authority, port, at);
export const request = (from: string, host: string, target: string, options: Parameters<typeof requestVia>[4] = {}) =>
  requestVia({ proxyPort, apiPort, trust: proxyCa.certificatePem }, from, host, target, options);

/** Starts the fake APIs and the proxy before the tests of the file that calls it, and stops them after. */
export function useProxy(): void {
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
}
