// Point-count reduction for served series: index pickers over plain typed arrays.
import { SERIES_MAX_POINTS, checkLimit } from './limits.ts';

/** Numbers a downsampler can read by index. */
export type NumericColumn = ArrayLike<number>;

function checkMaxPoints(maxPoints: number): void {
  checkLimit(SERIES_MAX_POINTS, maxPoints);
}

function identity(n: number): Int32Array {
  const out = new Int32Array(n);
  for (let i = 0; i < n; i++) out[i] = i;
  return out;
}

/**
 * Evenly spaced indices `trunc(i * (n-1)/(m-1))` for `i < m-1`, then `n-1` — numpy
 * `linspace(0, n-1, m).astype(int64)`. Unchanged (`0..n-1`) when `n <= m`. Can drop spikes.
 */
export function strideIndices(n: number, maxPoints: number): Int32Array {
  checkMaxPoints(maxPoints);
  if (n <= maxPoints) return identity(n);
  const out = new Int32Array(maxPoints);
  const step = (n - 1) / (maxPoints - 1);
  for (let i = 0; i < maxPoints - 1; i++) out[i] = Math.trunc(i * step);
  out[maxPoints - 1] = n - 1;
  return out;
}

/**
 * Min/max bucket indices over `ys[0..n)`: `B = m // 2` buckets with edges
 * `trunc(linspace(0, n, B+1))`; each non-empty bucket keeps its first argmin and first argmax.
 * Sorted, unique, at most `m` indices; the global minimum and maximum always survive.
 */
export function minmaxIndices(ys: NumericColumn, maxPoints: number, n: number = ys.length): Int32Array {
  checkMaxPoints(maxPoints);
  if (n <= maxPoints) return identity(n);
  const buckets = Math.floor(maxPoints / 2);
  const out = new Int32Array(buckets * 2);
  let k = 0;
  const step = n / buckets;
  let lo = 0;
  for (let b = 1; b <= buckets; b++) {
    const hi = b === buckets ? n : Math.trunc(b * step);
    if (hi > lo) {
      let iMin = lo;
      let iMax = lo;
      let vMin = ys[lo];
      let vMax = vMin;
      for (let i = lo + 1; i < hi; i++) {
        const v = ys[i];
        if (v < vMin) {
          vMin = v;
          iMin = i;
        } else if (v > vMax) {
          vMax = v;
          iMax = i;
        }
      }
      if (iMin === iMax) out[k++] = iMin;
      else if (iMin < iMax) {
        out[k++] = iMin;
        out[k++] = iMax;
      } else {
        out[k++] = iMax;
        out[k++] = iMin;
      }
    }
    lo = hi;
  }
  // Buckets are disjoint and ascending, so the picks are already sorted and unique.
  return out.slice(0, k);
}

/** `stride_downsample(xs, ys, m)`: both columns taken at `strideIndices`. */
export function strideDownsample(xs: NumericColumn, ys: NumericColumn, maxPoints: number): { xs: number[]; ys: number[] } {
  const idx = strideIndices(xs.length, maxPoints);
  return { xs: pick(xs, idx), ys: pick(ys, idx) };
}

/** `minmax_downsample(xs, ys, m)`: both columns taken at `minmaxIndices(ys)`. */
export function minmaxDownsample(xs: NumericColumn, ys: NumericColumn, maxPoints: number): { xs: number[]; ys: number[] } {
  const idx = minmaxIndices(ys, maxPoints, xs.length);
  return { xs: pick(xs, idx), ys: pick(ys, idx) };
}

/** The values of `column` at `indices`, as a plain JSON-ready array. */
export function pick(column: NumericColumn, indices: ArrayLike<number>): number[] {
  const out = new Array<number>(indices.length);
  for (let i = 0; i < indices.length; i++) out[i] = column[indices[i]];
  return out;
}
