import type { HeadTailBuffer } from '../output/head-tail-buffer.js';

/** What a frame reader reports when a command's frame closes on its stream: the status, and the letters after it. */
export type FrameEndHandler = (status: number, flags: string) => void;

/**
 * Cuts one output stream of a persistent shell into per-command frames. The shell prints
 * `__BERTH_<id>_S__\n` before a command (on stdout only: see ShellSession) and
 * `\n__BERTH_<id>_E_<status>\n` after it, with a random id per command: bytes between the two
 * are the command's output, bytes outside any frame (a background job of an earlier command,
 * say) are dropped. Patterns split across chunks are found; memory stays at the sink's limit
 * plus one pattern length.
 */
export class FrameReader {
  private state: 'idle' | 'start' | 'body' | 'status' = 'idle';
  private carry: Buffer = Buffer.alloc(0);
  private startPattern = Buffer.alloc(0);
  private endPattern = Buffer.alloc(0);
  private statusText = '';
  private sink: HeadTailBuffer | undefined;
  private onEnd: FrameEndHandler | undefined;
  private onStart: (() => void) | undefined;
  /** Bytes that arrived outside every frame since the reader was made. */
  stray = 0;

  /**
   * Waits for the frame of command `id`; its output goes to `sink`. With `startMarker: false`
   * the frame is taken to start now (the stream carries no start marker for it): every byte
   * from here to the end marker is the command's.
   */
  expect(id: string, sink: HeadTailBuffer, onEnd: FrameEndHandler, onStart?: () => void, options: { startMarker?: boolean } = {}): void {
    this.state = options.startMarker === false ? 'body' : 'start';
    this.carry = Buffer.alloc(0);
    this.startPattern = Buffer.from(startMarker(id));
    this.endPattern = Buffer.from(endMarkerPrefix(id));
    this.statusText = '';
    this.sink = sink;
    this.onEnd = onEnd;
    this.onStart = onStart;
  }

  /** Stops waiting; later bytes are dropped. */
  reset(): void {
    this.state = 'idle';
    this.carry = Buffer.alloc(0);
    this.sink = undefined;
    this.onEnd = undefined;
    this.onStart = undefined;
  }

  /** Feeds the next bytes of the stream. */
  push(chunk: Buffer): void {
    let data = this.carry.length > 0 ? Buffer.concat([this.carry, chunk]) : chunk;
    this.carry = Buffer.alloc(0);
    while (data.length > 0) {
      if (this.state === 'idle') {
        this.stray += data.length;
        return;
      }
      if (this.state === 'start') {
        const at = data.indexOf(this.startPattern);
        if (at === -1) {
          const keep = Math.min(data.length, this.startPattern.length - 1);
          this.stray += data.length - keep;
          this.carry = Buffer.from(data.subarray(data.length - keep));
          return;
        }
        this.stray += at;
        data = data.subarray(at + this.startPattern.length);
        this.state = 'body';
        this.onStart?.();
        continue;
      }
      if (this.state === 'body') {
        const at = data.indexOf(this.endPattern);
        if (at === -1) {
          // Hold back only what could be the start of the end pattern: the rest is the command's
          // output now (shown as it comes), not once ~40 more bytes have followed it.
          const keep = heldBack(data, this.endPattern);
          this.sink?.write(data.subarray(0, data.length - keep));
          this.carry = Buffer.from(data.subarray(data.length - keep));
          return;
        }
        this.sink?.write(data.subarray(0, at));
        data = data.subarray(at + this.endPattern.length);
        this.state = 'status';
        continue;
      }
      // state === 'status': digits and flag letters up to the newline.
      const newline = data.indexOf(0x0a);
      if (newline === -1) {
        this.statusText += data.toString('latin1');
        if (this.statusText.length > 16) this.finish(Number.NaN, '');
        return;
      }
      this.statusText += data.subarray(0, newline).toString('latin1');
      const [, digits = '', flags = ''] = /^(\d*)([A-Z]*)$/.exec(this.statusText) ?? [];
      this.finish(Number.parseInt(digits, 10), flags);
      // What follows the frame on this stream is outside every frame.
      data = data.subarray(newline + 1);
      if (data.length > 0) this.stray += data.length;
      return;
    }
  }

  private finish(status: number, flags: string): void {
    const onEnd = this.onEnd;
    this.reset();
    // A shell's status is 0–255: anything else the sandbox printed is not believed.
    onEnd?.(Number.isInteger(status) && status >= 0 && status <= 255 ? status : 255, flags);
  }
}

/** The length of the longest end of `data` that begins `pattern` (shorter than `pattern`). */
function heldBack(data: Buffer, pattern: Buffer): number {
  for (let length = Math.min(data.length, pattern.length - 1); length > 0; length--) {
    if (data.compare(pattern, 0, length, data.length - length) === 0) return length;
  }
  return 0;
}

/** The line a persistent shell prints before command `id`'s output. */
export function startMarker(id: string): string {
  return `__BERTH_${id}_S__\n`;
}

/** What a persistent shell prints after command `id`'s output, before its exit status and a newline. */
export function endMarkerPrefix(id: string): string {
  return `\n__BERTH_${id}_E_`;
}
