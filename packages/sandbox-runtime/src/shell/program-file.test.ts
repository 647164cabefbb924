import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { fillTemplate, programLine, programText } from './program-file.js';

const file = (...lines: string[]): string => `${lines.join('\n')}\n`;

describe('programText', () => {
  it('sends what follows the header, without the shellcheck directives', () => {
    const text = programText(
      file('# shellcheck shell=sh', '# What it does.', '', 'a=1', '  # shellcheck disable=SC2086 # why', '  echo $a', '# a comment is sent', 'b'),
    );
    expect(text).toBe(file('a=1', '  echo $a', '# a comment is sent', 'b'));
  });

  it('refuses a file without its header or its final newline', () => {
    expect(() => programText(file('#!/bin/sh', '', 'a'))).toThrow(/shellcheck shell=sh/);
    expect(() => programText(file('# shellcheck shell=sh', 'a=1'))).toThrow(/blank line/);
    expect(() => programText('# shellcheck shell=sh\n\na')).toThrow(/newline/);
  });

  it('holds for every program file of this folder: none sends a directive or its header', () => {
    const folder = import.meta.dirname;
    const files = readdirSync(folder).filter((name) => name.endsWith('.sh'));
    expect(files.length).toBeGreaterThanOrEqual(6);
    for (const name of files) {
      const text = programText(readFileSync(path.join(folder, name), 'utf8'));
      expect(text, name).not.toMatch(/shellcheck/);
    }
  });
});

describe('programLine', () => {
  it('gives a one-line program without its newline, and refuses more lines', () => {
    expect(programLine(file('# shellcheck shell=sh', '', '# shellcheck disable=SC2016 # why', "echo '$x'"))).toBe("echo '$x'");
    expect(() => programLine(file('# shellcheck shell=sh', '', 'a', 'b'))).toThrow(/one line/);
  });
});

describe('fillTemplate', () => {
  it('puts each value where its name stands, as it is, every time the name appears', () => {
    expect(fillTemplate('a=@A@; b=@B_2@; echo @A@', { A: "'x'", B_2: '$y' })).toBe("a='x'; b=$y; echo 'x'");
  });

  it('never reads a value as a replacement pattern or as a placeholder', () => {
    expect(fillTemplate('@A@ @B@', { A: "$& $' $` $1", B: '@A@' })).toBe("$& $' $` $1 @A@");
  });

  it('refuses a placeholder without a value, and a value without a placeholder', () => {
    expect(() => fillTemplate('@A@ @B@', { A: '1' })).toThrow(/@B@ has no value/);
    expect(() => fillTemplate('@A@', { A: '1', C: '3' })).toThrow(/no @C@/);
    expect(() => fillTemplate('@A@', { A: '1', toString: 'x' })).toThrow(/no @toString@/);
  });

  it('leaves text that is no placeholder alone: $@, lowercase, a lone @', () => {
    expect(fillTemplate('"$@" @lower@ a@b @', {})).toBe('"$@" @lower@ a@b @');
  });
});
