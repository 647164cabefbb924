// Counts what a terminal shows: escape sequences take no room.
function visibleLength(text: string): number {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: terminal colour codes start with ESC, what it skips
  return [...text.replace(/\u001b\[[0-9;]*m/g, '')].length;
}

/**
 * Formats rows as a plain-text table: a header, columns padded to their widest cell, two
 * spaces between columns, no trailing spaces. Cells with line breaks are flattened.
 */
export function formatTable(headers: readonly string[], rows: readonly (readonly string[])[]): string {
  const clean = (cell: string) => cell.replace(/[\r\n\t]+/g, ' ');
  const all = [headers.map(clean), ...rows.map((row) => headers.map((_, index) => clean(row[index] ?? '')))];
  const widths = headers.map((_, index) => Math.max(...all.map((row) => visibleLength(row[index]!))));
  return all
    .map((row) =>
      row
        .map((cell, index) => (index === row.length - 1 ? cell : cell + ' '.repeat(widths[index]! - visibleLength(cell))))
        .join('  ')
        .trimEnd(),
    )
    .join('\n')
    .concat('\n');
}

/** How a variable's value is shown: never the value itself. */
export function maskValue(value: string): string {
  return value.length === 0 ? '(empty)' : '***';
}
