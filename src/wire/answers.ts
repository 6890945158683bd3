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
  /** The step's dump could not be read: the file and the problem (also in the answer's `warnings`). */
  damaged?: string;
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
  /** Present while the server still reads the run's steps: the rows are those of the steps read so far. */
  coverage?: StepCoverage;
}

/**
 * How many of a run's train steps a step-wide answer (the health board, the `dump/*` series; for a slime or
 * collected run also its computed series, `/api/meta` and its runs-table row) was read over: present only on a
 * partial answer, given while the server still reads the steps in the background. A complete answer has no
 * `coverage`. A slime or collected run's `eval/` series count its eval steps instead, and its `/api/meta` and
 * runs-table row both kinds (a rollout id is unread there while its train or eval step is).
 */
export interface StepCoverage {
  /** Train steps read, of all the run holds. */
  steps_done: number;
  steps_total: number;
  /** The steps not read yet, as runs of consecutive step ids (`[first, last]`, ascending): the answer has nothing of them. */
  unread: [number, number][];
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
  | { type: 'progress'; run?: string; step: number; evaluation: boolean; steps_scanned: number; steps_total: number }
  | {
      type: 'done';
      matches: number;
      truncated: boolean;
      steps_scanned: number;
      steps_total: number;
      elapsed_ms: number;
      warnings: string[];
      /** How the query was read when that is not what it looks like (a bare number no sample has as its index is searched as text). */
      note?: string;
    }
  | { type: 'error'; detail: string };

/** One step of one run. */
export interface StepRef {
  run: string;
  step: number;
  evaluation: boolean;
}

export interface SummaryStats {
  n: number;
  mean: number | null;
  median: number | null;
}

/** A per-sample value on both sides: overlaid histograms over shared bins. */
export interface DistributionDiff {
  metric: string;
  label: string;
  a: SummaryStats;
  b: SummaryStats;
  /** b.mean − a.mean; null when a side has no value, or the sides count it in different units (see `note`). */
  delta_mean: number | null;
  /** Present when the two sides count the values in different units (staleness in rollout steps and in weight updates): says which. */
  note?: string;
  /** Bin edges (bins + 1 of them). */
  edges: number[];
  /** Every value is a whole number: the edges lie half-way between them, the outer ones half a unit past the extremes. */
  integral: boolean;
  counts_a: number[];
  counts_b: number[];
}

export type GroupOutcome = 'solved' | 'failed' | 'mixed';

export interface GroupSide {
  group_index: number | null;
  n: number;
  reward_mean: number | null;
  outcome: GroupOutcome;
  best_sample: number | null;
  worst_sample: number | null;
}

/** A group (matched by prompt) whose outcome differs between the two steps. */
export interface FlippedGroup {
  prompt: string;
  a: GroupSide;
  b: GroupSide;
}

export interface MetricPair {
  key: string;
  a: number | null;
  b: number | null;
  delta: number | null;
}

export interface MovedSide {
  sample_index: number;
  reward: number | null;
  response_length: number | null;
}

/** A pair of samples of the same prompt, one per side, and how much they differ. */
export interface MovedSample {
  prompt: string;
  a: MovedSide;
  b: MovedSide;
  delta_reward: number | null;
  delta_length: number | null;
}

export interface StepDiff {
  a: StepRef;
  b: StepRef;
  distributions: DistributionDiff[];
  /** Groups present on both sides (by prompt). */
  groups_matched: number;
  flipped: FlippedGroup[];
  metrics: MetricPair[];
  moved: MovedSample[];
}

export interface SampleSide extends StepRef {
  sample_index: number;
  group_index: number | null;
  reward: number | null;
  status: string | null;
  response_length: number;
  /** The response as recorded, or null when the dump has none. */
  text: string | null;
  /** The response's tokens decoded one by one (null without a tokenizer). */
  token_text: string[] | null;
}

/** `same`: tokens both responses have; `deleted`: only A's; `inserted`: only B's. */
export type StretchKind = 'same' | 'deleted' | 'inserted';

/** A run of aligned columns of one kind; positions are response token positions, ends exclusive. */
export interface AlignedStretch {
  kind: StretchKind;
  /** Its first column on the aligned axis. */
  column: number;
  a_start: number;
  a_end: number;
  b_start: number;
  b_end: number;
}

/** The edit alignment of the two responses' token ids. */
export interface TokenAlignment {
  /** `edit`: a shortest edit script; `prefix_suffix`: the edit cap was reached and only the common prefix and suffix are matched. */
  method: 'edit' | 'prefix_suffix';
  fell_back: boolean;
  /** Edits (inserted plus deleted tokens) searched at most. */
  edit_cap: number;
  /** Columns of the aligned axis (matched + deleted + inserted). */
  columns: number;
  matched: number;
  deleted: number;
  inserted: number;
  stretches: AlignedStretch[];
}

export interface SampleDiff {
  a: SampleSide;
  b: SampleSide;
  /** Where the two responses first differ: token position and character offset (null when identical or unknown). */
  first_divergence: { token: number | null; char: number | null };
  alignment: TokenAlignment;
  /** Per-token series over the alignment's columns, one array per side (null where that side has no token). */
  series: { name: string; a: (number | null)[]; b: (number | null)[] }[];
}
