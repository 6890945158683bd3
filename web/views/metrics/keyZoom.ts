// Keyboard zoom of the Metrics charts, with Compute Utilization's keys: W/S zoom in and out, A/D pan, Esc resets.
import type { KeyAction } from '../../keyboard.ts';
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

/**
 * The full range the keys zoom in when no chart is focused: every chart shares one window (a drag on one chart sets
 * it), so it is the range of the x axis most charts are on (`labels`, one per chart), not the span of every axis at
 * once (rollout/step 0-199 beside train/step 0-1599: one zoom in left the rollout charts empty).
 */
export function sharedZoomRange(labels: readonly string[], extents: ReadonlyMap<string, [number, number]>): [number, number] | null {
  const counts = new Map<string, number>();
  for (const l of labels) if (extents.has(l)) counts.set(l, (counts.get(l) ?? 0) + 1);
  let best: string | null = null;
  for (const [l, n] of counts) if (best === null || n > counts.get(best)!) best = l;
  return best === null ? null : extents.get(best)!;
}
