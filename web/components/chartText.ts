// A chart told in words, for a keyboard or screen-reader user: which point the arrow keys move to, what is said there,
// and a short summary of each series (points, x range, last value, min, max).
import { fmtNum } from '../format.ts';

/** The keys that move a chart's cursor, and what each does. */
export type CursorKey = 'ArrowLeft' | 'ArrowRight' | 'Home' | 'End' | 'PageUp' | 'PageDown';

export function isCursorKey(key: string): key is CursorKey {
  return key === 'ArrowLeft' || key === 'ArrowRight' || key === 'Home' || key === 'End' || key === 'PageUp' || key === 'PageDown';
}

/** Points PageUp/PageDown move over: a tenth of the points in view, at least one. */
export function pageSize(inView: number): number {
  return Math.max(1, Math.round(inView / 10));
}

/**
 * The data index a key moves the cursor to, inside the points in view `[i0, i1]`. With no cursor yet, → and
 * PageDown start at the first point in view and ← and PageUp at the last; an index outside the view (the chart was
 * zoomed since) is brought back into it. Null when nothing is in view.
 */
export function cursorStep(key: CursorKey, cur: number | null, i0: number, i1: number): number | null {
  if (i1 < i0 || i0 < 0) return null;
  const page = pageSize(i1 - i0 + 1);
  const clamp = (i: number) => Math.min(i1, Math.max(i0, i));
  switch (key) {
    case 'Home':
      return i0;
    case 'End':
      return i1;
    case 'ArrowRight':
      return cur === null ? i0 : clamp(cur + 1);
    case 'ArrowLeft':
      return cur === null ? i1 : clamp(cur - 1);
    case 'PageDown':
      return cur === null ? i0 : clamp(cur + page);
    case 'PageUp':
      return cur === null ? i1 : clamp(cur - page);
  }
}

/** The first and last index of sorted `xs` inside `[min, max]` (an empty range is `[0, -1]`). */
export function indicesInView(xs: ArrayLike<number>, min: number | null | undefined, max: number | null | undefined): [number, number] {
  let i0 = 0;
  let i1 = xs.length - 1;
  if (min != null) while (i0 <= i1 && xs[i0]! < min) i0++;
  if (max != null) while (i1 >= i0 && xs[i1]! > max) i1--;
  return i1 < i0 ? [0, -1] : [i0, i1];
}

/** Series named in one readout at most; the rest are counted. */
export const READOUT_SERIES = 8;

/**
 * What is said at a point: the x value and its place among the points, then each series' value there (a series with
 * no value at this x is said to have none).
 */
export function readoutText(x: { label: string; text: string }, place: { at: number; of: number }, series: readonly { label: string; text: string | null }[]): string {
  const shown = series.slice(0, READOUT_SERIES).map((s) => `${s.label} ${s.text ?? 'no value'}`);
  const more = series.length > READOUT_SERIES ? `, and ${series.length - READOUT_SERIES} more series` : '';
  return `${x.label} ${x.text} (point ${place.at} of ${place.of}): ${shown.join(', ')}${more}`;
}

/** Series summarised in a chart's description at most; the rest are counted. */
export const SUMMARY_SERIES = 6;

/**
 * A chart's summary: per series its points, the x range they cover, its last value and its smallest and largest
 * value ("200 points, rollout/step 0–199, last 0.656, min 0.170, max 0.660"). Gaps (null, NaN) are not points. A
 * series with an x label of its own (its step key, when the series are on different ones) names that instead.
 */
export function seriesSummary(
  xLabel: string,
  series: readonly { label: string; x: ArrayLike<number>; y: ArrayLike<number | null | undefined>; xLabel?: string }[],
  fmtX: (v: number) => string = String,
): string {
  const parts = series.slice(0, SUMMARY_SERIES).map((s) => {
    let n = 0;
    let min = Infinity;
    let max = -Infinity;
    let first = -1;
    let last = -1;
    for (let i = 0; i < s.y.length; i++) {
      const v = s.y[i];
      if (v == null || !Number.isFinite(v)) continue;
      n++;
      if (first < 0) first = i;
      last = i;
      if (v < min) min = v;
      if (v > max) max = v;
    }
    const own = series.length > 1 ? `${s.label}: ` : '';
    if (n === 0) return `${own}no values`;
    return `${own}${n} point${n === 1 ? '' : 's'}, ${s.xLabel ?? xLabel} ${fmtX(s.x[first]!)}–${fmtX(s.x[last]!)}, last ${fmtNum(s.y[last])}, min ${fmtNum(min)}, max ${fmtNum(max)}`;
  });
  const more = series.length > SUMMARY_SERIES ? `; and ${series.length - SUMMARY_SERIES} more series` : '';
  return `${parts.join('; ')}${more}.`;
}
