import type { Writable } from 'node:stream';
import { type ByteReader, ReadError } from './byte-reader.js';
import { HeadError, type RequestHead, type ResponseHead, tokensOf, valuesOf } from './http-head.js';

/**
 * How a message's body is delimited (RFC 9112, 6): the proxy decides it from the head it parsed,
 * reads the body by it, and writes the body on with framing it chose itself — never by what a
 * `Connection` header asks to drop, never unframed.
 */
export type Framing =
  | { readonly kind: 'none' }
  | { readonly kind: 'length'; readonly length: number }
  | { readonly kind: 'chunked' }
  | { readonly kind: 'close' };

/** The longest chunk-size line, and the most trailer bytes, read from either side. */
const MAX_CHUNK_LINE = 4096;
const MAX_TRAILER_BYTES = 16 * 1024;
/** Bodies are read and written in pieces of at most this many bytes. */
const PIECE = 64 * 1024;

const NONE: Framing = { kind: 'none' };

/** Content-Length's one value; several fields, a list or anything but digits are refused. */
function contentLength(values: readonly string[]): number {
  if (values.length > 1) throw new HeadError('the head has more than one Content-Length');
  if (!/^\d{1,15}$/.test(values[0]!)) throw new HeadError('Content-Length is not a number');
  return Number(values[0]);
}

/** Transfer-Encoding's codings: only `chunked`, alone, is framing the proxy keeps. */
function chunkedOnly(head: RequestHead | ResponseHead, who: string): void {
  const codings = tokensOf(head.headers, 'transfer-encoding');
  if (codings.length !== 1 || codings[0] !== 'chunked') {
    throw new HeadError(`${who} has a Transfer-Encoding other than "chunked" alone, whose framing the proxy cannot keep`);
  }
  if (head.version === '1.0') throw new HeadError(`${who} is HTTP/1.0 with a Transfer-Encoding`);
}

/** A request's body framing. Throws {@link HeadError} for one that could be read two ways. */
export function requestFraming(head: RequestHead): Framing {
  const lengths = valuesOf(head.headers, 'content-length');
  if (valuesOf(head.headers, 'transfer-encoding').length > 0) {
    if (lengths.length > 0) throw new HeadError('the request has both Transfer-Encoding and Content-Length');
    chunkedOnly(head, 'the request');
    return { kind: 'chunked' };
  }
  if (lengths.length === 0) return NONE;
  const length = contentLength(lengths);
  return length === 0 ? NONE : { kind: 'length', length };
}

/** A response's body framing, for a request of `method`. Throws {@link HeadError}. */
export function responseFraming(head: ResponseHead, method: string): Framing {
  if (method === 'HEAD' || head.status < 200 || head.status === 204 || head.status === 304) return NONE;
  const lengths = valuesOf(head.headers, 'content-length');
  if (valuesOf(head.headers, 'transfer-encoding').length > 0) {
    if (lengths.length > 0) throw new HeadError('the response has both Transfer-Encoding and Content-Length');
    chunkedOnly(head, 'the response');
    return { kind: 'chunked' };
  }
  if (lengths.length > 0) return { kind: 'length', length: contentLength(lengths) };
  return { kind: 'close' };
}

/**
 * The pieces of a body read from `reader` by `framing`, decoded (chunk sizes and trailers
 * checked and dropped). Throws a {@link ReadError} or {@link HeadError} when the body ends early
 * or is malformed: the caller then stops, and never lets a half-read body pass as whole.
 */
export async function* bodyPieces(reader: ByteReader, framing: Framing, what: string, idleMs: number): AsyncGenerator<Buffer> {
  const timing = { firstByteMs: idleMs, wholeMs: idleMs, what: `a chunk size line of ${what}` };
  if (framing.kind === 'length') {
    let left = framing.length;
    while (left > 0) {
      const piece = await reader.read(Math.min(left, PIECE), idleMs, what);
      if (!piece) throw new ReadError('truncated', `${what} ended ${left} bytes before its Content-Length`);
      left -= piece.length;
      yield piece;
    }
  } else if (framing.kind === 'chunked') {
    for (;;) {
      const line = await reader.readDelimited('\r\n', MAX_CHUNK_LINE, timing);
      if (!line) throw new ReadError('truncated', `${what} ended inside its chunked body`);
      const match = /^([0-9a-fA-F]{1,13})(?:[\t ]*;[\t \x21-\x7e]*)?\r\n$/.exec(line.toString('latin1'));
      if (!match) throw new HeadError(`${what} has a malformed chunk size line`);
      let left = Number.parseInt(match[1]!, 16);
      if (left === 0) break;
      while (left > 0) {
        const piece = await reader.read(Math.min(left, PIECE), idleMs, what);
        if (!piece) throw new ReadError('truncated', `${what} ended inside a chunk`);
        left -= piece.length;
        yield piece;
      }
      if ((await reader.readExactly(2, what)).toString('latin1') !== '\r\n') throw new HeadError(`${what} has a chunk longer than its size`);
    }
    // Trailer fields: read, bounded, and dropped (none is passed on).
    let trailers = 0;
    for (;;) {
      const line = await reader.readDelimited('\r\n', MAX_CHUNK_LINE, { ...timing, what: `the trailer of ${what}` });
      if (!line) throw new ReadError('truncated', `${what} ended inside its trailer`);
      if (line.length === 2) break;
      trailers += line.length;
      if (trailers > MAX_TRAILER_BYTES || /^[\t ]/.test(line.toString('latin1'))) throw new HeadError(`${what} has a malformed or oversized trailer`);
    }
  } else if (framing.kind === 'close') {
    for (;;) {
      const piece = await reader.read(PIECE, idleMs, what);
      if (!piece) return;
      yield piece;
    }
  }
}

/** Writes `data` to `sink`, waiting while it is full (back-pressure); throws when it is gone. */
export async function writeTo(sink: Writable, data: Buffer | string): Promise<void> {
  if (sink.destroyed || sink.writableEnded) throw new ReadError('closed', 'the other side closed its connection');
  if (sink.write(data)) return;
  await new Promise<void>((resolve, reject) => {
    const done = (error?: Error): void => {
      sink.off('drain', onDrain);
      sink.off('close', onClose);
      if (error) reject(error);
      else resolve();
    };
    const onDrain = (): void => done();
    const onClose = (): void => done(new ReadError('closed', 'the other side closed its connection'));
    sink.once('drain', onDrain);
    sink.once('close', onClose);
  });
}

/** One piece of a body as written in `framing`: a chunk, or the bytes as they are. */
export function framePiece(framing: Framing, piece: Buffer): Buffer {
  if (framing.kind !== 'chunked' || piece.length === 0) return piece;
  return Buffer.concat([Buffer.from(`${piece.length.toString(16)}\r\n`, 'latin1'), piece, Buffer.from('\r\n', 'latin1')]);
}

/** What ends a body written in `framing`: the last chunk, or nothing. */
export function frameEnd(framing: Framing): Buffer | undefined {
  return framing.kind === 'chunked' ? Buffer.from('0\r\n\r\n', 'latin1') : undefined;
}
