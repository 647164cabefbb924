import { describe, expect, it } from 'vitest';
import { createHeadTailBuffer } from './head-tail-buffer.js';
import { maskOutput } from './mask-output.js';

const secret = 'ghp_abcdefghijklmnopqrstuvwxyz';

describe('maskOutput', () => {
  it('masks whole secrets when nothing was cut', () => {
    const buffer = createHeadTailBuffer(1000);
    buffer.write(Buffer.from(`token=${secret}\n`));
    expect(maskOutput(buffer, [secret], 1000)).toBe('token=***\n');
  });

  it('leaves no piece of a secret at either edge of the cut', () => {
    for (let offset = 0; offset < secret.length + 1; offset++) {
      const buffer = createHeadTailBuffer(60);
      buffer.write(Buffer.from('x'.repeat(offset)));
      for (let index = 0; index < 50; index++) buffer.write(Buffer.from(`${secret}\n`));
      const text = maskOutput(buffer, [secret], 60);
      for (let start = 4; start + 8 <= secret.length; start++) expect(text).not.toContain(secret.slice(start, start + 8));
      expect(text).toContain('bytes cut here');
    }
  });

  it('returns the text unchanged without secrets', () => {
    const buffer = createHeadTailBuffer(100);
    buffer.write(Buffer.from('plain'));
    expect(maskOutput(buffer, [], 100)).toBe('plain');
  });
});
