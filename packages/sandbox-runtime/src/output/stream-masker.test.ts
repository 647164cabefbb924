import { describe, expect, it } from 'vitest';
import { createStreamMasker } from './stream-masker.js';

/** Feeds `pieces` through a masker and returns what it sent, piece by piece. */
function feed(secrets: string[], pieces: Array<string | Uint8Array>): string[] {
  const sent: string[] = [];
  const masker = createStreamMasker(secrets, (text) => sent.push(text));
  for (const piece of pieces) masker.write(typeof piece === 'string' ? Buffer.from(piece) : piece);
  masker.end();
  return sent;
}

const SECRET = 'ghp_S3cretValue123';

describe('createStreamMasker', () => {
  it('sends text without secrets as it comes, piece by piece', () => {
    expect(feed([SECRET], ['one\n', 'two\n'])).toEqual(['one\n', 'two\n']);
  });

  it('masks a secret that arrives whole, and one split over pieces at every place', () => {
    for (let at = 1; at < SECRET.length; at++) {
      const sent = feed([SECRET], [`a ${SECRET.slice(0, at)}`, `${SECRET.slice(at)} b`]);
      expect(sent.join('')).toBe('a *** b');
      for (const piece of sent) expect(piece).not.toContain(SECRET.slice(0, Math.max(at, 3)));
    }
    expect(feed([SECRET], [`x${SECRET}y`]).join('')).toBe('x***y');
  });

  it('never sends a piece of a secret, even one split byte by byte', () => {
    const sent = feed(
      [SECRET],
      [...Buffer.from(`<${SECRET}>`)].map((byte) => Uint8Array.of(byte)),
    );
    expect(sent.join('')).toBe('<***>');
    expect(sent.some((piece) => piece.length > 1 && SECRET.includes(piece))).toBe(false);
  });

  it('holds only what may begin a secret, and sends it when it turns out not to', () => {
    const sent = feed([SECRET], ['prompt: ghp_', 'x\n']);
    expect(sent[0]).toBe('prompt: ');
    expect(sent.join('')).toBe('prompt: ghp_x\n');
  });

  it('sends what it held at the end, and decodes characters split over pieces', () => {
    const euro = Buffer.from('€');
    expect(feed([SECRET], ['ends with ghp', euro.subarray(0, 1), euro.subarray(1)]).join('')).toBe('ends with ghp€');
    expect(feed([], ['no secrets: ghp_']).join('')).toBe('no secrets: ghp_');
  });
});
