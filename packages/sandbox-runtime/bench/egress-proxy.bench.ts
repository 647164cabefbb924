/*
 * What the egress proxy (docs/brokered-secrets.md) adds to a sandbox's HTTPS: latency per
 * request, on a new connection each time (a CLI tool's one request) and on a kept-alive one, and
 * the throughput of a 100 MB download, through the proxy against a direct connection, side by
 * side in one run (rounds alternate). A fake API with its own certificate chain, the proxy and
 * the client are three processes on loopback, so none waits on another's event loop; the proxy
 * substitutes a brokered placeholder in every proxied request, as it would for a real token.
 * Prints a table and writes bench-results/egress-proxy.json.
 */
import { fork } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import { loadCertificateAuthority } from '../src/egress/egress-proxy/certificate-authority.js';
import { createEgressProxy } from '../src/egress/egress-proxy/egress-proxy.js';
import { parseHostPattern } from '../src/egress/egress-proxy/host-patterns.js';
import { placeholderFor } from '../src/egress/egress-proxy/placeholders.js';

const HOST = 'api.bench.test';
const ROUNDS = 7;
const REQUESTS_PER_ROUND = 40;
const DOWNLOAD_BYTES = 100 * 1024 * 1024;
const PLACEHOLDER = placeholderFor('bench-key', 'bench-sandbox', 'TOKEN');
const lookup = ((_host: string, options: unknown, callback: (...args: unknown[]) => void) => {
  if (typeof options === 'object' && options !== null && (options as { all?: boolean }).all) callback(null, [{ address: '127.0.0.1', family: 4 }]);
  else callback(null, '127.0.0.1', 4);
}) as net.LookupFunction;

type Role = { role: 'api' | 'proxy'; folder: string; apiPort?: number };

/** The fake API (a child process): `/` answers a few bytes, `/download` streams DOWNLOAD_BYTES. */
async function runApi(folder: string): Promise<number> {
  const ca = loadCertificateAuthority(path.join(folder, 'api-ca'), 'bench API');
  const leaf = ca.leafFor(HOST);
  const piece = Buffer.alloc(256 * 1024, 120);
  const server = https.createServer({ cert: leaf.cert, key: leaf.key }, (request, response) => {
    if (request.url === '/download') {
      let left = DOWNLOAD_BYTES;
      response.writeHead(200, { 'content-length': String(left) });
      const pump = (): void => {
        while (left > 0) {
          const chunk = piece.subarray(0, Math.min(left, piece.length));
          left -= chunk.length;
          if (!response.write(chunk)) return void response.once('drain', pump);
        }
        response.end();
      };
      pump();
      return;
    }
    const body = request.headers.authorization === 'Bearer real-token' ? 'ok' : 'unsubstituted';
    response.writeHead(200, { 'content-length': String(body.length) });
    response.end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as net.AddressInfo).port;
}

/** The proxy (a child process), trusting the API's CA upstream. */
async function runProxy(folder: string, apiPort: number): Promise<number> {
  const apiCa = loadCertificateAuthority(path.join(folder, 'api-ca'), 'bench API');
  const ca = loadCertificateAuthority(path.join(folder, 'proxy-ca'), 'bench installation');
  // The API's own port is the one the value goes to: the proxy opens the TLS and puts the value in,
  // the work this bench measures (a host on no approved port would pass through unopened).
  const table = new Map([[PLACEHOLDER, { variable: 'TOKEN', value: 'real-token', hosts: [parseHostPattern(HOST)], ports: [apiPort] }]]);
  const proxy = createEgressProxy({
    ca,
    clientOf: () => ({ sandbox: 'bench-sandbox', placeholders: table }),
    upstreamCa: [apiCa.certificatePem],
    lookup,
    // The fake API is on loopback; a real proxy applies the sandboxes' egress policy here.
    allowsAddress: () => true,
    perClientConnections: 1024,
  });
  return proxy.listen(0, '127.0.0.1');
}

if (process.argv[2] === 'child') {
  process.once('message', async (message: Role) => {
    const port = message.role === 'api' ? await runApi(message.folder) : await runProxy(message.folder, message.apiPort!);
    process.send?.({ port });
  });
  // Told only once listening: a message sent before would be lost.
  process.send?.({ ready: true });
} else {
  await main();
}

function start(role: Role): Promise<{ port: number; stop: () => void }> {
  const child = fork(import.meta.filename, ['child'], { execArgv: process.execArgv, stdio: 'inherit' });
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`the ${role.role} process ended (${code})`)));
    child.on('message', (message: { ready?: boolean; port?: number }) => {
      if (message.ready) child.send(role);
      else resolve({ port: message.port!, stop: () => child.kill() });
    });
  });
}

/** A TLS socket to the API: straight, or through the proxy's CONNECT. */
async function connect(via: 'direct' | 'proxy', ports: { api: number; proxy: number }, trust: { api: string; proxy: string }): Promise<tls.TLSSocket> {
  if (via === 'direct') {
    const socket = tls.connect({ host: '127.0.0.1', port: ports.api, servername: HOST, ca: trust.api });
    await new Promise((resolve, reject) => socket.once('secureConnect', resolve).once('error', reject));
    return socket;
  }
  const raw = net.connect({ host: '127.0.0.1', port: ports.proxy });
  raw.write(`CONNECT ${HOST}:${ports.api} HTTP/1.1\r\nHost: ${HOST}:${ports.api}\r\n\r\n`);
  await new Promise<void>((resolve, reject) => {
    let seen = '';
    const onData = (chunk: Buffer): void => {
      seen += chunk.toString('latin1');
      if (!seen.includes('\r\n\r\n')) return;
      raw.off('data', onData);
      if (seen.startsWith('HTTP/1.1 200')) resolve();
      else reject(new Error(seen.split('\r\n')[0]));
    };
    raw.on('data', onData).once('error', reject);
  });
  const socket = tls.connect({ socket: raw, servername: HOST, ca: trust.proxy });
  await new Promise((resolve, reject) => socket.once('secureConnect', resolve).once('error', reject));
  return socket;
}

/** An agent whose one connection is `socket`: kept alive between its requests, or closed after one. */
function agentOver(socket: tls.TLSSocket, keep: boolean): https.Agent {
  const agent = new https.Agent({ keepAlive: keep, maxSockets: 1 });
  (agent as unknown as { createConnection: () => tls.TLSSocket }).createConnection = () => socket;
  return agent;
}

/** One GET through `agent`; resolves with the body's length. */
function get(agent: https.Agent, target: string, keep: boolean): Promise<number> {
  return new Promise((resolve, reject) => {
    const call = https.request(
      { host: HOST, path: target, agent, headers: { authorization: `Bearer ${PLACEHOLDER}`, connection: keep ? 'keep-alive' : 'close' } },
      (response) => {
        let length = 0;
        response.on('data', (chunk: Buffer) => (length += chunk.length));
        response.on('end', () => resolve(length));
      },
    );
    call.on('error', reject);
    call.end();
  });
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

async function main(): Promise<void> {
  const folder = mkdtempSync(path.join(os.tmpdir(), 'berth-proxy-bench-'));
  try {
    // The API first: it makes the CA the proxy trusts upstream.
    const api = await start({ role: 'api', folder });
    const proxy = await start({ role: 'proxy', folder, apiPort: api.port });
    const ports = { api: api.port, proxy: proxy.port };
    const trust = {
      api: loadCertificateAuthority(path.join(folder, 'api-ca'), 'bench API').certificatePem,
      proxy: loadCertificateAuthority(path.join(folder, 'proxy-ca'), 'bench installation').certificatePem,
    };
    // Check the figures measure real work: the proxied request carries the real token.
    const check = await connect('proxy', ports, trust);
    if ((await get(agentOver(check, false), '/', false)) !== 2) throw new Error('the proxy did not substitute the placeholder');
    check.destroy();

    const samples = {
      newDirect: [] as number[],
      newProxy: [] as number[],
      keptDirect: [] as number[],
      keptProxy: [] as number[],
      mbpsDirect: [] as number[],
      mbpsProxy: [] as number[],
    };
    for (let round = 0; round < ROUNDS; round++) {
      for (const via of round % 2 ? (['proxy', 'direct'] as const) : (['direct', 'proxy'] as const)) {
        const fresh: number[] = [];
        for (let index = 0; index < REQUESTS_PER_ROUND; index++) {
          const started = performance.now();
          const socket = await connect(via, ports, trust);
          await get(agentOver(socket, false), '/', false);
          fresh.push(performance.now() - started);
          socket.destroy();
        }
        const socket = await connect(via, ports, trust);
        const agent = agentOver(socket, true);
        const kept: number[] = [];
        for (let index = 0; index < REQUESTS_PER_ROUND; index++) {
          const started = performance.now();
          await get(agent, '/', true);
          kept.push(performance.now() - started);
        }
        const started = performance.now();
        const bytes = await get(agent, '/download', true);
        const seconds = (performance.now() - started) / 1000;
        if (bytes !== DOWNLOAD_BYTES) throw new Error(`a download of ${bytes} bytes`);
        agent.destroy();
        socket.destroy();
        samples[via === 'direct' ? 'newDirect' : 'newProxy'].push(median(fresh));
        samples[via === 'direct' ? 'keptDirect' : 'keptProxy'].push(median(kept));
        samples[via === 'direct' ? 'mbpsDirect' : 'mbpsProxy'].push(DOWNLOAD_BYTES / 1024 / 1024 / seconds);
      }
    }
    api.stop();
    proxy.stop();

    const rows = [
      { what: 'HTTPS request, new connection (ms)', direct: median(samples.newDirect), proxy: median(samples.newProxy) },
      { what: 'HTTPS request, kept-alive connection (ms)', direct: median(samples.keptDirect), proxy: median(samples.keptProxy) },
      { what: '100 MB download (MiB/s)', direct: median(samples.mbpsDirect), proxy: median(samples.mbpsProxy) },
    ];
    console.log(`egress proxy against direct, medians of ${ROUNDS} alternating rounds (${REQUESTS_PER_ROUND} requests a round), on loopback`);
    console.log('| measure | direct | through the proxy | proxy / direct |');
    console.log('| --- | ---: | ---: | ---: |');
    for (const row of rows) console.log(`| ${row.what} | ${row.direct.toFixed(2)} | ${row.proxy.toFixed(2)} | ${(row.proxy / row.direct).toFixed(2)} |`);
    const output = path.resolve(import.meta.dirname, '..', 'bench-results', 'egress-proxy.json');
    mkdirSync(path.dirname(output), { recursive: true });
    writeFileSync(
      output,
      `${JSON.stringify({ rounds: ROUNDS, requestsPerRound: REQUESTS_PER_ROUND, downloadBytes: DOWNLOAD_BYTES, rows, samples }, null, 2)}\n`,
    );
    console.log(`written: ${path.relative(process.cwd(), output)}`);
  } finally {
    rmSync(folder, { recursive: true, force: true });
  }
}
