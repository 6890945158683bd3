// The visible time window and its mapping to pixels; zoom and pan keep it inside the run and under the max window.
export interface Viewport {
  t0: number;
  t1: number;
}

export interface Frame {
  /** Plot box in CSS pixels. */
  left: number;
  width: number;
  vp: Viewport;
}

export const xOf = (f: Frame, t: number) => f.left + ((t - f.vp.t0) / (f.vp.t1 - f.vp.t0)) * f.width;
export const tOf = (f: Frame, x: number) => f.vp.t0 + ((x - f.left) / f.width) * (f.vp.t1 - f.vp.t0);

const MIN_SPAN_S = 1;

/** Clamps a window to the run [lo, hi] and to `maxSpan`, keeping its centre where possible. */
export function clampViewport(vp: Viewport, lo: number, hi: number, maxSpan: number): Viewport {
  let span = Math.min(Math.max(vp.t1 - vp.t0, MIN_SPAN_S), maxSpan, Math.max(hi - lo, MIN_SPAN_S));
  let t0 = vp.t0;
  if (!(vp.t1 - vp.t0 >= MIN_SPAN_S)) t0 = (vp.t0 + vp.t1) / 2 - span / 2;
  if (vp.t1 - vp.t0 > span) t0 = vp.t0 + (vp.t1 - vp.t0 - span) / 2;
  if (t0 < lo) t0 = lo;
  if (t0 + span > hi) t0 = Math.max(lo, hi - span);
  if (hi - lo < span) span = Math.max(hi - lo, MIN_SPAN_S);
  return { t0, t1: t0 + span };
}

export function zoomAround(vp: Viewport, factor: number, anchor: number): Viewport {
  return { t0: anchor - (anchor - vp.t0) * factor, t1: anchor + (vp.t1 - anchor) * factor };
}

export function pan(vp: Viewport, fraction: number): Viewport {
  const d = (vp.t1 - vp.t0) * fraction;
  return { t0: vp.t0 + d, t1: vp.t1 + d };
}

/** Binary search: index of the last element of sorted `xs` that is <= t (or -1). */
export function lastAtOrBefore(xs: ArrayLike<number>, t: number): number {
  let lo = 0;
  let hi = xs.length - 1;
  let ans = -1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (xs[mid]! <= t) {
      ans = mid;
      lo = mid + 1;
    } else hi = mid - 1;
  }
  return ans;
}

export function nearestIndex(xs: ArrayLike<number>, t: number): number {
  if (!xs.length) return -1;
  const i = lastAtOrBefore(xs, t);
  if (i < 0) return 0;
  if (i >= xs.length - 1) return xs.length - 1;
  return t - xs[i]! <= xs[i + 1]! - t ? i : i + 1;
}
