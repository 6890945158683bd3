// rlsight's answers no single chart gives: the health board, search matches, step and sample diffs.

/** The health board's signals. */
export type HealthSignal =
  | 'zero_std'
  | 'lp_drift'
  | 'imp_ratio'
  | 'truncation'
  | 'mixed_version'
  | 'staleness'
  | 'reward_jump'
  | 'length_jump'
  | 'step_time'
  | 'engine_restart'
  | 'straggler';

/** A cell is `warn` above `warn` and `fire` above `fire` (strictly). */
export interface Threshold {
  warn: number;
  fire: number;
}

export interface SignalSpec extends Threshold {
  id: HealthSignal;
  label: string;
  /** What the value measures, for the board's header and the README. */
  doc: string;
}

export type HealthLevel = 'ok' | 'warn' | 'fire' | 'none';

/** Where the evidence for a cell is shown. */
export type Evidence =
  | { view: 'rollout'; step: number; tab?: 'groups'; sort?: string }
  | { view: 'sample'; step: number; sample_index: number; color?: string }
  | { view: 'metrics'; keys: string[] }
  | { view: 'timeline'; t0: number; t1: number; lanes?: string };

export interface HealthCell {
  value: number | null;
  level: HealthLevel;
  /** One line saying what was measured (shown in the cell's tooltip and by the CLI). */
  detail: string;
  evidence: Evidence | null;
}

export interface HealthRow {
  step: number;
  cells: Record<HealthSignal, HealthCell>;
}

export interface HealthFiring {
  step: number;
  signal: HealthSignal;
  value: number;
  fire: number;
  detail: string;
}

export interface HealthAnswer {
  signals: SignalSpec[];
  rows: HealthRow[];
  /** Every cell at level `fire`, in step then signal order. */
  fired: HealthFiring[];
  warnings: string[];
}


/** One sample that matches a search. */
export interface SearchMatch {
  /** The run, when a server searches several. */
  run?: string;
  step: number;
  evaluation: boolean;
  sample_index: number;
  group_index: number | null;
  status: string;
  reward: number | null;
  /** Where it matched: prompt, response, conversation, label, metadata, id or sample_index. */
  field: string;
  snippet: string;
  /** `[start, end)` character ranges of the hits inside `snippet`. */
  highlights: [number, number][];
  /** The text of the first hit, as it appears in the field. */
  match: string;
}

/** The streamed search answer: one JSON object per line. */
export type SearchEvent =
  | ({ type: 'match' } & SearchMatch)
  | { type: 'progress'; step: number; evaluation: boolean; steps_scanned: number; steps_total: number }
  | { type: 'done'; matches: number; truncated: boolean; steps_scanned: number; steps_total: number; elapsed_ms: number; warnings: string[] }
  | { type: 'error'; detail: string };
