// The timeline window rule (checked only when both bounds are given) and shared query-size checks.
import { MAX_WINDOW_S } from '../run/telemetry/records.ts';
import { badArgument } from './errors.ts';
import { pyFixed, pyRepr } from './pythonFormat.ts';

/** `t1 <= t0` or a span over 4 h is a 400 on `t1`; a missing bound leaves that side open. */
export function checkTimelineWindow(t0: number | null | undefined, t1: number | null | undefined): void {
  if (t0 == null || t1 == null) return;
  if (!(t1 > t0)) throw badArgument('t1', `bad window: t1=${pyRepr(t1)} <= t0=${pyRepr(t0)}`);
  if (t1 - t0 > MAX_WINDOW_S) throw badArgument('t1', `window ${pyFixed(t1 - t0, 0)}s exceeds max_window_s ${MAX_WINDOW_S}`);
}

/** An integer size parameter within `[lo, hi]`. */
export function checkIntRange(param: string, value: number, lo: number, hi: number): void {
  if (!Number.isInteger(value) || value < lo || value > hi) throw badArgument(param, `${param}=${value} out of range [${lo}, ${hi}]`);
}

/** An integer size parameter of at least `lo`. */
export function checkIntAtLeast(param: string, value: number, lo: number): void {
  if (!Number.isInteger(value) || value < lo) throw badArgument(param, `${param}=${value} must be >= ${lo}`);
}
