// The time bounds a selective read of an hour keeps rows within.

/** The stamps a selective read must keep every row of: `[from, to]` (an infinite end: no bound on that side). */
export interface TimeBounds {
  readonly from: number;
  readonly to: number;
}

export const UNBOUNDED: TimeBounds = { from: -Infinity, to: Infinity };

/** Whether a read within `held` keeps every row a read within `wanted` keeps. */
export function boundsCover(held: TimeBounds, wanted: TimeBounds): boolean {
  return held.from <= wanted.from && held.to >= wanted.to;
}
