// `/api/metrics` (scalar series per key) and the advisories (`/api/advisory`, `/api/rlsight/advisory`).
import type { StepCoverage } from './answers.ts';
import type { Coverage } from './timeline.ts';

/** A logged value: numbers mostly, strings and booleans as written. */
export type MetricValue = number | string | boolean;

export interface MetricSeries {
  x: number[];
  y: (MetricValue | null)[];
  ts: number[];
  /**
   * A series derived from the run's steps (`dump/*`; a slime or collected run's computed keys), asked with
   * `progressive` while the server still reads the steps: the points of the steps read so far.
   */
  coverage?: StepCoverage;
  /**
   * rlsight's own: the points logged as NaN or ±Infinity, which JSON (and `y`) holds as null, by their index in
   * `y`, with the value as Python writes it. Absent when every point is finite.
   */
  nonfinite?: [number, 'NaN' | 'Infinity' | '-Infinity'][];
}

/** Keyed by the requested metric key. */
export type MetricsAnswer = Record<string, MetricSeries>;

/** The per-step aggregates of the dumps, served as `dump/<name>` metric keys. */
export type StepAggregateMetric =
  | 'reward_mean'
  | 'reward_std'
  | 'response_length_mean'
  | 'truncated_frac'
  | 'zero_std_group_frac'
  | 'mean_abs_lp_diff'
  | 'mean_entropy'
  | 'mixed_version_frac';

export type DumpMetricKey = `dump/${StepAggregateMetric}`;

export type AdvisoryLevel = 'critical' | 'warning' | 'info';

export interface Advisory {
  level: AdvisoryLevel;
  message: string;
}

/** A span of wall-clock seconds. */
export interface AdvisoryWindow {
  t0: number;
  t1: number;
}

/** An advisory with what it concerns: a window (null when no time span applies) and a lane selection. */
export interface LocatedAdvisory extends Advisory {
  window: AdvisoryWindow | null;
  /** Lane-grammar text (`rank:3-5`, `engine:http://10.0.0.1:15000`, `role:train`), or null for every lane. */
  lanes: string | null;
}

export interface Mfu {
  latest: number;
  mean: number;
  steps: number;
  /** The last logged peak TFLOP/s, or null when MFU is logged without one. */
  peak: number | null;
}

/** `/api/advisory`: the reference's body. */
export interface AdvisoryAnswer {
  advisories: Advisory[];
  mfu: Mfu | null;
  /** rlsight's own, while the telemetry history is still being read (see `LocatedAdvisoryAnswer`). */
  coverage?: Coverage;
}

/** `/api/rlsight/advisory`: each advisory with the window and lanes it concerns. */
export interface LocatedAdvisoryAnswer {
  advisories: LocatedAdvisory[];
  mfu: Mfu | null;
  /** Present while the telemetry history is still being read: the advisories judged the hours read so far. */
  coverage?: Coverage;
}
