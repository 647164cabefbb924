import dns from 'node:dns';
import type { LookupFunction } from 'node:net';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import { Duplex } from 'node:stream';
import tls from 'node:tls';
import type { HostLogger } from '@berth/core';
import type { CertificateAuthority } from './certificate-authority.js';
import { canonicalHost, hostMatches, type HostPattern } from './host-patterns.js';
import { substituteRequest, type PlaceholderTable } from './placeholders.js';

/**
 * The egress proxy (docs/brokered-secrets.md): sandboxes' HTTP and HTTPS leave through it. It
 * ends their TLS with a certificate of the installation's CA for the host they asked for, checks
 * that the host named in CONNECT, SNI and the Host header is one and the same (and, in
 * allow-list mode, listed), puts brokered values in place of their placeholders for the hosts
 * they are approved for, and sends the request on over TLS verified against the host's trust
 * store. Bodies stream with back-pressure; memory per connection stays bounded.
 *
 * Who a connection is from is told by its addresses alone (each sandbox has a network of its
 * own, so its address is its identity; docs/brokered-secrets.md): a connection from no known
 * sandbox is dropped, never served with a default.
 */

/** What the proxy knows of the sandbox a connection comes from. */
export interface ProxyClient {
  /** The sandbox's name, for logs. */
  readonly sandbox: string;
  /** Its brokered variables, by placeholder. */
  readonly placeholders: PlaceholderTable;
  /** Allow-list mode: the hosts it may reach (by name only). Undefined: any host. */
  readonly allow?: readonly HostPattern[] | undefined;
  /** The CA its host certificates are signed by, when not the proxy's own (an installation's). */
  readonly ca?: CertificateAuthority | undefined;
}

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
   * outside the sandboxes' firewall, so it must apply the same egress policy itself (no loopback,
   * no metadata, no other sandbox, no private network but the operator's exceptions), to every
   * address a name resolves to as well as to addresses given outright: otherwise a CONNECT, or
   * a name that resolves to such an address, reaches what the firewall refuses.
   */
  allowsAddress(address: string, port: number): boolean;
  /** Connections one sandbox may hold open at once. */
  readonly perClientConnections?: number | undefined;
  /** Connections of all sandboxes together. */
  readonly totalConnections?: number | undefined;
  /** How long a client may take to send a request's headers, or finish its TLS handshake. */
  readonly headersTimeoutMs?: number | undefined;
  /** How long a connection may stay idle, either way. */
  readonly idleTimeoutMs?: number | undefined;
}

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
}

/** How long a sandbox's kept-alive upstream connections outlive its last connection to the proxy. */
const UPSTREAM_LINGER_MS = 30_000;

/** Headers of one hop only (RFC 9110, 7.6.1), never passed on; those a Connection header names go too. */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authorization',
  'proxy-authenticate',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);

function withoutHopByHop(rawHeaders: readonly string[], keepUpgrade = false): string[] {
  const named = new Set<string>();
  for (let index = 0; index < rawHeaders.length; index += 2) {
    if (rawHeaders[index]!.toLowerCase() === 'connection') for (const token of rawHeaders[index + 1]!.split(',')) named.add(token.trim().toLowerCase());
  }
  const kept: string[] = [];
  for (let index = 0; index < rawHeaders.length; index += 2) {
    const name = rawHeaders[index]!.toLowerCase();
    const upgrade = keepUpgrade && (name === 'connection' || name === 'upgrade');
    if (!upgrade && (HOP_BY_HOP.has(name) || named.has(name))) continue;
    kept.push(rawHeaders[index]!, rawHeaders[index + 1]!);
  }
  return kept;
}

/** `host:port` of a CONNECT target or a URL's authority, the host canonical (names) or bare (addresses). */
function parseAuthority(authority: string, defaultPort: number): { host: string; port: number } | undefined {
  const match = /^(\[[0-9a-fA-F:.]+\]|[^:[\]]+)(?::(\d{1,5}))?$/.exec(authority);
  if (!match) return undefined;
  const port = match[2] === undefined ? defaultPort : Number(match[2]);
  if (!(port > 0 && port < 65536)) return undefined;
  const bare = match[1]!.replace(/^\[|\]$/g, '');
  if (net.isIP(bare)) return { host: bare, port };
  const host = canonicalHost(bare);
  return host === undefined ? undefined : { host, port };
}

/** The host of a Host header (its port dropped), canonical; undefined when it is not one. */
function hostHeaderOf(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  return parseAuthority(value.trim(), 443)?.host;
}

function refuse(socket: net.Socket, status: number, reason: string): void {
  if (socket.destroyed) return;
  const body = `berth egress proxy: ${reason}\n`;
  socket.end(
    `HTTP/1.1 ${status} ${http.STATUS_CODES[status]}\r\ncontent-type: text/plain\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
  );
}

function reply(response: http.ServerResponse, status: number, reason: string): void {
  if (response.headersSent) {
    response.destroy();
    return;
  }
  const body = `berth egress proxy: ${reason}\n`;
  response.writeHead(status, { 'content-type': 'text/plain', 'content-length': Buffer.byteLength(body), connection: 'close' });
  response.end(body);
}

/**
 * Response headers with every value this request carried put back as its placeholder: a header
 * that echoes the request's credentials (a redirect's URL, a debugging header) does not hand the
 * value to the sandbox. Bodies are not masked (docs/brokered-secrets.md, what it does not stop).
 */
function masked(rawHeaders: string[], used: ReadonlySet<string>, client: ProxyClient): string[] {
  if (used.size === 0) return rawHeaders;
  const values: Array<[string, string]> = [];
  for (const [placeholder, brokered] of client.placeholders) if (used.has(brokered.variable) && brokered.value) values.push([brokered.value, placeholder]);
  return rawHeaders.map((text, index) =>
    index % 2 === 0 ? text : values.reduce((masking, [value, placeholder]) => masking.replaceAll(value, placeholder), text),
  );
}

/** Small writes go at once (TLS records, request heads): no waiting for the peer's delayed ACK. */
const noDelay = (socket: net.Socket): void => void socket.setNoDelay(true);

/** What the proxy attaches to a sandbox's connection once it knows who it is and where it goes. */
interface Tunnel {
  readonly client: ProxyClient;
  readonly host: string;
  readonly port: number;
}
const TUNNEL = Symbol('berth-tunnel');
type TunnelSocket = net.Socket & { [TUNNEL]?: Tunnel };
const CLIENT = Symbol('berth-client');
type ClientSocket = net.Socket & { [CLIENT]?: ProxyClient };

/**
 * `socket` as a stream that gives `first` (already read from it) before the rest. A TLS socket
 * made over a net.Socket reads the socket's handle directly and would miss bytes put back with
 * `unshift`; over this stream it reads through JavaScript, back-pressure included.
 */
function carrying(socket: net.Socket, first: Buffer): Duplex {
  const stream = new Duplex({
    read: () => void socket.resume(),
    write: (chunk: Buffer, _encoding, callback) => void socket.write(chunk, callback),
    final: (callback) => {
      socket.end();
      callback();
    },
    destroy: (error, callback) => {
      socket.destroy();
      callback(error);
    },
  });
  stream.push(first);
  socket.on('data', (chunk: Buffer) => {
    if (!stream.push(chunk)) socket.pause();
  });
  socket.once('end', () => stream.push(null));
  socket.once('close', () => stream.destroy());
  socket.on('error', (error) => stream.destroy(error));
  return stream;
}

export function createEgressProxy(options: EgressProxyOptions): EgressProxy {
  const logger = options.logger;
  const resolve = options.lookup ?? (dns.lookup as unknown as LookupFunction);
  /** The lookup every upstream connection uses: only the addresses the policy allows for `port`. */
  const guardedLookup =
    (port: number): LookupFunction =>
    (hostname, lookupOptions, callback) => {
      resolve(hostname, { ...lookupOptions, all: true }, (error, found) => {
        if (error) return callback(error, '', 0);
        const allowed = (found as unknown as dns.LookupAddress[]).filter((entry) => options.allowsAddress(entry.address, port));
        if (allowed.length === 0) {
          const refused = Object.assign(new Error(`${hostname} resolves only to addresses sandboxes may not reach`), { code: 'EGRESS_REFUSED' });
          return callback(refused, '', 0);
        }
        if (lookupOptions.all) return (callback as unknown as (error: null, addresses: dns.LookupAddress[]) => void)(null, allowed);
        callback(null, allowed[0]!.address, allowed[0]!.family);
      });
    };
  const perClient = options.perClientConnections ?? 64;
  const total = options.totalConnections ?? 1024;
  const headersTimeoutMs = options.headersTimeoutMs ?? 15_000;
  const idleTimeoutMs = options.idleTimeoutMs ?? 120_000;
  const upstreamCa = options.upstreamCa?.length ? [...tls.rootCertificates, ...options.upstreamCa] : undefined;
  // Upstream connections are kept alive per sandbox, never shared between sandboxes (a server
  // that ties something to a connection must not see two users on one), and unbounded in number
  // there: a sandbox's concurrency is its connection limit, and a shared cap would queue one
  // user's requests behind another's.
  const agents = new Map<string, https.Agent>();
  const agentOf = (sandbox: string): https.Agent => {
    let agent = agents.get(sandbox);
    if (!agent) {
      agent = new https.Agent({ keepAlive: true, maxFreeSockets: 8, ...(upstreamCa ? { ca: upstreamCa } : {}) });
      agents.set(sandbox, agent);
    }
    return agent;
  };
  const open = new Map<string, number>();
  let openTotal = 0;
  // Refused attempts are logged once per sandbox, variable and host: a loop of them must not fill the log.
  const logged = new Set<string>();
  const logOnce = (key: string, message: string): void => {
    if (logged.has(key)) return;
    if (logged.size > 4096) logged.clear();
    logged.add(key);
    logger?.warn(message);
  };

  const serverOptions: http.ServerOptions = {
    headersTimeout: headersTimeoutMs,
    requestTimeout: 0,
    keepAliveTimeout: 5_000,
    connectionsCheckingInterval: 1_000,
  };
  const outer = http.createServer(serverOptions);
  const inner = http.createServer(serverOptions);
  // Neither server listens itself (the listeners and the TLS ends hand them their connections),
  // and Node starts checking `headersTimeout` only on 'listening': without this, a client that
  // trickles its headers (slowloris, inside a tunnel as well as outside) would be held for the
  // idle timeout instead.
  for (const server of [outer, inner]) server.emit('listening');

  // Every socket a sandbox holds has an error listener for its whole life: the HTTP server drops
  // its own once a socket is handed to 'connect' or 'upgrade', and a client that resets its
  // connection (after a refusal, say) must never be an uncaught error in the gateway's process.
  for (const server of [outer, inner]) server.prependListener('connection', (socket: net.Socket) => socket.on('error', () => socket.destroy()));

  outer.on('connection', (socket: ClientSocket) => {
    const client = options.clientOf(socket.remoteAddress ?? '', socket.localAddress ?? '');
    if (!client) {
      logOnce(
        `unknown ${socket.remoteAddress}`,
        `berth: egress proxy: a connection from ${socket.remoteAddress}, which is no sandbox of this installation, was dropped`,
      );
      socket.destroy();
      return;
    }
    const count = open.get(client.sandbox) ?? 0;
    if (count >= perClient || openTotal >= total) {
      logOnce(
        `full ${client.sandbox}`,
        `berth: egress proxy: ${client.sandbox} holds ${count} connections (at most ${perClient}); more are dropped until some close`,
      );
      socket.destroy();
      return;
    }
    open.set(client.sandbox, count + 1);
    openTotal += 1;
    socket[CLIENT] = client;
    socket.setTimeout(idleTimeoutMs, () => socket.destroy());
    socket.once('close', () => {
      openTotal -= 1;
      const left = (open.get(client.sandbox) ?? 1) - 1;
      if (left > 0) open.set(client.sandbox, left);
      else {
        // Its last connection closed: its kept-alive upstream connections stay a while for its
        // next one (a CLI tool makes one request per run), then go.
        open.delete(client.sandbox);
        setTimeout(() => {
          if (open.has(client.sandbox)) return;
          agents.get(client.sandbox)?.destroy();
          agents.delete(client.sandbox);
        }, UPSTREAM_LINGER_MS).unref();
      }
    });
  });

  // Plain HTTP through the proxy (absolute-form targets): passed on as it is, never with a
  // brokered value (it would cross the network in the clear).
  outer.on('request', (request: http.IncomingMessage, response: http.ServerResponse) => {
    const client = (request.socket as ClientSocket)[CLIENT]!;
    let url: URL;
    try {
      url = new URL(request.url ?? '');
    } catch {
      reply(response, 400, 'send requests through this proxy with an absolute http:// URL, or use CONNECT for https');
      return;
    }
    const target = url.protocol === 'http:' ? parseAuthority(url.host, 80) : undefined;
    if (!target) {
      reply(response, 400, `${url.protocol} is not proxied in the clear; use https through CONNECT`);
      return;
    }
    if (net.isIP(target.host) !== 0 && !options.allowsAddress(target.host, target.port)) {
      reply(response, 403, `${target.host}:${target.port} is not reachable from sandboxes`);
      return;
    }
    if (client.allow && !hostMatches(target.host, client.allow)) {
      logOnce(
        `deny ${client.sandbox} ${target.host}`,
        `berth: egress proxy: ${client.sandbox} asked for ${target.host}, which is not on its allow list; refused`,
      );
      reply(response, 403, `${target.host} is not on this sandbox's allow list`);
      return;
    }
    // Substituted for no host: every placeholder of the sandbox's found here is only reported.
    const { rawHeaders, refused } = substituteRequest({ target: request.url ?? '', rawHeaders: request.rawHeaders }, '', client.placeholders);
    for (const variable of refused)
      logOnce(
        `plain ${client.sandbox} ${variable}`,
        `berth: egress proxy: ${client.sandbox} sent the placeholder of ${variable} over plain http; it went unchanged`,
      );
    const upstream = http.request(
      {
        host: target.host,
        port: target.port,
        method: request.method,
        path: `${url.pathname}${url.search}`,
        headers: withoutHopByHop(rawHeaders),
        lookup: guardedLookup(target.port),
      },
      (answer) => {
        response.writeHead(answer.statusCode ?? 502, answer.statusMessage, withoutHopByHop(answer.rawHeaders));
        answer.pipe(response);
      },
    );
    upstream.on('socket', noDelay);
    upstream.on('error', (error) => reply(response, 502, `could not reach ${target.host}: ${error.message}`));
    response.on('close', () => upstream.destroy());
    request.pipe(upstream);
  });

  outer.on('connect', (request: http.IncomingMessage, socket: net.Socket, head: Buffer) => {
    const client = (socket as ClientSocket)[CLIENT]!;
    const target = parseAuthority(request.url ?? '', 443);
    if (!target) {
      refuse(socket, 400, `CONNECT ${request.url} names no host and port`);
      return;
    }
    const address = net.isIP(target.host) !== 0;
    if (address && !options.allowsAddress(target.host, target.port)) {
      logOnce(
        `address ${client.sandbox} ${target.host}`,
        `berth: egress proxy: ${client.sandbox} asked for ${target.host}:${target.port}, which sandboxes may not reach; refused`,
      );
      refuse(socket, 403, `${target.host}:${target.port} is not reachable from sandboxes`);
      return;
    }
    if (client.allow && (address || !hostMatches(target.host, client.allow))) {
      logOnce(
        `deny ${client.sandbox} ${target.host}`,
        `berth: egress proxy: ${client.sandbox} asked for ${target.host}, which is not on its allow list; refused`,
      );
      refuse(socket, 403, `${target.host} is not on this sandbox's allow list${address ? ' (addresses never are: name the host)' : ''}`);
      return;
    }
    socket.write('HTTP/1.1 200 Connection Established\r\n\r\n');
    const begin = (first: Buffer): void => {
      // TLS to a named host is opened here; anything else (ssh, an address) is passed through as it is.
      if (first[0] === 0x16 && !address) terminateTls(socket, first, { client, host: target.host, port: target.port });
      else passThrough(socket, first, target.host, target.port);
    };
    if (head.length > 0) begin(head);
    else socket.once('data', begin);
  });

  const passThrough = (socket: net.Socket, first: Buffer, host: string, port: number): void => {
    socket.pause();
    const upstream = net.connect({ host, port, lookup: guardedLookup(port), noDelay: true });
    upstream.setTimeout(idleTimeoutMs, () => upstream.destroy());
    upstream.once('connect', () => {
      upstream.write(first);
      socket.pipe(upstream);
      upstream.pipe(socket);
      socket.resume();
    });
    upstream.on('error', () => socket.destroy());
    socket.on('error', () => upstream.destroy());
    socket.once('close', () => upstream.destroy());
    upstream.once('close', () => socket.destroy());
  };

  // A host's TLS context, made once for each certificate the CA keeps (parsing the key and
  // certificate on every connection would cost each new connection that much more).
  const contexts = new WeakMap<object, tls.SecureContext>();
  const contextFor = (host: string, ca: CertificateAuthority): tls.SecureContext => {
    const leaf = ca.leafFor(host);
    let context = contexts.get(leaf);
    if (!context) {
      context = tls.createSecureContext({ cert: leaf.cert, key: leaf.key });
      contexts.set(leaf, context);
    }
    return context;
  };

  const terminateTls = (socket: net.Socket, first: Buffer, tunnel: Tunnel): void => {
    let mismatch: string | undefined;
    const secure = new tls.TLSSocket(carrying(socket, first), {
      isServer: true,
      ALPNProtocols: ['http/1.1'],
      SNICallback: (servername, callback) => {
        const named = canonicalHost(servername);
        if (named !== tunnel.host) {
          mismatch = servername;
          callback(new Error('SNI does not match CONNECT'));
          return;
        }
        callback(null, contextFor(tunnel.host, tunnel.client.ca ?? options.ca));
      },
      // Without SNI, the host CONNECT named (the Host header is still checked).
      secureContext: contextFor(tunnel.host, tunnel.client.ca ?? options.ca),
    }) as TunnelSocket;
    const handshake = setTimeout(() => secure.destroy(), headersTimeoutMs);
    secure.once('secure', () => clearTimeout(handshake));
    secure.on('error', () => {
      clearTimeout(handshake);
      if (mismatch !== undefined) {
        logOnce(
          `sni ${tunnel.client.sandbox} ${tunnel.host} ${mismatch}`,
          `berth: egress proxy: ${tunnel.client.sandbox} connected for ${tunnel.host} but named ${mismatch} in TLS; refused`,
        );
      }
      socket.destroy();
    });
    secure[TUNNEL] = tunnel;
    inner.emit('connection', secure);
  };

  /** The request's tunnel, when its Host header names the tunnel's host; otherwise refused with a reason. */
  const tunnelOf = (request: http.IncomingMessage): Tunnel | string => {
    const tunnel = (request.socket as TunnelSocket)[TUNNEL];
    if (!tunnel) return 'this connection did not come through CONNECT';
    const named = hostHeaderOf(request.headers.host);
    if (named !== tunnel.host) {
      logOnce(
        `host ${tunnel.client.sandbox} ${tunnel.host} ${named}`,
        `berth: egress proxy: ${tunnel.client.sandbox} connected for ${tunnel.host} but sent Host: ${request.headers.host ?? '(none)'}; refused`,
      );
      return `the Host header (${request.headers.host ?? 'none'}) does not name ${tunnel.host}, the host this connection was opened for`;
    }
    // A target in absolute form must name the same host too, and goes on in origin form: an
    // approved host that is itself a proxy must not carry a value on to somewhere else.
    const target = request.url ?? '/';
    if (!target.startsWith('/') && target !== '*') {
      let named: string | undefined;
      try {
        const url = new URL(target);
        named = url.protocol === 'https:' ? parseAuthority(url.host, 443)?.host : undefined;
        request.url = `${url.pathname}${url.search}`;
      } catch {
        named = undefined;
      }
      if (named !== tunnel.host) return `the request's target (${target.slice(0, 200)}) does not name ${tunnel.host}, the host this connection was opened for`;
    }
    return tunnel;
  };

  const substituted = (request: http.IncomingMessage, tunnel: Tunnel) => {
    const result = substituteRequest({ target: request.url ?? '/', rawHeaders: request.rawHeaders }, tunnel.host, tunnel.client.placeholders);
    for (const variable of result.refused) {
      logOnce(
        `refused ${tunnel.client.sandbox} ${variable} ${tunnel.host}`,
        `berth: egress proxy: ${tunnel.client.sandbox} sent the placeholder of ${variable} to ${tunnel.host}, which it is not approved for; it went unchanged`,
      );
    }
    return result;
  };

  inner.on('request', (request: http.IncomingMessage, response: http.ServerResponse) => {
    const tunnel = tunnelOf(request);
    if (typeof tunnel === 'string') {
      reply(response, 421, tunnel);
      return;
    }
    const { target, rawHeaders, substituted: used } = substituted(request, tunnel);
    const upstream = https.request(
      {
        host: tunnel.host,
        port: tunnel.port,
        servername: tunnel.host,
        method: request.method,
        path: target,
        headers: withoutHopByHop(rawHeaders),
        agent: agentOf(tunnel.client.sandbox),
        lookup: guardedLookup(tunnel.port),
      },
      (answer) => {
        response.writeHead(answer.statusCode ?? 502, answer.statusMessage, masked(withoutHopByHop(answer.rawHeaders), used, tunnel.client));
        answer.pipe(response);
        answer.on('error', () => response.destroy());
      },
    );
    upstream.on('socket', noDelay);
    upstream.on('error', (error) => {
      logger?.warn(`berth: egress proxy: ${tunnel.client.sandbox}'s request to ${tunnel.host} failed: ${error.message}`);
      reply(response, 502, `could not reach ${tunnel.host}: ${error.message}`);
    });
    response.on('close', () => upstream.destroy());
    request.pipe(upstream);
  });

  // WebSocket and other upgrades: the request's head is substituted and sent on over verified
  // TLS; then bytes pass both ways as they are.
  inner.on('upgrade', (request: http.IncomingMessage, socket: net.Socket, head: Buffer) => {
    const tunnel = tunnelOf(request);
    if (typeof tunnel === 'string') {
      refuse(socket, 421, tunnel);
      return;
    }
    const { target, rawHeaders } = substituted(request, tunnel);
    const upstream = tls.connect({
      host: tunnel.host,
      port: tunnel.port,
      servername: tunnel.host,
      ALPNProtocols: ['http/1.1'],
      ...(upstreamCa ? { ca: upstreamCa } : {}),
      lookup: guardedLookup(tunnel.port),
    });
    upstream.setNoDelay(true);
    upstream.setTimeout(idleTimeoutMs, () => upstream.destroy());
    upstream.once('secureConnect', () => {
      const headers = withoutHopByHop(rawHeaders, true);
      let text = `${request.method} ${target} HTTP/1.1\r\n`;
      for (let index = 0; index < headers.length; index += 2) text += `${headers[index]}: ${headers[index + 1]}\r\n`;
      upstream.write(`${text}\r\n`);
      if (head.length > 0) upstream.write(head);
      socket.pipe(upstream);
      upstream.pipe(socket);
    });
    upstream.on('error', (error) => {
      logger?.warn(`berth: egress proxy: ${tunnel.client.sandbox}'s upgrade to ${tunnel.host} failed: ${error.message}`);
      refuse(socket, 502, `could not reach ${tunnel.host}: ${error.message}`);
    });
    socket.on('error', () => upstream.destroy());
    socket.once('close', () => upstream.destroy());
    upstream.once('close', () => socket.destroy());
  });

  for (const server of [outer, inner]) server.on('clientError', (_error, socket: net.Socket) => socket.destroy());

  // One listener per address, each handing its connections to the one server: the proxy is
  // reachable only on the addresses it is told (each sandbox network's gateway), never on all.
  const listeners = new Map<string, Promise<net.Server>>();
  const listenOn = (port: number, host: string): Promise<net.Server> =>
    new Promise((resolve, reject) => {
      // No Nagle, as Node's HTTP server has it: the small writes of CONNECT's answer and of the
      // TLS handshake must not wait for the sandbox's delayed ACKs (measured in a sandbox: a new
      // connection took 81 ms with it, against 7 ms straight to the host).
      const listener = net.createServer({ noDelay: true }, (socket) => outer.emit('connection', socket));
      listener.once('error', reject);
      listener.listen(port, host, () => {
        listener.off('error', reject);
        listener.on('error', () => undefined);
        resolve(listener);
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
      await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    },
    listening: () => [...listeners.keys()],
    close: async () => {
      for (const agent of agents.values()) agent.destroy();
      agents.clear();
      outer.closeAllConnections();
      inner.closeAllConnections();
      const servers = await Promise.all([...listeners.values()].map((listener) => listener.catch(() => undefined)));
      listeners.clear();
      // Ends the servers' header checks (they never listened themselves: the callback says so).
      for (const server of [outer, inner]) server.close(() => undefined);
      await Promise.all(servers.map((server) => new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()))));
    },
    connections: () => new Map(open),
  };
}
