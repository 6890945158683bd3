// `/api/meta`: what a run holds and what the app may show of it.
import type { StepCoverage } from './answers.ts';

/** Rollout steps with dumps: train steps and eval steps, ascending. */
export interface RolloutIds {
  train: number[];
  eval: number[];
}

/** What the app may show of a run. */
export interface Capabilities {
  has_metrics: boolean;
  has_tokenizer: boolean;
  has_timeline: boolean;
  has_engine_series: boolean;
  /** The widest timeline window a query answers, in seconds. */
  max_window_s: number;
  use_utilization_overview: boolean;
}

/** The background warm-up: hours of telemetry history persisted in the cache directory, of all. */
export interface WarmUpProgress {
  hours_done: number;
  hours_total: number;
}

export interface Meta {
  /** `follow` when the server tails a live run (`--follow`). */
  mode: 'follow' | 'static';
  run_name: string | null;
  start_ts: number | null;
  wandb_url: string | null;
  data_buffer_length: number | null;
  time_range: [number, number] | null;
  rollout_ids: RolloutIds;
  metric_keys: string[];
  engine_metric_keys: string[];
  step_keys: string[];
  capabilities: Capabilities;
  /**
   * rlsight's own: the window the timeline opens on (the newest stretch), in seconds, when narrower than
   * `capabilities.max_window_s`: the run's GPU telemetry is so dense that a first, cold read of the widest
   * window would keep the view waiting. Absent: open on the widest.
   */
  default_window_s?: number;
  /** Present while the background warm-up runs (only with a cache directory, not with `--no-cache`; absent once every hour is done). */
  warmup?: WarmUpProgress;
  /**
   * rlsight's own, for a slime or collected run whose steps the server still reads in the background: `metric_keys`
   * names the keys computed from the steps read so far. Absent once every step is read.
   */
  coverage?: StepCoverage;
  /** What was found damaged and skipped (one line per file and problem, relative to the run); absent when nothing is. */
  warnings?: string[];
  /** rlsight's own: whether `rlsight collect` is recording the run (`running`) or has stopped (`stopped`); absent when it never recorded it. */
  recorder?: 'running' | 'stopped';
  /**
   * rlsight's own, on a followed run: once its newest data is this many seconds old it is quiet, not live (the
   * runs table's rule, so the header and the table say the same).
   */
  live_edge_s?: number;
  /**
   * rlsight's own: present when the run records per-request traces (a slime or collected run), which the Trace view
   * and `/api/rlsight/trace` show; absent, every trace request is a 404 saying the run holds none.
   */
  traces?: true;
}
