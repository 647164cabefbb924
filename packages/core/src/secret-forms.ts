import { MIN_SECRET_LENGTH } from './redact.js';

/** The shortest encoded form looked for: shorter runs of base64 turn up in ordinary files by chance. */
const MIN_FORM_LENGTH = 8;

/** `value` inside single quotes, as POSIX shells' `export -p` write a quote: `'\''` (dash, bash) or `'"'"'` (busybox). */
function singleQuoted(value: string): string[] {
  return [value.replaceAll("'", `'\\''`), value.replaceAll("'", `'"'"'`)];
}

/** `value` inside double quotes, as bash's `declare -p` writes it: `\`, `"`, `$` and a backquote escaped. */
function doubleQuoted(value: string): string {
  return value.replace(/[\\"$`]/g, (character) => `\\${character}`);
}

/**
 * The runs of base64 that appear wherever `value`'s bytes are encoded inside a longer stream:
 * for each of the three alignments, the characters that depend on `value`'s bytes alone, in
 * both alphabets (standard and URL-safe). Runs shorter than 8 characters are left out: they turn
 * up by chance. The egress proxy masks these in answers; the file checks look for them.
 */
export function base64Runs(value: string): string[] {
  const bytes = Buffer.from(value, 'utf8');
  const runs: string[] = [];
  for (let offset = 0; offset < 3; offset++) {
    const encoded = Buffer.concat([Buffer.alloc(offset), bytes])
      .toString('base64')
      .replace(/=+$/, '');
    // The first group mixes in `offset` bytes from before; a last, partial group mixes in bytes from after.
    const start = offset === 0 ? 0 : 4;
    const end = 4 * Math.floor((offset + bytes.length) / 3);
    const run = encoded.slice(start, Math.max(start, end));
    if (run.length >= MIN_FORM_LENGTH) runs.push(run, run.replaceAll('+', '-').replaceAll('/', '_'));
  }
  return runs;
}

/**
 * The forms in which a secret's value turns up in what shells and tools write: as it is,
 * shell-quoted as `export -p` and `declare -p` write it (Berth's own session state in the
 * sandbox's `/tmp` is such a file), JSON-escaped, percent-encoded, and in base64 (standard and
 * URL-safe, at any alignment; at an alignment other than the start, a value needs about 12
 * characters for a run long enough to look for). For checks that a file about to leave a sandbox holds none of the
 * scope's secrets; values shorter than {@link MIN_SECRET_LENGTH} give none. It cannot see every
 * transformation a hostile program may apply: it stops accidents, not a user hiding their own secret.
 */
export function secretForms(value: string): string[] {
  if (value.length < MIN_SECRET_LENGTH) return [];
  const forms = new Set<string>([value, ...singleQuoted(value), doubleQuoted(value), JSON.stringify(value).slice(1, -1), encodeURIComponent(value)]);
  for (const run of base64Runs(value)) forms.add(run);
  return [...forms];
}
