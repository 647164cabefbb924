import { describe, expect, it } from 'vitest';
import { endMarkerPrefix, FrameReader, startMarker } from './frame-reader.js';
import { createHeadTailBuffer } from '../output/head-tail-buffer.js';

const id = '0123456789abcdef01234567';

function frame(body: string, status: number, noise = ''): Buffer {
  return Buffer.from(`${noise}${startMarker(id)}${body}${endMarkerPrefix(id)}${status}\n`);
}

describe('FrameReader', () => {
  it("passes on a command's output as it comes, holding back only what may begin the end marker", () => {
    const reader = new FrameReader();
    const sink = createHeadTailBuffer(1000);
    reader.expect(id, sink, () => undefined);
    reader.push(Buffer.from(`${startMarker(id)}first`));
    expect(sink.text()).toBe('first');
    reader.push(Buffer.from('\n'));
    expect(sink.text()).toBe('first');
    reader.push(Buffer.from('second\n__BERTH'));
    expect(sink.text()).toBe('first\nsecond');
    reader.push(Buffer.from('_x'));
    expect(sink.text()).toBe('first\nsecond\n__BERTH_x');
  });

  it('finds the frame wherever the stream is cut into chunks', () => {
    const bytes = frame('out\nput with __BERTH_ lookalikes\n__BERTH_00_E_1', 42, 'left over from a background job\n');
    for (let cut = 1; cut < bytes.length; cut++) {
      const reader = new FrameReader();
      const sink = createHeadTailBuffer(1000);
      let status: number | undefined;
      let started = false;
      reader.expect(
        id,
        sink,
        (value) => (status = value),
        () => (started = true),
      );
      reader.push(bytes.subarray(0, cut));
      reader.push(bytes.subarray(cut));
      expect(started).toBe(true);
      expect(status).toBe(42);
      expect(sink.text()).toBe('out\nput with __BERTH_ lookalikes\n__BERTH_00_E_1');
    }
  });

  it('delivers byte by byte and ignores frames of other commands', () => {
    const reader = new FrameReader();
    const sink = createHeadTailBuffer(1000);
    let status: number | undefined;
    reader.expect(id, sink, (value) => (status = value));
    const other = Buffer.from(`${startMarker('ffffffffffffffffffffffff')}not mine${endMarkerPrefix('ffffffffffffffffffffffff')}0\n`);
    for (const byte of Buffer.concat([other, frame('', 0)])) reader.push(Buffer.from([byte]));
    expect(status).toBe(0);
    expect(sink.text()).toBe('');
  });

  it('does not believe a status a shell cannot have: above 255, or no digits at all, is 255', () => {
    for (const [printed, believed] of [
      ['99999999999', 255],
      ['256', 255],
      ['', 255],
      ['0', 0],
      ['255', 255],
      ['7', 7],
    ] as const) {
      const reader = new FrameReader();
      let status: number | undefined;
      reader.expect(id, createHeadTailBuffer(100), (value) => (status = value));
      reader.push(Buffer.from(`${startMarker(id)}x${endMarkerPrefix(id)}${printed}\n`));
      expect(status, printed).toBe(believed);
    }
  });

  it('drops bytes after the frame closed', () => {
    const reader = new FrameReader();
    const sink = createHeadTailBuffer(1000);
    let calls = 0;
    reader.expect(id, sink, () => calls++);
    reader.push(Buffer.concat([frame('x', 1), Buffer.from('trailing noise'), frame('y', 2)]));
    expect(calls).toBe(1);
    expect(sink.text()).toBe('x');
  });

  it('without a start marker, takes everything from expect() to the end marker, and drops what came before', () => {
    const reader = new FrameReader();
    reader.push(Buffer.from('late output of a job, before the command\n'));
    const sink = createHeadTailBuffer(1000);
    let status: number | undefined;
    reader.expect(id, sink, (value) => (status = value), undefined, { startMarker: false });
    for (const byte of Buffer.from(`err\n${endMarkerPrefix(id)}3\nafter`)) reader.push(Buffer.from([byte]));
    expect(status).toBe(3);
    expect(sink.text()).toBe('err\n');
    expect(reader.stray).toBe('late output of a job, before the command\n'.length + 'after'.length);
  });
});
