/** One word for a POSIX shell: single-quoted, with embedded single quotes closed and escaped. */
export function quoteForShell(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`;
}
