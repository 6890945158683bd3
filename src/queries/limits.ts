// Every limit a query puts on its arguments, named once, with the rule that checks it. The server builds its
// request schemas from these; the queries check the same rules when called directly.
import { pyFixed, pyRepr } from '../formats/pythonFormat.ts';

/** A request argument that cannot be used: malformed, out of range, or unknown (HTTP 400 naming it). */
export class BadArgument extends Error {
  override readonly name = 'BadArgument';
  constructor(
    /** The parameter at fault (`t1`, `lanes`, `rollout_id`, …). */
    readonly param: string,
    message: string,
  ) {
    super(message);
  }
}

/** The widest timeline window a query answers (4 h), in seconds. */
export const MAX_WINDOW_S = 14400;

/** Latest metric values the runs table may ask for at once (`latest`: one metrics read per run and key). */
export const MAX_LATEST_KEYS = 16;

/** The `latest` keys of the runs table, refused past `MAX_LATEST_KEYS`. */
export function checkLatestKeys(keys: readonly string[]): readonly string[] {
  if (keys.length > MAX_LATEST_KEYS) throw new BadArgument('latest', `latest: at most ${MAX_LATEST_KEYS} metric keys`);
  return keys;
}

/** An integer argument: its parameter name, bounds and the value used when it is absent. */
export interface IntLimit {
  readonly param: string;
  readonly min: number;
  readonly max?: number;
  readonly fallback: number;
}

export const HEATMAP_X_BUCKETS: IntLimit = { param: 'x_buckets', min: 2, max: 4000, fallback: 1200 };
export const FLEET_X_BUCKETS: IntLimit = { param: 'x_buckets', min: 2, max: 4000, fallback: 600 };
/** rlsight's `max_rows` of the lifecycle heatmap: density rows at most (absent = the reference's first 1,024 requests). */
export const REQUEST_STRIP_ROWS: IntLimit = { param: 'max_rows', min: 1, max: 4000, fallback: 4000 };
export const OUTLIER_TOP_K: IntLimit = { param: 'top_k', min: 1, max: 256, fallback: 16 };
/** Matches one search answers at most (`limit`). */
export const SEARCH_RESULTS: IntLimit = { param: 'limit', min: 1, max: 1000, fallback: 200 };
/** Different words and phrases one text search may ask for (each is a pass over every text of a step). */
export const MAX_QUERY_TERMS = 32;
/** Points per GPU or engine series after downsampling. */
export const SERIES_MAX_POINTS: IntLimit = { param: 'max_points', min: 2, fallback: 2000 };

/** What is wrong with `value` under `limit`, or null when it is within it. */
export function limitProblem(limit: IntLimit, value: number): string | null {
  const { param, min, max } = limit;
  if (max !== undefined) return Number.isInteger(value) && value >= min && value <= max ? null : `${param}=${value} out of range [${min}, ${max}]`;
  return Number.isInteger(value) && value >= min ? null : `${param}=${value} must be >= ${min}`;
}

/** `value`, or a 400 on the limit's parameter. */
export function checkLimit(limit: IntLimit, value: number): number {
  const problem = limitProblem(limit, value);
  if (problem !== null) throw new BadArgument(limit.param, problem);
  return value;
}

/** What is wrong with a timeline window (`t1 <= t0`, or wider than MAX_WINDOW_S), or null; a missing bound leaves that side open. */
export function windowProblem(t0: number | null | undefined, t1: number | null | undefined): string | null {
  if (t0 == null || t1 == null) return null;
  if (!(t1 > t0)) return `bad window: t1=${pyRepr(t1)} <= t0=${pyRepr(t0)}`;
  if (!Number.isFinite(t1 - t0)) return `window t1 - t0 is not a finite number of seconds (t0=${pyRepr(t0)}, t1=${pyRepr(t1)}); max_window_s is ${MAX_WINDOW_S}`;
  if (t1 - t0 > MAX_WINDOW_S) return `window ${pyFixed(t1 - t0, 0)}s exceeds max_window_s ${MAX_WINDOW_S}`;
  return null;
}

/** A bad window is a 400 on `t1`. */
export function checkTimelineWindow(t0: number | null | undefined, t1: number | null | undefined): void {
  const problem = windowProblem(t0, t1);
  if (problem !== null) throw new BadArgument('t1', problem);
}

/**
 * Edits (inserted plus deleted tokens, past the common prefix and suffix) the sample diff's token alignment
 * searches at most. Myers' search costs about the square of the edits it explores (measured: ~16 ms at 500,
 * ~0.4 s at 2,000 on a 9,000-token pair), so two unrelated long responses stop here and fall back to their
 * common prefix and suffix with one replaced stretch between.
 */
export const TOKEN_ALIGNMENT_EDIT_CAP = 1024;
