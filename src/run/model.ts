// The run model: what an open run yields to the queries, whatever wrote it. Each format (miles today; slime,
// live collection next) is one adapter folder beside this file that opens a run directory into a RunModel.
// The model yields records — samples, train digests, per-token values, conversations, telemetry columns —
// never finished answers: the queries assemble those.
import type { TensorNumbers } from '../formats/torch/tensorData.ts';
import type { TelemetryStore } from './telemetry/store.ts';

/** The numeric elements of a per-token value. */
export type Numbers = TensorNumbers;

/** Train and eval rollout steps with samples, ascending. */
export interface RolloutIds {
  train: number[];
  eval: number[];
}

/** One rollout sample as the rollout side recorded it. */
export interface SampleRecord {
  /** Position in the step's batch: the index space of batch-global train values such as the raw rewards. */
  position: number;
  /** The run-global sample id, the key the train side joins on. */
  index: number | null;
  groupIndex: number | null;
  status: string;
  removeSample: boolean;
  responseLength: number;
  totalLength: number;
  /** The scalar reward (a boolean reward as 1/0), or null when it is not one number (e.g. several rewards). */
  reward: number | null;
  /** The policy weight version of each generation turn. */
  weightVersions: string[];
  /** Tool messages in a chat prompt, null when the prompt is not a chat. */
  promptToolMessages: number | null;
  nonGenerationTime: number;
  specAcceptTokens: number | null;
  specDraftTokens: number | null;
  cachedTokens: number | null;
  totalPromptTokens: number | null;
}

/** The train side of one sample reduced to per-sample values (loss-masked over the response). */
export interface TrainDigest {
  normalized_reward: number | null;
  /** As the trainer saw it; null when it did not record it (the rollout status decides then). */
  truncated: boolean | null;
  dumped_rank: number;
  mean_entropy: number | null;
  max_entropy: number | null;
  ref_entropy_mean: number | null;
  mean_abs_lp_diff: number | null;
  max_abs_lp_diff: number | null;
  mean_imp_ratio: number | null;
  adv_mean: number | null;
  adv_std: number | null;
  return_mean: number | null;
  alignment_failed: boolean;
}

/** One step's records: its samples in batch order and, for train steps, the train side joined by sample id. */
export interface StepRecords {
  rolloutId: number;
  evaluation: boolean;
  samples: readonly SampleRecord[];
  /** By `SampleRecord.index`; empty without train data. */
  digests: ReadonlyMap<number, TrainDigest>;
  /** The batch-global raw rewards, by `SampleRecord.position`; null without train data. */
  rawRewards: readonly (number | null)[] | null;
}

/** A sample's per-token train values, response-relative. */
export interface TrainTokens {
  lossMask: Numbers | null;
  logProbs: Numbers | null;
  rolloutLogProbs: Numbers | null;
  refLogProbs: Numbers | null;
  entropy: Numbers | null;
  refEntropy: Numbers | null;
  advantages: Numbers | null;
  returns: Numbers | null;
}

/** One sample's tokens: the rollout side and, for a train step, the train side. */
export interface SampleTokenRecord {
  rolloutId: number;
  sampleIndex: number;
  evaluation: boolean;
  totalLength: number;
  responseLength: number;
  tokens: ArrayLike<number>;
  /** The rollout engine's own log-probs over the response, or null when it recorded none. */
  rolloutLogProbs: ArrayLike<number> | null;
  train: TrainTokens | null;
  /** Decodes one token id on its own, or null when the run has no tokenizer. */
  decodeToken: ((id: number) => string) | null;
}

/** The searchable text of one sample: named text fields (`prompt`, `response`, `label`, `conversation`, `metadata`) and its ids. */
export interface SampleTextRecord {
  sampleIndex: number;
  groupIndex: number | null;
  status: string;
  reward: number | null;
  fields: Record<string, string>;
  /** Identifiers recorded with the sample: request ids, trace ids, session ids. */
  ids: string[];
}

/** A recorded conversation row as the run wrote it, keyed by its sample id. */
export type ConversationRecord = Record<string, unknown> & { sample_index: number };

/**
 * An open run. Every method reads only what it needs, lazily; failures are typed (see errors.ts). Nothing
 * here writes inside the run directory.
 */
export interface RunModel {
  /** The adapter that opened it (`miles`, …). */
  readonly format: string;
  /** The run directory (absolute). */
  readonly dir: string;
  /** The telemetry streams (`dashboard/`): columns, lanes, metrics records. */
  readonly telemetry: TelemetryStore;
  /** Absolute directories whose paths must never appear in an answer. */
  readonly roots: readonly string[];
  /** Where derived caches may be written (never inside the run), or null. */
  readonly cacheDir: string | null;
  rolloutIds(): Promise<RolloutIds>;
  /** One step's records; NotFound when the run has no such step. */
  step(rolloutId: number, evaluation: boolean): Promise<StepRecords>;
  /** One sample's tokens with their per-token values. */
  sampleTokens(rolloutId: number, sampleIndex: number, evaluation: boolean): Promise<SampleTokenRecord>;
  /** One step's recorded conversations by sample id; null when the step recorded none. */
  conversations(rolloutId: number, evaluation: boolean): Promise<ReadonlyMap<number, ConversationRecord> | null>;
  /** Every sample's searchable text, in batch order. */
  sampleTexts(rolloutId: number, evaluation: boolean): Promise<SampleTextRecord[]>;
  /**
   * The same texts in order, in batches handed out while the step is still being read (the first long before
   * its dump is decoded). A format without it hands out `sampleTexts` as one batch.
   */
  sampleTextBatches?(rolloutId: number, evaluation: boolean): AsyncIterable<SampleTextRecord[]>;
  /**
   * Changes whenever the files a step's texts come from change, so derived data (the search index) can be
   * kept until then. A format without it has its texts re-read by every search.
   */
  stepStamp?(rolloutId: number, evaluation: boolean): Promise<string>;
  hasTokenizer(): boolean;
  /** Reads what the run gained since the last call (`--follow`). */
  advance(): Promise<void>;
  /** Problems met while reading (skipped lines, unreadable files), as one-line messages. */
  warnings(): string[];
  close(): Promise<void>;
}

export interface OpenRunOptions {
  /** Rollout steps kept decoded in memory. */
  tensorLru?: number;
  /** Where derived caches may be written; never inside the run. */
  cacheDir?: string;
  /** Bytes the resident telemetry columns may hold (see `TelemetryStore`). */
  memoryBudget?: number;
}

/** A format: whether a directory is one of its runs, and how to open it. */
export interface RunAdapter {
  readonly format: string;
  /** Whether `dir` holds what this format writes (cheap: a few stats). */
  detect(dir: string): boolean;
  open(dir: string, options?: OpenRunOptions): Promise<RunModel>;
}
