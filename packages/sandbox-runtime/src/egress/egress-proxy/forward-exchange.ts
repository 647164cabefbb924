import http from 'node:http';
import type { Duplex } from 'node:stream';
import { type ByteReader, ReadError } from './byte-reader.js';
import { formatHead, type HeaderField, HeadError, MAX_HEAD_BYTES, parseResponseHead, type ResponseHead, tokensOf, valuesOf } from './http-head.js';
import { bodyPieces, type Framing, frameEnd, framePiece, responseFraming, writeTo } from './message-framing.js';
import { BodyMasker, type HeadForm, maskHeadValue } from './secret-masker.js';
import type { UpstreamLease } from './upstream-pool.js';

/** The sandbox's side of an exchange: its connection, read by the host. */
export interface ClientSide {
  readonly socket: Duplex;
  readonly reader: ByteReader;
}

/** One request, as the proxy will send it on. */
export interface OutgoingRequest {
  readonly method: string;
  /** The sandbox's HTTP version: a 1.0 client gets close-delimited bodies and no keep-alive. */
  readonly clientVersion: '1.0' | '1.1';
  /** Whether the sandbox asked to close after this exchange. */
  readonly clientCloses: boolean;
  /** The request's body framing, as the sandbox sent it and the proxy sends it on (its head says so: {@link head}). */
  readonly framing: Framing;
  /** The head the proxy wrote (its own framing headers in it). */
  readonly head: Buffer;
  /** Whether the sandbox waits for 100 Continue before its body. */
  readonly expectContinue: boolean;
  /** A WebSocket-style upgrade: after a 101 the connection becomes a tunnel. */
  readonly upgrade: boolean;
  /** What masking puts back in the response head, and what it hides in bodies. */
  readonly forms: readonly HeadForm[];
  readonly secrets: readonly string[];
  /** Masked bodies were asked for without content coding: one that comes coded is refused. */
  readonly identityOnly: boolean;
}

/** How an exchange ended, for the session: whether the sandbox's connection goes on. */
export interface ExchangeOutcome {
  readonly keepClient: boolean;
}

/** Response headers that belong to one hop, or whose framing the proxy writes itself. */
const RESPONSE_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'te', 'trailer', 'transfer-encoding', 'content-length', 'upgrade']);

/** A plain answer of the proxy's own to the sandbox (its text never holds a value). */
export function answer(socket: Duplex, status: number, reason: string, close = true): Promise<void> {
  const body = `berth egress proxy: ${reason.replace(/[^\x20-\x7e]/g, '?')}\n`;
  const head =
    `HTTP/1.1 ${status} ${http.STATUS_CODES[status] ?? 'Error'}\r\ncontent-type: text/plain\r\ncontent-length: ` +
    `${Buffer.byteLength(body)}\r\n${close ? 'connection: close\r\n' : ''}\r\n`;
  return writeTo(socket, head + body).catch(() => undefined);
}

/** The response head the sandbox gets: hop-by-hop fields gone, every value masked, the proxy's own framing. */
function headForClient(head: ResponseHead, request: OutgoingRequest, clientFraming: Framing, keepClient: boolean, upgraded: boolean): Buffer {
  const named = new Set(tokensOf(head.headers, 'connection'));
  const fields: HeaderField[] = [];
  for (const [name, value] of head.headers) {
    const lower = name.toLowerCase();
    if (upgraded && (lower === 'connection' || lower === 'upgrade')) {
      fields.push([name, maskHeadValue(value, request.forms)]);
      continue;
    }
    if (RESPONSE_HOP.has(lower) || named.has(lower)) continue;
    fields.push([name, maskHeadValue(value, request.forms)]);
  }
  if (clientFraming.kind === 'length') fields.push(['content-length', String(clientFraming.length)]);
  else if (clientFraming.kind === 'chunked') fields.push(['transfer-encoding', 'chunked']);
  else if (clientFraming.kind === 'none' && head.status !== 204 && head.status >= 200) {
    // HEAD and 304 say the size of what a GET would get; kept when it is a plain number.
    const length = valuesOf(head.headers, 'content-length');
    if (length.length === 1 && /^\d{1,15}$/.test(length[0]!)) fields.push(['content-length', length[0]!]);
  }
  if (!keepClient && !upgraded) fields.push(['connection', 'close']);
  const reason = maskHeadValue(head.reason, request.forms).replace(/[^\t \x21-\x7e]/g, '');
  return formatHead(`HTTP/1.1 ${head.status} ${reason}`, fields);
}

/** Reads the response head, interim (1xx) answers but 101 read and dropped. */
async function responseHead(upstream: ByteReader, idleMs: number): Promise<ResponseHead> {
  for (;;) {
    const bytes = await upstream.readDelimited('\r\n\r\n', MAX_HEAD_BYTES, { firstByteMs: idleMs, wholeMs: idleMs, what: 'the response head' });
    if (!bytes) throw new ReadError('truncated', 'the upstream closed without answering');
    const head = parseResponseHead(bytes);
    if (head.status >= 200 || head.status === 101) return head;
  }
}

/**
 * One request and its response between a sandbox and an upstream: the head the proxy wrote and
 * the body in the framing it chose go up; the response is parsed, masked and framed again on the
 * way down. The sandbox's next request is not read before this one is done (one in flight per
 * connection). Resolves with whether the sandbox's connection goes on; the lease is given back
 * (kept alive only when the upstream's answer ended cleanly and nothing is left over).
 */
export async function forwardExchange(client: ClientSide, request: OutgoingRequest, lease: UpstreamLease, idleMs: number): Promise<ExchangeOutcome> {
  const upstream = lease.socket;
  let requestSent = false;
  const sending = (async () => {
    await writeTo(upstream, request.head);
    if (request.expectContinue) await writeTo(client.socket, 'HTTP/1.1 100 Continue\r\n\r\n');
    for await (const piece of bodyPieces(client.reader, request.framing, 'the request body', idleMs))
      await writeTo(upstream, framePiece(request.framing, piece));
    const end = frameEnd(request.framing);
    if (end) await writeTo(upstream, end);
    requestSent = true;
  })();
  // A request body that breaks off leaves the upstream waiting for the rest: that connection goes.
  const sendFailed = sending.then(
    () => undefined,
    (error: Error) => {
      upstream.destroy();
      return error;
    },
  );

  let head: ResponseHead;
  let framing: Framing;
  try {
    head = await responseHead(lease.reader, idleMs);
    framing = request.upgrade && head.status === 101 ? { kind: 'none' } : responseFraming(head, request.method);
    if (head.status === 101 && !request.upgrade) throw new HeadError('the upstream switched protocols without being asked');
    const coding = tokensOf(head.headers, 'content-encoding').filter((token) => token !== 'identity');
    if (request.identityOnly && framing.kind !== 'none' && coding.length > 0) {
      throw new HeadError(
        `the upstream answered with Content-Encoding ${coding.join(', ')} although asked for identity; a coded body cannot be checked for brokered values`,
      );
    }
  } catch (error) {
    lease.release(false);
    const failed = await Promise.race([sendFailed, Promise.resolve(undefined)]);
    if (failed || client.socket.destroyed) {
      client.socket.destroy();
      return { keepClient: false };
    }
    await answer(client.socket, 502, `the upstream's answer was refused: ${(error as Error).message}`);
    client.socket.end();
    return { keepClient: false };
  }

  if (request.upgrade && head.status === 101) {
    await writeTo(client.socket, headForClient(head, request, { kind: 'none' }, false, true));
    await splice(client, lease, request.secrets);
    return { keepClient: false };
  }

  const clientFraming: Framing = framing.kind === 'close' ? (request.clientVersion === '1.1' ? { kind: 'chunked' } : framing) : framing;
  const keepClient = request.clientVersion === '1.1' && !request.clientCloses && clientFraming.kind !== 'close';
  const masker = new BodyMasker(request.identityOnly ? request.secrets : []);
  try {
    await writeTo(client.socket, headForClient(head, request, clientFraming, keepClient, false));
    for await (const piece of bodyPieces(lease.reader, framing, 'the response body', idleMs)) {
      const safe = masker.push(piece);
      if (safe.length > 0) await writeTo(client.socket, framePiece(clientFraming, safe));
    }
    const tail = masker.end();
    if (tail.length > 0) await writeTo(client.socket, framePiece(clientFraming, tail));
    const end = frameEnd(clientFraming);
    if (end) await writeTo(client.socket, end);
  } catch {
    // Cut off mid-body: what was held back (perhaps the start of a value) never goes, and the
    // sandbox sees the body end short rather than whole.
    lease.release(false);
    client.socket.destroy();
    return { keepClient: false };
  }
  if (!requestSent) {
    // Answered before the request's body was all sent (a 413, say): neither side can go on (the
    // rest of the body is never read: the sandbox's connection ends here).
    lease.release(false);
    client.socket.end();
    return { keepClient: false };
  }
  const reusable = framing.kind !== 'close' && head.version === '1.1' && !tokensOf(head.headers, 'connection').includes('close') && lease.reader.buffered === 0;
  lease.release(reusable);
  if (!keepClient) client.socket.end();
  return { keepClient };
}

/** After a 101: bytes both ways, the upstream's masked as they stream, until either side ends. */
async function splice(client: ClientSide, lease: UpstreamLease, secrets: readonly string[]): Promise<void> {
  const masker = new BodyMasker(secrets);
  const fromClient = client.reader.detach();
  const fromUpstream = lease.reader.detach();
  const upstream = lease.socket;
  const down = client.socket;
  await new Promise<void>((resolve) => {
    let open = 2;
    let upstreamEnded = false;
    const closed = (): void => {
      open -= 1;
      if (open === 0) {
        lease.release(false);
        resolve();
      }
    };
    if (fromClient.length > 0) upstream.write(fromClient);
    const forward = (piece: Buffer): void => {
      const safe = masker.push(piece);
      if (safe.length > 0 && !down.write(safe)) upstream.pause();
    };
    forward(fromUpstream);
    upstream.on('data', forward);
    down.on('drain', () => upstream.resume());
    down.on('data', (piece: Buffer) => {
      if (!upstream.write(piece)) down.pause();
    });
    upstream.on('drain', () => down.resume());
    upstream.once('end', () => {
      upstreamEnded = true;
      down.end(masker.end());
    });
    down.once('end', () => upstream.end());
    // An upstream gone without ending cleanly: what the masker held back is dropped with the connection.
    upstream.once('close', () => {
      if (!upstreamEnded) down.destroy();
      closed();
    });
    down.once('close', () => {
      upstream.destroy();
      closed();
    });
    upstream.resume();
    down.resume();
  });
}
