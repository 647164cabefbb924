import type { Duplex } from 'node:stream';
import { type ByteReader, ReadError } from './byte-reader.js';
import { answer, forwardExchange, type OutgoingRequest } from './forward-exchange.js';
import { hostMatches } from './host-patterns.js';
import { formatHead, type HeaderField, HeadError, MAX_HEAD_BYTES, parseRequestHead, type RequestHead, tokensOf, valuesOf } from './http-head.js';
import type { MaskForms } from './mask-forms.js';
import { requestFraming } from './message-framing.js';
import { parseAuthority } from './parse-authority.js';
import { substituteRequest, type PlaceholderTable } from './placeholders.js';
import type { RefusalLog } from './refusal-log.js';
import type { UpstreamLease } from './upstream-pool.js';

/** A request the proxy sent on, as the audit hook hears of it (never with a value). */
export interface ForwardedRequest {
  readonly sandbox: string;
  readonly method: string;
  readonly host: string;
  readonly port: number;
  /** The target as sent, placeholders where values went. */
  readonly target: string;
}

/** What a session of requests needs of the proxy. */
export interface SessionContext {
  readonly sandbox: string;
  readonly placeholders: PlaceholderTable;
  readonly masks: MaskForms;
  readonly refusals: RefusalLog;
  /** An upstream connection of this sandbox to `host`:`port` (TLS verified when `secure`). */
  lease(host: string, port: number, secure: boolean): Promise<UpstreamLease>;
  /** Why a plain request to `host`:`port` is refused (address policy, allow list), or undefined. */
  refusePlain(host: string, port: number): string | undefined;
  readonly headersTimeoutMs: number;
  readonly idleTimeoutMs: number;
  readonly onForward?: ((request: ForwardedRequest) => void) | undefined;
}

/** Request headers of one hop, or whose framing and routing the proxy writes itself. */
const REQUEST_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'content-length',
  'upgrade',
  'expect',
  'host',
]);
/** Headers left out of requests to hosts whose answers are masked: a partial or compressed answer hides a value from masking. */
const UNMASKABLE = new Set(['accept-encoding', 'range', 'if-range', 'sec-websocket-extensions']);

/** Where a request goes: its host, port and origin-form target, or why it is refused (and with which status). */
function routeOf(
  head: RequestHead,
  tunnel: { host: string; port: number } | undefined,
): { host: string; port: number; target: string } | { status: number; why: string } {
  const hosts = valuesOf(head.headers, 'host');
  if (hosts.length > 1) return { status: 400, why: 'the request has more than one Host header' };
  let host: string;
  let port: number;
  let target = head.target;
  if (target.startsWith('/') || (target === '*' && head.method === 'OPTIONS')) {
    if (!tunnel) return { status: 400, why: 'send requests through this proxy with an absolute http:// URL, or use CONNECT for https' };
    ({ host, port } = tunnel);
  } else {
    let url: URL;
    try {
      url = new URL(target);
    } catch {
      return { status: 400, why: 'the request target is not a URL' };
    }
    const scheme = tunnel ? 'https:' : 'http:';
    const authority = url.protocol === scheme && url.username === '' && url.password === '' ? parseAuthority(url.host, tunnel ? 443 : 80) : undefined;
    if (!authority)
      return {
        status: 400,
        why: tunnel ? 'an absolute target in a tunnel must be https:// to its host' : `${url.protocol} is not proxied in the clear; use https through CONNECT`,
      };
    ({ host, port } = authority);
    target = `${url.pathname}${url.search}`;
    // An approved host that is itself a proxy must not carry a value on elsewhere: origin form, same host.
    if (tunnel && (host !== tunnel.host || port !== tunnel.port))
      return { status: 421, why: `the request's target does not name ${tunnel.host}, the host this connection was opened for` };
  }
  const named = hosts[0] === undefined ? undefined : parseAuthority(hosts[0], port);
  if (hosts.length === 0 && head.version === '1.1') return { status: 400, why: 'an HTTP/1.1 request needs a Host header' };
  if (hosts.length === 1 && (!named || named.host !== host || named.port !== port)) {
    return { status: 421, why: `the Host header does not name ${host}${tunnel ? ', the host this connection was opened for' : ", the request's target"}` };
  }
  return { host, port, target };
}

/**
 * Serves the HTTP requests of one sandbox connection, one at a time: through a TLS tunnel the
 * proxy ended (`tunnel`: the host and port CONNECT named, which every request must name too), or
 * plain requests with absolute targets (`tunnel` undefined). The next request is not read before
 * the previous one's answer is written, so pipelined requests wait in the sandbox's own buffers.
 * `first`: a head already read (the plain connection's first request).
 */
export async function serveMessages(
  context: SessionContext,
  client: { socket: Duplex; reader: ByteReader },
  tunnel: { host: string; port: number } | undefined,
  first?: Buffer,
): Promise<void> {
  const refuse = async (status: number, why: string, log: boolean): Promise<void> => {
    if (log) context.refusals.warn(`request ${context.sandbox} ${why}`, `berth: egress proxy: a request of ${context.sandbox} was refused (${status}): ${why}`);
    await answer(client.socket, status, why);
    client.socket.end();
  };
  for (let pending = first; ; pending = undefined) {
    let bytes: Buffer | undefined;
    try {
      bytes =
        pending ??
        (await client.reader.readDelimited('\r\n\r\n', MAX_HEAD_BYTES, {
          firstByteMs: context.idleTimeoutMs,
          wholeMs: context.headersTimeoutMs,
          what: 'the request head',
        }));
    } catch (error) {
      if (error instanceof ReadError && error.reason === 'too-large') await refuse(431, `the request head is longer than ${MAX_HEAD_BYTES} bytes`, true);
      else client.socket.destroy();
      return;
    }
    if (!bytes) {
      client.socket.end();
      return;
    }
    let head: RequestHead;
    let framing: ReturnType<typeof requestFraming>;
    try {
      head = parseRequestHead(bytes);
      if (head.method === 'CONNECT') throw new HeadError(tunnel ? 'CONNECT inside a tunnel is not served' : 'CONNECT after a request is not served');
      framing = requestFraming(head);
    } catch (error) {
      // A request whose framing the proxy cannot keep is never sent on: what follows it is unknowable.
      await refuse(400, (error as Error).message, true);
      return;
    }
    const route = routeOf(head, tunnel);
    if ('status' in route) {
      await refuse(route.status, route.why, true);
      return;
    }
    if (!tunnel) {
      const why = context.refusePlain(route.host, route.port);
      if (why) {
        await refuse(403, why, false);
        return;
      }
    }
    const request = outgoing(context, head, framing, route, tunnel !== undefined);
    if (typeof request === 'string') {
      await refuse(400, request, true);
      return;
    }
    let lease: UpstreamLease;
    try {
      lease = await context.lease(route.host, route.port, tunnel !== undefined);
    } catch (error) {
      await refuse(502, `could not reach ${route.host}: ${(error as Error).message}`, false);
      return;
    }
    if (client.socket.destroyed) {
      lease.release(true);
      return;
    }
    context.onForward?.({ sandbox: context.sandbox, method: head.method, host: route.host, port: route.port, target: request.target });
    const outcome = await forwardExchange(client, request, lease, context.idleTimeoutMs);
    if (!outcome.keepClient) return;
  }
}

/** The request as the proxy sends it on, with values put in only where they go; a string says why it cannot be. */
function outgoing(
  context: SessionContext,
  head: RequestHead,
  framing: OutgoingRequest['framing'],
  route: { host: string; port: number; target: string },
  secure: boolean,
): (OutgoingRequest & { target: string }) | string {
  const connection = new Set(tokensOf(head.headers, 'connection'));
  const upgrade = connection.has('upgrade') && valuesOf(head.headers, 'upgrade').length === 1;
  if (upgrade && framing.kind !== 'none') return 'an upgrade request with a body is not served';
  // Connection names what one hop drops; it can drop nothing the proxy writes itself (framing, Host).
  const flat: string[] = [];
  for (const [name, value] of head.headers) {
    const lower = name.toLowerCase();
    if (REQUEST_HOP.has(lower) || connection.has(lower)) continue;
    if (!secure && lower === 'proxy-authorization') continue;
    flat.push(name, value);
  }
  const table = secure ? context.placeholders : new Map();
  const substitution = substituteRequest({ target: route.target, rawHeaders: flat }, route.host, table, route.port);
  for (const variable of substitution.refused) {
    context.refusals.warn(
      `placeholder ${context.sandbox} ${variable} ${route.host}`,
      `berth: egress proxy: ${context.sandbox} sent the placeholder of ${variable} to ${route.host}:${route.port} where its value does not go ` +
        `(another host or port, plain http, or not a credential header); it went unchanged`,
    );
  }
  for (const name of substitution.dropped) {
    context.refusals.warn(
      `dropped ${context.sandbox} ${route.host} ${name}`,
      `berth: egress proxy: ${context.sandbox} sent its own ${name.startsWith('?') ? `query parameter ${name.slice(1)}` : `${name} header`} to ` +
        `${route.host}, where a brokered value goes; dropped`,
    );
  }
  context.masks.remember(substitution.forms.filter((form) => form.replacement !== form.secret));
  // A host a value may have gone to (on any port): what it answers is masked.
  const masked = [...context.placeholders.values()].some((brokered) => hostMatches(route.host, brokered.hosts));
  const fields: HeaderField[] = [['Host', route.port === (secure ? 443 : 80) ? route.host : `${route.host}:${route.port}`]];
  for (let index = 0; index < substitution.rawHeaders.length; index += 2) {
    const name = substitution.rawHeaders[index]!;
    if (masked && UNMASKABLE.has(name.toLowerCase())) continue;
    fields.push([name, substitution.rawHeaders[index + 1]!]);
  }
  if (masked) fields.push(['Accept-Encoding', 'identity']);
  if (upgrade) fields.push(['Connection', 'upgrade'], ['Upgrade', valuesOf(head.headers, 'upgrade')[0]!]);
  if (framing.kind === 'length') fields.push(['Content-Length', String(framing.length)]);
  else if (framing.kind === 'chunked') fields.push(['Transfer-Encoding', 'chunked']);
  // Every request says how long its body is, none included (a WebSocket handshake aside).
  else if (!upgrade) fields.push(['Content-Length', '0']);
  const forms = context.masks.formsFor(context.placeholders);
  return {
    method: head.method,
    target: route.target,
    clientVersion: head.version,
    clientCloses: connection.has('close') || (head.version === '1.0' && !connection.has('keep-alive')),
    framing,
    head: formatHead(`${head.method} ${substitution.target} HTTP/1.1`, fields),
    expectContinue: tokensOf(head.headers, 'expect').includes('100-continue') && framing.kind !== 'none',
    upgrade,
    forms,
    secrets: masked ? forms.map((form) => form.secret) : [],
    identityOnly: masked,
  };
}
