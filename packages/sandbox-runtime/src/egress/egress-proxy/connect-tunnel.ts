import net from 'node:net';
import type { Duplex } from 'node:stream';
import { ByteReader } from './byte-reader.js';
import type { CertificateAuthority } from './certificate-authority.js';
import { readClientHello } from './client-hello.js';
import type { ProxyClient } from './egress-proxy.js';
import { answer } from './forward-exchange.js';
import { canonicalHost } from './host-patterns.js';
import { type SessionContext, serveMessages } from './message-session.js';
import { parseAuthority } from './parse-authority.js';
import { anyApprovedFor } from './placeholders.js';
import type { RefusalLog } from './refusal-log.js';
import type { TlsTerminator } from './tls-terminator.js';
import type { UpstreamLease, UpstreamPool } from './upstream-pool.js';

/** What serving a CONNECT needs of the proxy (egress-proxy.ts). */
export interface TunnelContext {
  /** The proxy's own CA, for a client without its installation's. */
  readonly ca: CertificateAuthority;
  readonly refusals: RefusalLog;
  readonly pool: UpstreamPool;
  readonly terminator: TlsTerminator;
  readonly headersTimeoutMs: number;
  readonly idleTimeoutMs: number;
  /** A connection upstream, TLS verified against the host's store when `secure`. */
  connectUpstream(host: string, port: number, secure: boolean): Promise<Duplex>;
  /** Why a sandbox may not reach `host`:`port`, logged, or undefined. */
  refuseLogged(client: ProxyClient, host: string, port: number): string | undefined;
  /** What serving a client's requests one at a time needs. */
  contextOf(client: ProxyClient): SessionContext;
}

/** An upstream connection for a tunnel passed through: the sandbox's for the tunnel's life; undefined (answered 502) when unreachable. */
async function tunnelUpstream({ pool, refusals, connectUpstream }: TunnelContext, client: ProxyClient, socket: net.Socket, host: string, port: number) {
  const lease = await pool
    .acquire(client.sandbox, `tunnel ${Math.random()}`, () => connectUpstream(host, port, false))
    .catch(async (error: Error) => {
      refusals.warn(`unreachable ${client.sandbox} ${host}`, `berth: egress proxy: ${client.sandbox}'s tunnel to ${host}:${port} failed: ${error.message}`);
      await answer(socket, 502, `could not reach ${host}: ${error.message}`);
      socket.end();
      return undefined;
    });
  if (lease && socket.destroyed) lease.release(false);
  return lease && !socket.destroyed ? lease : undefined;
}

/**
 * Passes a tunnel through as it is: the upstream's bytes at once (SSH speaks first), the
 * sandbox's once, in allow-list mode, a TLS ClientHello among them names `checkName` (a listed
 * name cannot carry an unlisted one in its SNI).
 */
async function passThrough(
  { refusals, headersTimeoutMs, idleTimeoutMs }: TunnelContext,
  client: ProxyClient,
  socket: net.Socket,
  reader: ByteReader,
  lease: UpstreamLease,
  checkName?: string,
): Promise<void> {
  const upstream = lease.socket;
  const early = lease.reader.detach();
  if (early.length > 0) socket.write(early);
  upstream.pipe(socket);
  upstream.resume();
  socket.once('close', () => lease.release(false));
  upstream.once('close', () => socket.destroy());
  let hello: Awaited<ReturnType<typeof readClientHello>> | undefined;
  if (checkName !== undefined && (await reader.peekByte(idleTimeoutMs, 'the first bytes of the tunnel').catch(() => undefined)) === 0x16) {
    hello = await readClientHello(reader, { wholeMs: headersTimeoutMs }).catch(() => undefined);
    if (!hello || hello.malformed || (hello.name !== undefined && canonicalHost(hello.name) !== checkName)) {
      const named = hello?.malformed ? 'nothing readable' : (hello?.name?.slice(0, 253) ?? 'nothing');
      refusals.warn(
        `sni ${client.sandbox} ${checkName}`,
        `berth: egress proxy: ${client.sandbox} connected for ${checkName} but named ${named} in TLS; refused`,
      );
      socket.destroy();
      return;
    }
  }
  const first = Buffer.concat([hello?.bytes ?? Buffer.alloc(0), reader.detach()]);
  if (first.length > 0) upstream.write(first);
  socket.pipe(upstream);
  socket.resume();
}

/**
 * A CONNECT to `target`: refused (403) when the sandbox may not reach it; its TLS ended only for a
 * host one of its brokered variables is approved for (on that port), and its requests then served
 * one at a time; anything else passed through unopened.
 */
export async function serveConnect(tunnels: TunnelContext, client: ProxyClient, socket: net.Socket, reader: ByteReader, target: string): Promise<void> {
  const { refuseLogged, headersTimeoutMs, terminator, contextOf } = tunnels;
  const authority = parseAuthority(target, 443);
  if (!authority) {
    await answer(socket, 400, 'CONNECT names no host and port');
    socket.end();
    return;
  }
  const { host, port } = authority;
  const why = refuseLogged(client, host, port);
  if (why) {
    await answer(socket, 403, why);
    socket.end();
    return;
  }
  const named = net.isIP(host) === 0;
  if (!(named && anyApprovedFor(client.placeholders, host, port))) {
    // Not opened: its upstream first (unreachable, the sandbox is told so), then bytes both ways.
    const lease = await tunnelUpstream(tunnels, client, socket, host, port);
    if (!lease) return;
    socket.write('HTTP/1.1 200 Connection Established\r\n\r\n');
    await passThrough(tunnels, client, socket, reader, lease, client.allow && named ? host : undefined);
    return;
  }
  socket.write('HTTP/1.1 200 Connection Established\r\n\r\n');
  const firstByte = await reader.peekByte(headersTimeoutMs, 'the first bytes of the tunnel').catch(() => undefined);
  if (firstByte === undefined) {
    socket.destroy();
    return;
  }
  if (firstByte === 0x16) {
    const secure = await terminator.terminate(socket, reader.detach(), { sandbox: client.sandbox, host, ca: client.ca ?? tunnels.ca });
    if (secure) await serveMessages(contextOf(client), { socket: secure, reader: new ByteReader(secure) }, { host, port });
    return;
  }
  // Not TLS (a protocol of the operator's on a port named for a variable): passed through, nothing substituted.
  const lease = await tunnelUpstream(tunnels, client, socket, host, port);
  if (lease) await passThrough(tunnels, client, socket, reader, lease);
}
