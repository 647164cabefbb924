import { describe, expect, it } from 'vitest';
import { maskCommandLine } from './mask-command-line.js';

describe('maskCommandLine', () => {
  it('masks a secret across the first line break and the length limit, leaving no piece of it', () => {
    const secret = 'abcdef-secret';
    expect(maskCommandLine(`curl -H ${secret.slice(0, 6)}`, [secret])).toBe('curl -H abcdef');
    expect(maskCommandLine(`echo ${secret}\nnext`, [secret])).toBe('echo *** …');
    const cut = maskCommandLine(`${'x'.repeat(8)}${secret}`, [secret], 10);
    expect(cut).toBe('xxxxxxxx**… (1 more characters)');
    expect(cut).not.toContain('abc');
  });
});
