/** Small statistics shared by the plugin's benches: medians, percentiles and a table. */

export const round = (value: number, places = 3): number => Math.round(value * 10 ** places) / 10 ** places;

const sorted = (values: readonly number[]): number[] => [...values].sort((a, b) => a - b);

export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const ordered = sorted(values);
  const middle = Math.floor(ordered.length / 2);
  return ordered.length % 2 ? ordered[middle]! : (ordered[middle - 1]! + ordered[middle]!) / 2;
}

export function percentile(values: readonly number[], p: number): number {
  return sorted(values)[Math.min(values.length - 1, Math.floor((values.length * p) / 100))]!;
}

/** Runs, median, p90 and minimum of a list of times in ms. */
export function summary(values: readonly number[]) {
  return { runs: values.length, medianMs: round(median(values)), p90Ms: round(percentile(values, 90)), minMs: round(Math.min(...values)) };
}

/** Wall time of `task` in ms. */
export async function timed(task: () => Promise<unknown>): Promise<number> {
  const started = performance.now();
  await task();
  return performance.now() - started;
}

/** Prints rows of [what, value, note] as an aligned table. */
export function printTable(title: string, rows: ReadonlyArray<readonly [string, string, string]>): void {
  const width = Math.max(...rows.map((row) => row[0].length));
  const valueWidth = Math.max(...rows.map((row) => row[1].length));
  console.log(`\n${title}\n`);
  for (const [what, value, note] of rows) console.log(`${what.padEnd(width)}  ${value.padStart(valueWidth)}  ${note}`.trimEnd());
}
