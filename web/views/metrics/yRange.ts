// The y range of a metric chart: the data's own, padded, a flat series widened so it draws mid-plot.
import type uPlot from 'uplot';

/** Y extent with 8% padding and a floor on the span, so float noise is not blown up to full height. */
export function yRange(_u: uPlot, min: number | null, max: number | null): uPlot.Range.MinMax {
  if (min == null || max == null) return [min, max];
  const floor = Math.max(Math.abs(min), Math.abs(max)) * 0.05 || 1;
  let lo = min;
  let hi = max;
  if (hi - lo < floor) {
    const mid = (lo + hi) / 2;
    lo = mid - floor / 2;
    hi = mid + floor / 2;
    // a flat series never below zero (a rate that stays 0, a count) is widened upwards, not into negatives
    if (min >= 0 && lo < 0) {
      hi -= lo;
      lo = 0;
    }
  }
  const pad = (hi - lo) * 0.08;
  return [lo - pad, hi + pad];
}
