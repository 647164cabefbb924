import { execFileSync } from 'node:child_process';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { secretForms } from './secret-forms.js';

const holds = (text: string, value: string): boolean => secretForms(value).some((form) => text.includes(form));

describe('secretForms', () => {
  it("finds a value in a shell's export -p, quotes and all", () => {
    const value = `gh'p_"x$y\`z\\w`;
    // What POSIX shells and bash write for an exported variable holding it.
    const shell = execFileSync('/bin/sh', ['-c', 'export -p'], { env: { TOKEN: value }, encoding: 'utf8' });
    expect(holds(shell, value)).toBe(true);
    expect(holds(`declare -x TOKEN="gh'p_\\"x\\$y\\\`z\\\\w"`, value)).toBe(true);
    expect(holds(`export TOKEN='gh'"'"'p_"x$y\`z\\w'`, value)).toBe(true);
  });

  it('finds a value in JSON, in a URL and in base64 at any alignment, standard or URL-safe', () => {
    fc.assert(
      fc.property(fc.string({ minLength: 12, maxLength: 60 }), fc.uint8Array({ maxLength: 7 }), fc.uint8Array({ maxLength: 7 }), (value, before, after) => {
        const stream = Buffer.concat([Buffer.from(before), Buffer.from(value, 'utf8'), Buffer.from(after)]);
        expect(holds(stream.toString('base64'), value)).toBe(true);
        expect(holds(stream.toString('base64url'), value)).toBe(true);
        expect(holds(JSON.stringify({ token: value }), value)).toBe(true);
        expect(holds(`https://x.example/?t=${encodeURIComponent(value)}&y=1`, value)).toBe(true);
      }),
    );
  });

  it('finds a short value in base64 that starts with it', () => {
    expect(holds(Buffer.from('abcdef and more').toString('base64'), 'abcdef')).toBe(true);
  });

  it('gives nothing for a value too short to be a secret, and does not find a value where it is not', () => {
    expect(secretForms('yes')).toEqual([]);
    expect(holds(Buffer.from('an ordinary file with no token in it').toString('base64'), 'ghp_Secret123')).toBe(false);
  });
});
