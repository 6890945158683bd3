// Keyboard zoom of the Metrics charts, with Compute Utilization's keys: W/S zoom in and out, A/D pan, Esc resets.
import type { KeyAction } from '../../keyboard.ts';
import type { StepCoverage } from '../../../src/wire/index.ts';
import { pan, zoomAround } from '../timeline/viewport.ts';

/** Compute Utilization's steps: a zoom keeps 70% of the window, a pan moves it by a fifth. */
const ZOOM_FACTOR = 0.7;
const PAN_FRACTION = 0.2;

/**
 * The window a zoom key asks for, from the window shown (`current`) inside the chart's full range: null for the full
 * range (a reset, or a zoom out or pan that reaches both ends). A zoom keeps `anchor` (the cursor's x, else the
 * middle) where it is; a pan stops at the ends of the full range.
 */
export function zoomByKey(action: KeyAction, current: [number, number], full: [number, number], anchor?: number | null): [number, number] | null {
  if (action === 'reset') return null;
  const [lo, hi] = full;
  const vp = { t0: current[0], t1: current[1] };
  const at = anchor != null && anchor >= vp.t0 && anchor <= vp.t1 ? anchor : (vp.t0 + vp.t1) / 2;
  let next =
    action === 'zoomIn'
      ? zoomAround(vp, ZOOM_FACTOR, at)
      : action === 'zoomOut'
        ? zoomAround(vp, 1 / ZOOM_FACTOR, at)
        : action === 'panLeft'
          ? pan(vp, -PAN_FRACTION)
          : action === 'panRight'
            ? pan(vp, PAN_FRACTION)
            : vp;
  const span = next.t1 - next.t0;
  if (span >= hi - lo) return null;
  // kept inside the full range, its span unchanged
  if (next.t0 < lo) next = { t0: lo, t1: lo + span };
  if (next.t1 > hi) next = { t0: hi - span, t1: hi };
  return [next.t0, next.t1];
}

/** Share of the x span kept clear at each end of the full view, so the first and last points are drawn whole. */
const X_EDGE_PAD = 0.025;

/**
 * A chart's full x range, the one rule for a chart's own axis and for the page's keys: its data (`xs`, ascending),
 * the axis' extent over all charts (every compared run) and the steps not read yet (`unread`, runs of step ids from
 * any number of charts), with a margin at both ends.
 */
export function fullXRange(xs: ArrayLike<number> | null | undefined, extent: [number, number] | null | undefined, unread: readonly [number, number][]): [number, number] | null {
  let lo = Infinity;
  let hi = -Infinity;
  if (xs?.length) {
    lo = xs[0]!;
    hi = xs[xs.length - 1]!;
  }
  if (extent) {
    lo = Math.min(lo, extent[0]);
    hi = Math.max(hi, extent[1]);
  }
  // a step is a unit wide, so an unread run reaches half a step past its ids
  for (const [a, b] of unread) {
    lo = Math.min(lo, a - 0.5);
    hi = Math.max(hi, b + 0.5);
  }
  if (!Number.isFinite(lo) || !Number.isFinite(hi)) return null;
  const pad = hi > lo ? (hi - lo) * X_EDGE_PAD : 1;
  return [lo - pad, hi + pad];
}

/** A chart on the page as the page's keys see it: its x axis and the steps its series has not read yet. */
export interface ChartAxis {
  xLabel: string;
  coverage?: StepCoverage;
}

/**
 * The full range the keys zoom in when no chart is focused: every chart shares one window (a drag on one chart sets
 * it), so it is the full range (`fullXRange`) of the x axis most charts are on, over every chart on that axis' unread
 * steps, not the span of every axis at once (rollout/step 0-199 beside train/step 0-1599: one zoom in left the
 * rollout charts empty).
 */
export function sharedZoomRange(charts: readonly ChartAxis[], extents: ReadonlyMap<string, [number, number]>): [number, number] | null {
  const counts = new Map<string, number>();
  for (const { xLabel } of charts) if (extents.has(xLabel)) counts.set(xLabel, (counts.get(xLabel) ?? 0) + 1);
  let best: string | null = null;
  for (const [l, n] of counts) if (best === null || n > counts.get(best)!) best = l;
  if (best === null) return null;
  const unread = charts.filter((c) => c.xLabel === best).flatMap((c) => c.coverage?.unread ?? []);
  return fullXRange(null, extents.get(best), unread);
}
