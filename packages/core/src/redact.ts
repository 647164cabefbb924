/** Values shorter than this are not masked: masking `1` or `yes` would garble output and hide nothing. */
export const MIN_SECRET_LENGTH = 6;

/** The text that replaces a masked value. */
export const REDACTED = '***';

/** Masks known secret values in text. */
export interface Redactor {
  /** `text` with every occurrence of every secret replaced by `***`. */
  redact(text: string): string;
  /** Whether any secret is long enough to be masked. */
  readonly active: boolean;
}

/**
 * Creates a redactor for `secrets`. Every occurrence of every secret is found, including
 * overlapping ones and secrets inside other secrets; the union of those ranges is masked, so
 * no part of any secret survives. Values shorter than {@link MIN_SECRET_LENGTH} are skipped.
 */
export function createRedactor(secrets: Iterable<string>): Redactor {
  const values = [...new Set([...secrets].filter((value) => value.length >= MIN_SECRET_LENGTH))];
  return {
    active: values.length > 0,
    redact(text) {
      if (values.length === 0 || text.length === 0) return text;
      const ranges: Array<[number, number]> = [];
      for (const value of values) {
        for (let at = text.indexOf(value); at !== -1; at = text.indexOf(value, at + 1)) ranges.push([at, at + value.length]);
      }
      if (ranges.length === 0) return text;
      ranges.sort((a, b) => a[0] - b[0]);
      let out = '';
      let cursor = 0;
      let [start, end] = ranges[0]!;
      for (const [nextStart, nextEnd] of ranges.slice(1)) {
        if (nextStart <= end) {
          end = Math.max(end, nextEnd);
        } else {
          out += text.slice(cursor, start) + REDACTED;
          cursor = end;
          [start, end] = [nextStart, nextEnd];
        }
      }
      return out + text.slice(cursor, start) + REDACTED + text.slice(end);
    },
  };
}
