// A chart's points in ascending x. A run logs in time order, but a step logged again later (a restarted
// trainer, two trainers on one collector) comes back out of step order: drawn as it comes, the line would
// run back and forth across the chart.

/** `x` and `y` with the points in ascending x (equal x keep their logged order); the arrays themselves when already so. */
export function inXOrder<X extends ArrayLike<number>, Y extends ArrayLike<unknown>>(x: X, y: Y): { x: X | number[]; y: Y | Y[number][] } {
  let sorted = true;
  for (let i = 1; i < x.length && sorted; i++) if (x[i]! < x[i - 1]!) sorted = false;
  if (sorted) return { x, y };
  const order = Array.from({ length: x.length }, (_, i) => i).sort((a, b) => x[a]! - x[b]! || a - b);
  return { x: order.map((i) => x[i]!), y: order.map((i) => y[i] as Y[number]) };
}
