import { describe, expect, it } from 'vitest';
import { formatTable, maskValue } from './format-table.js';

describe('formatTable', () => {
  it('pads columns to the widest cell, with no trailing spaces', () => {
    expect(
      formatTable(
        ['A', 'BB', 'C'],
        [
          ['long value', 'x', ''],
          ['y', 'wider cell', 'end'],
        ],
      ),
    ).toBe(['A           BB          C', 'long value  x', 'y           wider cell  end', ''].join('\n'));
  });

  it('does not count colour codes, and keeps every row on one line', () => {
    const green = '\u001b[32mok\u001b[39m';
    const out = formatTable(
      ['NAME', 'OK'],
      [
        ['a\nb', green],
        ['ccc', 'no'],
      ],
    );
    expect(out.split('\n')).toEqual(['NAME  OK', `a b   ${green}`, 'ccc   no', '']);
  });
});

describe('maskValue', () => {
  it.each(['ghp_secret', 'a', 'x'.repeat(500)])('never shows the value %j', (value) => {
    expect(maskValue(value)).toBe('***');
    expect(maskValue(value)).not.toContain(value);
  });

  it('says when a value is empty', () => {
    expect(maskValue('')).toBe('(empty)');
  });
});
