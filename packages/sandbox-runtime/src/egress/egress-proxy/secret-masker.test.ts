import { describe, expect, it } from 'vitest';
import { BodyMasker, maskHeadValue, orderForms } from './secret-masker.js';

const VALUE = 'ghp_REALvalue_0123456789';

/** Everything a masker lets out of `pieces`, ended cleanly or cut off. */
function through(pieces: string[], ended: boolean): string {
  const masker = new BodyMasker([VALUE]);
  let out = '';
  for (const piece of pieces) out += masker.push(Buffer.from(piece)).toString();
  if (ended) out += masker.end().toString();
  return out;
}

describe('the masker', () => {
  it('masks a value in a body however the pieces split it, length kept', () => {
    const text = `before ${VALUE} middle ${VALUE}after`;
    for (let cut = 0; cut <= text.length; cut++) {
      const out = through([text.slice(0, cut), text.slice(cut)], true);
      expect(out).toHaveLength(text.length);
      expect(out).not.toContain(VALUE);
      expect(out).toBe(text.replaceAll(VALUE, '*'.repeat(VALUE.length)));
    }
  });

  it('fails closed: a body cut off in the middle of a value never lets that part out, and one ending on it masks it', () => {
    for (let cut = 4; cut < VALUE.length; cut++) {
      const partial = VALUE.slice(0, cut);
      expect(through([`x ${partial}`], false)).toBe('x ');
      expect(through([`x ${partial}`], true)).toBe(`x ${'*'.repeat(cut)}`);
    }
    // Text that merely starts like a value comes out whole once the next piece shows it is not one.
    expect(through(['x ghp_RE', 'd, not a token'], true)).toBe('x ghp_REd, not a token');
  });

  it('masks head values with the longest forms first', () => {
    const forms = orderForms([
      { secret: VALUE, replacement: 'PLACEHOLDER' },
      { secret: `Bearer ${VALUE}`, replacement: 'Bearer PLACEHOLDER' },
      { secret: '', replacement: 'nothing' },
    ]);
    expect(forms.map((form) => form.replacement)).toEqual(['Bearer PLACEHOLDER', 'PLACEHOLDER']);
    expect(maskHeadValue(`a ${VALUE} b Bearer ${VALUE}`, forms)).toBe('a PLACEHOLDER b Bearer PLACEHOLDER');
  });
});
