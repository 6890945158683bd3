// `/api/rollout/{id}/…`: a step's samples and groups as tables, lifecycle lanes, one sample's conversation and tokens.

export type Cell = number | string | boolean | null;
export type TableRow = Record<string, Cell>;

/** One row per sample (summary) or per group (groups), every row with the same keys in `columns` order. */
export interface RolloutTable {
  rollout_id: number;
  evaluation: boolean;
  columns: string[];
  rows: TableRow[];
  /**
   * Present when `staleness` is not counted in rollout steps: `newest_version` — the run's weight versions count
   * weight updates (slime's SGLang versions), so a sample's staleness is the newest version among the step's
   * samples minus its own oldest. Absent: the step's rollout id minus the sample's oldest version.
   */
  staleness_from?: 'newest_version';
}

/**
 * `/api/rlsight/rollout/{id}/preview`: the step's summary as soon as its samples are decoded. While its train
 * side is still being joined, `train_pending` is true and the train columns are absent (the table of a step
 * without train data); once the step is read it is the summary itself. Asked with `first=true`, it may come
 * sooner with only the first samples of the dump, whole groups in batch order: then `first_samples` is true.
 */
export interface RolloutPreview extends RolloutTable {
  train_pending?: true;
  first_samples?: true;
}

export interface TrajectorySegment {
  kind: 'gen' | 'tool';
  t0: number | null;
  t1: number | null;
  turn: number;
  weight_version: string;
}

export interface TrajectoryAttempt {
  t0: number | null;
  t1: number | null;
}

/** One sample's lifecycle: its attempts and generation/tool segments. */
export interface Trajectory {
  sample_index: number;
  group_index: number;
  first_ts: number;
  last_ts: number;
  segments: TrajectorySegment[];
  attempts: TrajectoryAttempt[];
  /** Detail of the last `attempt_end` with one (the final `Sample.Status`), null before any. */
  status: string | null;
  /** Sorted distinct numeric weight versions seen on any of the sample's events. */
  versions: number[];
}

export interface Trajectories {
  lanes: Trajectory[];
  /** When the step's batch was consumed: its bubble's ts, else the newest data; null for a run without data. */
  consume_ts: number | null;
  t0: number | null;
}

/** `/api/rlsight/samples/{index}/step`: the train step whose batch holds a sample, and its lifecycle there. */
export interface SampleStep {
  sample_index: number;
  rollout_id: number;
  /** Null when the telemetry recorded no event of the sample near that step. */
  lane: Trajectory | null;
}

export interface ToolCall {
  id?: string;
  type?: string;
  function?: { name?: string; arguments?: unknown };
  name?: string;
  arguments?: unknown;
}

export interface Message {
  role: string;
  content: unknown;
  reasoning_content?: string | null;
  tool_calls?: ToolCall[] | null;
  name?: string | null;
  tool_call_id?: string | null;
}

/** A trajectory sidecar row as the run wrote it (fields beyond these pass through untouched). */
export interface Conversation {
  sample_index: number;
  /** Null when the sample recorded none (and in the empty shape of a sample without a conversation). */
  group_index: number | null;
  status: string | null;
  reward: number | null;
  prompt: unknown;
  messages: Message[];
  [field: string]: unknown;
}

/** A per-token statistic over the response (null where the loss mask is off). */
export type TokenStatValues = (number | null)[] | null;

/** Tokens `[start, end)` of one sample with its per-token statistics. */
export interface TokenView {
  rollout_id: number;
  sample_index: number;
  evaluation: boolean;
  total_len: number;
  prompt_len: number;
  start: number;
  end: number;
  response_offset: number;
  token_ids: number[];
  token_text: string[] | null;
  rollout_log_probs: TokenStatValues;
  loss_mask: number[] | null;
  train_log_probs: TokenStatValues;
  ref_log_probs: TokenStatValues;
  lp_diff: TokenStatValues;
  imp_ratio: TokenStatValues;
  entropy: TokenStatValues;
  ref_entropy: TokenStatValues;
  advantages: TokenStatValues;
  returns: TokenStatValues;
}

/** The per-token statistics a token view may carry. */
export type TokenStat = {
  [K in keyof TokenView]: TokenView[K] extends TokenStatValues ? (TokenStatValues extends TokenView[K] ? K : never) : never;
}[keyof TokenView];
