/** Quotes `value` as one word for a POSIX shell, so host paths with spaces or quotes stay one argument. */
export function shellQuote(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`;
}
