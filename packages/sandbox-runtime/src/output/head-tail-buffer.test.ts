import { describe, expect, it } from 'vitest';
import { createHeadTailBuffer } from './head-tail-buffer.js';

describe('createHeadTailBuffer', () => {
  it('keeps output under the limit exactly, across many writes', () => {
    const buffer = createHeadTailBuffer(100);
    for (const part of ['hello ', 'wörld', '\n', 'x'.repeat(80)]) buffer.write(Buffer.from(part));
    expect(buffer.truncated).toBe(false);
    expect(buffer.text()).toBe(`hello wörld\n${'x'.repeat(80)}`);
  });

  it('keeps head and tail of a large stream, states the cut, and stays bounded', () => {
    const buffer = createHeadTailBuffer(64);
    buffer.write(Buffer.from('HEAD'));
    for (let index = 0; index < 10_000; index++) buffer.write(Buffer.from(`line ${index}\n`));
    buffer.write(Buffer.from('TAIL'));
    const text = buffer.text();
    expect(buffer.truncated).toBe(true);
    expect(text.startsWith('HEAD')).toBe(true);
    expect(text.endsWith('line 9999\nTAIL')).toBe(true);
    expect(text).toContain(`${buffer.totalBytes - 64} bytes cut here`);
    expect(text.length).toBeLessThan(64 + 120);
  });

  it('handles one chunk far larger than the limit', () => {
    const buffer = createHeadTailBuffer(10);
    buffer.write(Buffer.from(`abcde${'-'.repeat(1000)}vwxyz`));
    const text = buffer.text();
    expect(text.startsWith('abcde\n[berth: 1000 bytes cut')).toBe(true);
    expect(text.endsWith('\nvwxyz')).toBe(true);
  });

  it('is not truncated when the output is exactly the limit, split over head and ring', () => {
    const buffer = createHeadTailBuffer(8);
    buffer.write(Buffer.from('1234'));
    buffer.write(Buffer.from('é'));
    buffer.write(Buffer.from('78'));
    expect(buffer.truncated).toBe(false);
    expect(buffer.text()).toBe('1234é78');
  });
});
