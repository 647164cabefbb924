/** Output kept for one stream of one command, in bounded memory. */
export interface HeadTailBuffer {
  /** Adds bytes; memory stays at most `limit` bytes however much is written. */
  write(chunk: Uint8Array): void;
  /** Bytes written so far, including those cut. */
  readonly totalBytes: number;
  /** Whether anything was cut. */
  readonly truncated: boolean;
  /** The kept text: the head, a line stating the cut, the tail. */
  text(): string;
  /** Head and tail apart, with the number of bytes cut between them (0: `head` is everything). */
  parts(): { head: string; cut: number; tail: string };
}

/** The line that stands where output was cut. */
export function cutNotice(cut: number, limit: number): string {
  return `\n[berth: ${cut} bytes cut here; output is limited to ${limit} bytes per stream (terminal.docker_output_limit)]\n`;
}

/**
 * Keeps the first and the last `limit / 2` bytes of a stream, so a command that prints
 * gigabytes costs the gateway no more than `limit` bytes, and the user still sees how the
 * output began and how it ended. The tail is a ring, so writes never copy what they drop.
 */
export function createHeadTailBuffer(limit: number): HeadTailBuffer {
  const headLimit = Math.ceil(limit / 2);
  const tailLimit = Math.floor(limit / 2);
  const head: Buffer[] = [];
  let headBytes = 0;
  // Allocated on first overflow only: most commands print far less than the limit.
  let ring: Buffer | undefined;
  let ringStart = 0;
  let ringBytes = 0;
  let total = 0;

  const pushTail = (bytes: Uint8Array): void => {
    if (tailLimit === 0) return;
    ring ??= Buffer.allocUnsafe(tailLimit);
    // Only the last `tailLimit` bytes of a large chunk can survive.
    const source = bytes.length > tailLimit ? bytes.subarray(bytes.length - tailLimit) : bytes;
    for (let offset = 0; offset < source.length; ) {
      const writeAt = (ringStart + ringBytes) % tailLimit;
      const room = Math.min(source.length - offset, tailLimit - writeAt);
      ring.set(source.subarray(offset, offset + room), writeAt);
      offset += room;
      ringBytes += room;
      if (ringBytes > tailLimit) {
        ringStart = (ringStart + ringBytes - tailLimit) % tailLimit;
        ringBytes = tailLimit;
      }
    }
  };

  return {
    write(chunk) {
      total += chunk.length;
      let rest = chunk;
      if (headBytes < headLimit) {
        const take = Math.min(headLimit - headBytes, rest.length);
        head.push(Buffer.from(rest.subarray(0, take)));
        headBytes += take;
        rest = rest.subarray(take);
      }
      if (rest.length > 0) pushTail(rest);
    },
    get totalBytes() {
      return total;
    },
    get truncated() {
      return total > headBytes + ringBytes;
    },
    text() {
      const { head: headText, cut, tail } = this.parts();
      return cut === 0 ? headText : `${headText}${cutNotice(cut, limit)}${tail}`;
    },
    parts() {
      if (ringBytes === 0 || !ring) return { head: Buffer.concat(head).toString('utf8'), cut: 0, tail: '' };
      const tail =
        ringStart + ringBytes <= tailLimit
          ? ring.subarray(ringStart, ringStart + ringBytes)
          : Buffer.concat([ring.subarray(ringStart), ring.subarray(0, (ringStart + ringBytes) % tailLimit)]);
      const cut = total - headBytes - ringBytes;
      // Nothing cut: decode in one piece, so a character split between head and ring survives.
      if (cut === 0) return { head: Buffer.concat([...head, tail]).toString('utf8'), cut: 0, tail: '' };
      return { head: Buffer.concat(head).toString('utf8'), cut, tail: tail.toString('utf8') };
    },
  };
}

/** The buffer, with each chunk written also given to `tap` (a command's output shown as it comes). */
export function tapBuffer(buffer: HeadTailBuffer, tap: ((chunk: Uint8Array) => void) | undefined): HeadTailBuffer {
  if (!tap) return buffer;
  return {
    write(chunk) {
      buffer.write(chunk);
      tap(chunk);
    },
    get totalBytes() {
      return buffer.totalBytes;
    },
    get truncated() {
      return buffer.truncated;
    },
    text: () => buffer.text(),
    parts: () => buffer.parts(),
  };
}
