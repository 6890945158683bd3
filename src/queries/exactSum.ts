// Exactly rounded sums (Shewchuk's non-overlapping partials, as Python's math.fsum keeps them): the
// result does not depend on the order values are added in, so sums folded hour by hour, series by
// series or in one pass over every value are the same number.

export class ExactSum {
  /** Non-overlapping partials, increasing magnitude; their exact sum is the sum of the finite values added. */
  private partials: number[] = [];
  /** Non-finite values added: they decide the result alone (NaN, or ±Infinity, or NaN for both infinities). */
  private special = 0;

  add(x: number): void {
    if (!Number.isFinite(x)) {
      this.special = this.special === 0 || this.special === x ? x : NaN;
      return;
    }
    const p = this.partials;
    let i = 0;
    for (let j = 0; j < p.length; j++) {
      let y = p[j]!;
      if (Math.abs(x) < Math.abs(y)) {
        const t = x;
        x = y;
        y = t;
      }
      const hi = x + y;
      const lo = y - (hi - x);
      if (lo !== 0) p[i++] = lo;
      x = hi;
    }
    p.length = i;
    // a zero is no partial (as math.fsum keeps them): the sum of zeros alone, -0 among them, is +0
    if (x !== 0) p.push(x);
  }

  /** Adds everything `other` holds (exactly). */
  addSum(other: ExactSum): void {
    if (other.special !== 0) this.add(other.special);
    for (const x of other.partials) this.add(x);
  }

  /** The sum, correctly rounded (half to even), as math.fsum rounds it. */
  value(): number {
    if (this.special !== 0) return this.special;
    const p = this.partials;
    let n = p.length;
    if (n === 0) return 0;
    let hi = p[--n]!;
    let lo = 0;
    while (n > 0) {
      const x = hi;
      const y = p[--n]!;
      hi = x + y;
      lo = y - (hi - x);
      if (lo !== 0) break;
    }
    // a tie in the rounding of hi + lo is broken by the sign of the partials below it
    if (n > 0 && ((lo < 0 && p[n - 1]! < 0) || (lo > 0 && p[n - 1]! > 0))) {
      const y = lo * 2;
      const x = hi + y;
      if (y === x - hi) hi = x;
    }
    return hi;
  }
}

/** The exactly rounded sum of `values`. */
export function exactSum(values: Iterable<number>): number {
  const s = new ExactSum();
  for (const v of values) s.add(v);
  return s.value();
}
