import type { Duplex } from 'node:stream';

/** How much a reader holds before it stops reading its stream (back-pressure). */
const HIGH_WATER = 64 * 1024;

/** Why a read ended early: the peer stopped in the middle, sent too much, or too slowly. */
export class ReadError extends Error {
  constructor(
    readonly reason: 'truncated' | 'too-large' | 'timeout' | 'closed',
    message: string,
  ) {
    super(message);
  }
}

/**
 * The bytes of one stream from a sandbox or an upstream, read by the host on its own terms: a
 * head up to a limit and within a time, a line up to a limit, a body piece by piece. It never
 * holds more than {@link HIGH_WATER} bytes beyond what was asked for (the stream is paused), so
 * a peer that sends faster than it is served, or pipelines requests, waits in its own buffers.
 */
export class ByteReader {
  readonly #stream: Duplex;
  #chunks: Buffer[] = [];
  #length = 0;
  #ended = false;
  #failure: Error | undefined;
  #wake: (() => void) | undefined;
  #detached = false;

  constructor(stream: Duplex) {
    this.#stream = stream;
    stream.on('data', this.#onData);
    stream.once('end', this.#onEnd);
    stream.once('close', this.#onEnd);
    stream.on('error', this.#onError);
  }

  readonly #onData = (chunk: Buffer): void => {
    this.#chunks.push(chunk);
    this.#length += chunk.length;
    if (this.#length >= HIGH_WATER) this.#stream.pause();
    this.#notify();
  };
  readonly #onEnd = (): void => {
    this.#ended = true;
    this.#notify();
  };
  readonly #onError = (error: Error): void => {
    this.#failure = error;
    this.#ended = true;
    this.#notify();
  };

  #notify(): void {
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.();
  }

  /** Waits for more bytes (or the end), at most `ms` (`Infinity`: no limit). */
  async #more(ms: number, what: string): Promise<void> {
    if (this.#ended) return;
    this.#stream.resume();
    await new Promise<void>((resolve, reject) => {
      const timer = Number.isFinite(ms) ? setTimeout(() => reject(new ReadError('timeout', `${what} did not come within ${ms} ms`)), ms) : undefined;
      this.#wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }

  #take(count: number): Buffer {
    const all = this.#chunks.length === 1 ? this.#chunks[0]! : Buffer.concat(this.#chunks, this.#length);
    const taken = all.subarray(0, count);
    const rest = all.subarray(count);
    this.#chunks = rest.length > 0 ? [rest] : [];
    this.#length = rest.length;
    if (this.#length < HIGH_WATER && !this.#detached) this.#stream.resume();
    return taken;
  }

  #peek(): Buffer {
    if (this.#chunks.length > 1) this.#chunks = [Buffer.concat(this.#chunks, this.#length)];
    return this.#chunks[0] ?? Buffer.alloc(0);
  }

  /** Bytes held now. */
  get buffered(): number {
    return this.#length;
  }

  /** Whether the stream ended and every byte was read. */
  get finished(): boolean {
    return this.#ended && this.#length === 0;
  }

  /**
   * Reads up to and including `delimiter`, which must come within `limit` bytes. `firstByteMs`:
   * how long to wait for the first byte (an idle keep-alive connection); `wholeMs`: how long the
   * rest may take once it began (slowloris). Resolves `undefined` when the stream ended cleanly
   * before any byte; throws a {@link ReadError} otherwise.
   */
  async readDelimited(delimiter: string, limit: number, timing: { firstByteMs: number; wholeMs: number; what: string }): Promise<Buffer | undefined> {
    const started = { at: this.#length > 0 ? Date.now() : undefined };
    for (;;) {
      const held = this.#peek();
      const found = held.indexOf(delimiter, 0, 'latin1');
      if (found >= 0 && found + delimiter.length <= limit) return this.#take(found + delimiter.length);
      if (held.length >= limit) throw new ReadError('too-large', `${timing.what} is longer than ${limit} bytes`);
      if (this.#failure) throw new ReadError('closed', `${timing.what} ended: ${this.#failure.message}`);
      if (this.#ended) {
        if (held.length === 0) return undefined;
        throw new ReadError('truncated', `${timing.what} ended before it was complete`);
      }
      const waited = started.at === undefined ? timing.firstByteMs : timing.wholeMs - (Date.now() - started.at);
      if (waited <= 0) throw new ReadError('timeout', `${timing.what} did not come whole within ${timing.wholeMs} ms`);
      await this.#more(waited, timing.what);
      if (started.at === undefined && this.#length > 0) started.at = Date.now();
    }
  }

  /** Reads up to `max` bytes (at least one); `undefined` at the end of the stream. */
  async read(max: number, idleMs = Number.POSITIVE_INFINITY, what = 'the stream'): Promise<Buffer | undefined> {
    while (this.#length === 0) {
      if (this.#failure) throw new ReadError('closed', `${what} ended: ${this.#failure.message}`);
      if (this.#ended) return undefined;
      await this.#more(idleMs, what);
    }
    return this.#take(Math.min(max, this.#length));
  }

  /** The first byte held (waiting at most `ms` for one), without taking it; undefined at the end of the stream. */
  async peekByte(ms: number, what: string): Promise<number | undefined> {
    const started = Date.now();
    while (this.#length === 0) {
      if (this.#ended) return undefined;
      const left = ms - (Date.now() - started);
      if (left <= 0) throw new ReadError('timeout', `${what} did not come within ${ms} ms`);
      await this.#more(left, what);
    }
    return this.#peek()[0];
  }

  /** Reads exactly `count` bytes; throws when the stream ends first. */
  async readExactly(count: number, what: string): Promise<Buffer> {
    const pieces: Buffer[] = [];
    let left = count;
    while (left > 0) {
      const piece = await this.read(left);
      if (!piece) throw new ReadError('truncated', `${what} ended ${left} bytes early`);
      pieces.push(piece);
      left -= piece.length;
    }
    return pieces.length === 1 ? pieces[0]! : Buffer.concat(pieces);
  }

  /**
   * Stops reading for good and gives back what it held: the stream is the caller's from now on
   * (a tunnel passed through, an upgraded connection). The stream is left paused.
   */
  detach(): Buffer {
    this.#detached = true;
    this.#stream.off('data', this.#onData);
    this.#stream.off('end', this.#onEnd);
    this.#stream.off('close', this.#onEnd);
    this.#stream.off('error', this.#onError);
    this.#stream.pause();
    const held = this.#length > 0 ? this.#take(this.#length) : Buffer.alloc(0);
    // Errors after this are the new owner's to handle; one listener keeps them from being uncaught.
    this.#stream.on('error', () => undefined);
    return held;
  }
}
