import dns from 'node:dns';
import net, { type LookupFunction } from 'node:net';
import type { Duplex } from 'node:stream';
import tls from 'node:tls';
import type { HostLogger } from '@berth/core';
import { type EgressDomain, egressDomainMatches } from '@berth/core/driver';
import { ByteReader } from './byte-reader.js';
import { guardedLookupOf } from './address-policy.js';
import type { CertificateAuthority } from './certificate-authority.js';
import { serveConnect, type TunnelContext } from './connect-tunnel.js';
import { answer } from './forward-exchange.js';
import { HeadError, MAX_HEAD_BYTES, parseRequestHead } from './http-head.js';
import { MaskForms } from './mask-forms.js';
import { type ForwardedRequest, type SessionContext, serveMessages } from './message-session.js';
import type { PlaceholderTable } from './placeholders.js';
import { createProxyConnections } from './proxy-connections.js';
import { createRefusalLog } from './refusal-log.js';
import { createTlsTerminator } from './tls-terminator.js';
import { UpstreamPool } from './upstream-pool.js';

/**
 * The egress proxy (docs/brokered-secrets.md): sandboxes' HTTP and HTTPS leave through it. It
 * ends their TLS only to hosts a brokered variable of theirs is approved for (on that port), with
 * a certificate of the installation's CA, reads each request itself (framing, headers, Host),
 * puts values only where credentials go, writes the request on with framing of its own over TLS
 * verified against the host's trust store, and masks values in what comes back. TLS to any other
 * host, and anything that is not TLS, is passed through unopened. Every byte from a sandbox or an
 * upstream is parsed, bounded and checked by the host; nothing a sandbox says of itself is believed.
 *
 * Who a connection is from is told by its addresses alone (each sandbox has a network of its
 * own): a connection from no known sandbox is dropped, never served with a default.
 */

/** What the proxy knows of the sandbox a connection comes from. */
export interface ProxyClient {
  /** The sandbox's name, for logs. */
  readonly sandbox: string;
  /** Its brokered variables, by placeholder. */
  readonly placeholders: PlaceholderTable;
  /** Allow-list mode: the hosts and ports it may reach (by name only). Undefined: any. */
  readonly allow?: readonly EgressDomain[] | undefined;
  /** The CA its host certificates are signed by, when not the proxy's own (an installation's). */
  readonly ca?: CertificateAuthority | undefined;
}

/** How the proxy is made. */
export interface EgressProxyOptions {
  readonly ca: CertificateAuthority;
  /** The sandbox a connection comes from, by its remote and local addresses; undefined refuses it. */
  clientOf(remoteAddress: string, localAddress: string): ProxyClient | undefined;
  readonly logger?: Pick<HostLogger, 'info' | 'warn'> | undefined;
  /** Certificates trusted upstream besides the host's store (a company's own CA, or a test's). */
  readonly upstreamCa?: readonly string[] | undefined;
  /** How host names are resolved upstream (tests point names at their own servers). */
  readonly lookup?: LookupFunction | undefined;
  /**
   * Whether the proxy may connect to `address`:`port` for a sandbox. The proxy sits on the host,
   * outside the sandboxes' firewall, so it applies the same egress policy itself, to every
   * address a name resolves to as well as to addresses given outright.
   */
  allowsAddress(address: string, port: number): boolean;
  /** Connections one sandbox may hold open to the proxy at once. @default 64 */
  readonly perClientConnections?: number | undefined;
  /** Connections of all sandboxes together. @default 1024 */
  readonly totalConnections?: number | undefined;
  /** Upstream connections one sandbox may hold at once. @default 16 */
  readonly perClientUpstream?: number | undefined;
  /** Upstream connections of all sandboxes together (shared fairly when full). @default 512 */
  readonly totalUpstream?: number | undefined;
  /** How long a client may take to send a request's headers, or finish its TLS handshake. @default 15000 */
  readonly headersTimeoutMs?: number | undefined;
  /** How long a connection may stay idle, either way. @default 120000 */
  readonly idleTimeoutMs?: number | undefined;
  /** Told of every request sent on (its target with placeholders, never a value): audits and tests. */
  readonly onForward?: ((request: ForwardedRequest) => void) | undefined;
}

/** A running egress proxy. */
export interface EgressProxy {
  /**
   * Listens on `port` of `host` (again for each address: a listener per sandbox network's
   * gateway); resolves with the port. Listening again on an address already listened on is a no-op.
   */
  listen(port: number, host: string): Promise<number>;
  /** Stops listening on `host` (connections already open stay). */
  unlisten(host: string): Promise<void>;
  /** The addresses listened on. */
  listening(): readonly string[];
  close(): Promise<void>;
  /** Connections open now, per sandbox (for `berth doctor` and tests). */
  connections(): ReadonlyMap<string, number>;
  /** Upstream connections open now, per sandbox. */
  upstreamConnections(): ReadonlyMap<string, number>;
}

/** How long a sandbox's kept-alive upstream connections outlive its last connection to the proxy. */
const UPSTREAM_LINGER_MS = 30_000;

/** Builds the egress proxy; it listens once told where ({@link EgressProxy.listen}). */
export function createEgressProxy(options: EgressProxyOptions): EgressProxy {
  const guardedLookup = guardedLookupOf(options.lookup ?? (dns.lookup as unknown as LookupFunction), options.allowsAddress);
  const perClient = options.perClientConnections ?? 64;
  const total = options.totalConnections ?? 1024;
  const headersTimeoutMs = options.headersTimeoutMs ?? 15_000;
  const idleTimeoutMs = options.idleTimeoutMs ?? 120_000;
  const upstreamCa = options.upstreamCa?.length ? [...tls.rootCertificates, ...options.upstreamCa] : undefined;
  const refusals = createRefusalLog(options.logger);
  const pool = new UpstreamPool({ perSandbox: options.perClientUpstream ?? 16, total: options.totalUpstream ?? 512, idleMs: UPSTREAM_LINGER_MS });
  const terminator = createTlsTerminator({ headersTimeoutMs, refusals });
  const masks = new WeakMap<ProxyClient, MaskForms>();
  // How many connections each sandbox holds, and the caps (proxy-connections.ts).
  const connections = createProxyConnections({ perClient, total, lingerMs: UPSTREAM_LINGER_MS, refusals, pool });

  /** A connection upstream, TLS verified against the host's store when `secure`. */
  const connectUpstream = (host: string, port: number, secure: boolean): Promise<Duplex> =>
    new Promise((done, fail) => {
      const socket = secure
        ? tls.connect({ host, port, servername: host, ALPNProtocols: ['http/1.1'], ...(upstreamCa ? { ca: upstreamCa } : {}), lookup: guardedLookup(port) })
        : net.connect({ host, port, lookup: guardedLookup(port) });
      socket.setNoDelay(true);
      socket.setTimeout(idleTimeoutMs, () => socket.destroy(new Error(`no answer within ${idleTimeoutMs} ms`)));
      socket.once(secure ? 'secureConnect' : 'connect', () => {
        socket.removeListener('error', fail);
        socket.on('error', () => socket.destroy());
        done(socket);
      });
      socket.once('error', fail);
    });

  /** Why a sandbox may not reach `host`:`port` (the address policy, its allow list), or undefined. */
  const refusal = (client: ProxyClient, host: string, port: number): string | undefined => {
    const address = net.isIP(host) !== 0;
    if (address && !options.allowsAddress(host, port)) return `${host}:${port} is not reachable from sandboxes`;
    if (client.allow && (address || !egressDomainMatches(host, port, client.allow))) {
      const how = address ? ' (addresses never are: name the host)' : ' (a name is listed with its ports: 443 and 80, or name:port)';
      return `${host}:${port} is not on this sandbox's allow list${how}`;
    }
    return undefined;
  };
  const refuseLogged = (client: ProxyClient, host: string, port: number): string | undefined => {
    const why = refusal(client, host, port);
    if (why) refusals.warn(`deny ${client.sandbox} ${host}:${port}`, `berth: egress proxy: ${client.sandbox} asked for ${host}:${port}, refused: ${why}`);
    return why;
  };

  const contextOf = (client: ProxyClient): SessionContext => {
    const forms = masks.get(client) ?? new MaskForms();
    masks.set(client, forms);
    return {
      sandbox: client.sandbox,
      placeholders: client.placeholders,
      masks: forms,
      refusals,
      lease: (host, port, secure) => pool.acquire(client.sandbox, `${secure ? 'https' : 'http'}://${host}:${port}`, () => connectUpstream(host, port, secure)),
      refusePlain: (host, port) => refuseLogged(client, host, port),
      headersTimeoutMs,
      idleTimeoutMs,
      onForward: options.onForward,
    };
  };

  // CONNECT: refused, passed through, or its TLS ended and its requests served (connect-tunnel.ts).
  const tunnels: TunnelContext = { ca: options.ca, refusals, pool, terminator, headersTimeoutMs, idleTimeoutMs, connectUpstream, refuseLogged, contextOf };

  const accept = (socket: net.Socket): void => {
    socket.on('error', () => socket.destroy());
    const client = options.clientOf(socket.remoteAddress ?? '', socket.localAddress ?? '');
    if (!client) {
      refusals.warn(
        `unknown ${socket.remoteAddress}`,
        `berth: egress proxy: a connection from ${socket.remoteAddress}, which is no sandbox of this installation, was dropped`,
      );
      socket.destroy();
      return;
    }
    if (!connections.admit(client, socket)) {
      socket.destroy();
      return;
    }
    socket.setTimeout(idleTimeoutMs, () => socket.destroy());
    void (async () => {
      const reader = new ByteReader(socket);
      const bytes = await reader.readDelimited('\r\n\r\n', MAX_HEAD_BYTES, {
        firstByteMs: headersTimeoutMs,
        wholeMs: headersTimeoutMs,
        what: 'the first request head',
      });
      if (!bytes) return void socket.end();
      let method: string;
      let target: string;
      try {
        ({ method, target } = parseRequestHead(bytes));
      } catch (error) {
        if (!(error instanceof HeadError)) throw error;
        refusals.warn(`request ${client.sandbox} ${error.message}`, `berth: egress proxy: a request of ${client.sandbox} was refused (400): ${error.message}`);
        await answer(socket, 400, error.message);
        return void socket.end();
      }
      if (method === 'CONNECT') await serveConnect(tunnels, client, socket, reader, target);
      else await serveMessages(contextOf(client), { socket, reader }, undefined, bytes);
    })().catch(() => socket.destroy());
  };

  // One listener per address: the proxy is reachable only on the addresses it is told (each
  // sandbox network's gateway), never on all.
  const listeners = new Map<string, Promise<net.Server>>();
  const listenOn = (port: number, host: string): Promise<net.Server> =>
    new Promise((done, fail) => {
      // No Nagle: the small writes of CONNECT's answer and of the TLS handshake must not wait for
      // the sandbox's delayed ACKs (a new connection took 81 ms with it, against 7 ms straight).
      const listener = net.createServer({ noDelay: true }, accept);
      listener.once('error', fail);
      listener.listen(port, host, () => {
        listener.off('error', fail);
        listener.on('error', () => undefined);
        done(listener);
      });
    });

  return {
    listen: async (port, host) => {
      let listener = listeners.get(host);
      if (!listener) {
        listener = listenOn(port, host);
        listeners.set(host, listener);
        listener.catch(() => listeners.delete(host));
      }
      return ((await listener).address() as net.AddressInfo).port;
    },
    unlisten: async (host) => {
      const listener = listeners.get(host);
      listeners.delete(host);
      const server = await listener?.catch(() => undefined);
      await new Promise<void>((done) => (server ? server.close(() => done()) : done()));
    },
    listening: () => [...listeners.keys()],
    close: async () => {
      pool.close();
      connections.destroyAll();
      const servers = await Promise.all([...listeners.values()].map((listener) => listener.catch(() => undefined)));
      listeners.clear();
      await Promise.all(servers.map((server) => new Promise<void>((done) => (server ? server.close(() => done()) : done()))));
    },
    connections: () => connections.counts(),
    upstreamConnections: () => pool.counts(),
  };
}
