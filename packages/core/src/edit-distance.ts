/**
 * The optimal-string-alignment distance between two strings (Damerau–Levenshtein restricted to
 * transpositions of neighbours that are not edited again): how many insertions, deletions,
 * substitutions and swaps of two adjacent characters turn `a` into `b`. `docker_memroy` is 1
 * from `docker_memory`. Counts UTF-16 code units; config keys are ASCII.
 */
export function editDistance(a: string, b: string): number {
  if (a === b) return 0;
  if (a.length === 0) return b.length;
  if (b.length === 0) return a.length;
  // Three rows of the table are enough: the one before last is only read for a swap.
  let beforeLast = new Array<number>(b.length + 1).fill(0);
  let last = Array.from({ length: b.length + 1 }, (_, column) => column);
  let current = new Array<number>(b.length + 1).fill(0);
  for (let row = 1; row <= a.length; row++) {
    current[0] = row;
    for (let column = 1; column <= b.length; column++) {
      const cost = a[row - 1] === b[column - 1] ? 0 : 1;
      let best = Math.min(last[column]! + 1, current[column - 1]! + 1, last[column - 1]! + cost);
      if (row > 1 && column > 1 && a[row - 1] === b[column - 2] && a[row - 2] === b[column - 1]) {
        best = Math.min(best, beforeLast[column - 2]! + 1);
      }
      current[column] = best;
    }
    [beforeLast, last, current] = [last, current, beforeLast];
  }
  return last[b.length]!;
}
