import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parseCliArguments } from './parse-cli-arguments.js';

// Every `berth …` command line the docs show an operator, parsed by the CLI's own parser: a
// line pasted from any page either runs or is a line the page itself marks as a synopsis.
const repository = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..', '..');
const pages = [path.join(repository, 'README.md'), ...readdirSync(path.join(repository, 'docs')).map((name) => path.join(repository, 'docs', name))].filter(
  (file) => file.endsWith('.md'),
);

/** Shell words of a documented line (quotes honoured, the rest of the line after a `#` dropped). */
function words(line: string): string[] {
  const out: string[] = [];
  let current = '';
  let quote: string | undefined;
  let started = false;
  for (const character of line) {
    if (quote) {
      if (character === quote) quote = undefined;
      else current += character;
    } else if (character === "'" || character === '"') {
      quote = character;
      started = true;
    } else if (character === '#' && !started) break;
    else if (/\s/.test(character)) {
      if (started) out.push(current);
      current = '';
      started = false;
    } else {
      current += character;
      started = true;
    }
  }
  if (started) out.push(current);
  return out;
}

/** The `berth …` lines of a page: in code blocks, and in inline code spans. */
function commandLines(text: string): string[] {
  const lines: string[] = [];
  for (const block of text.matchAll(/```[a-z]*\n([\s\S]*?)```/g)) {
    for (const line of block[1]!.split('\n')) if (/^\s*(\$ )?berth /.test(line)) lines.push(line.replace(/^\s*(\$ )?/, ''));
  }
  // An inline span of three words or fewer names a command (`berth rm --purge`); a longer one is a line to paste.
  for (const span of text.replace(/```[\s\S]*?```/g, '').matchAll(/`(berth [^`]+)`/g)) if (words(span[1]!).length > 3) lines.push(span[1]!);
  // A synopsis (alternatives, optional parts, placeholders for several words) is not a command line.
  return lines.filter((line) => !/[[\]|…(){}<>]|\.\.\./.test(line));
}

describe('the berth command lines of the docs', () => {
  it('each parses with the CLI’s own parser', () => {
    const failures: string[] = [];
    let parsed = 0;
    for (const page of pages) {
      for (const line of commandLines(readFileSync(page, 'utf8'))) {
        try {
          // A trailing `&` puts the line in the background; it is the shell's, not berth's.
          parseCliArguments(
            words(line)
              .filter((word) => word !== '&')
              .slice(1),
          );
          parsed++;
        } catch (error) {
          failures.push(`${path.relative(repository, page)}: ${line} — ${(error as Error).message}`);
        }
      }
    }
    expect(failures).toEqual([]);
    expect(parsed).toBeGreaterThan(10);
  });
});
