// Runs of consecutive whole numbers, for saying a set of ranks or steps briefly (`0-3, 8`).

/** The distinct non-negative integers of `xs` as ascending runs `[first, last]` of consecutive ones. */
export function integerRuns(xs: Iterable<number>): [number, number][] {
  const sorted = [...new Set(xs)].filter((x) => Number.isInteger(x) && x >= 0).sort((a, b) => a - b);
  const runs: [number, number][] = [];
  for (let i = 0; i < sorted.length; ) {
    let j = i;
    while (j + 1 < sorted.length && sorted[j + 1] === sorted[j] + 1) j++;
    runs.push([sorted[i], sorted[j]]);
    i = j + 1;
  }
  return runs;
}

/** `0-3, 8`: the runs written out, each prefixed by `prefix` (joined by `sep`). */
export function integerRunsText(xs: Iterable<number>, prefix = '', sep = ', '): string {
  return integerRuns(xs)
    .map(([a, b]) => (a === b ? `${prefix}${a}` : `${prefix}${a}-${b}`))
    .join(sep);
}
