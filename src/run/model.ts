// The run model: what an open run yields to the queries, whatever wrote it. Each format (miles, slime, a
// collected run) is one adapter folder beside this file that opens a run directory into a RunModel, and one
// line in open.ts. What a format lacks is an absent capability: `telemetry` (a slime dump) or `traces`.
// The model yields records — samples, train digests, per-token values, conversations, telemetry columns —
// never finished answers: the queries assemble those.
//
// Everything above src/run/ (queries, server, commands) sees a run only through this file, `open.ts` and
// `errors.ts`: the record shapes and the few value helpers that come with them are re-exported here.
import type { TensorNumbers } from '../formats/torch/tensorData.ts';
import type { EngineSeries } from '../wire/timeline.ts';
import type { EngineSeriesBlock, EngineSeriesTable, GpuUtilBlock, GpuUtilHour, LaneTable, PhaseBlock, StringTable } from './telemetry/store.ts';
import type {
  DataBufferSample,
  GpuProcessSample,
  LaneEntry,
  MetricsRecord,
  PhaseEvent,
  RunMeta,
  StreamName,
  TopologySnapshot,
  TopologyWindow,
  TrajectoryEvent,
} from './telemetry/records.ts';
import type { SlimeDump } from './slime/dump.ts';
import type { SampleTextRecord } from './miles/sampleText.ts';
import type { FoldedView, WarmedStream } from './telemetry/records.ts';
import type { WarmUpProgress } from './telemetry/warmUp.ts';

export type * from './telemetry/records.ts';
export { FLAT_STREAMS, INITIALIZE_PHASE, OPEN_T1, PARTITIONED_STREAMS } from './telemetry/records.ts';
export type { EngineSeriesBlock, EngineSeriesTable, GpuUtilBlock, GpuUtilCells, GpuUtilHour, GpuUtilRows, LaneTable, PhaseBlock, StringTable } from './telemetry/store.ts';
export { UTIL_CELL_S, rowMem, rowPower } from '../formats/columns/gpuUtilRollup.ts';
export { rowsOfBlock } from './telemetry/gpuUtilHours.ts';
export { compareLanes, compareNodes, strAsc } from './telemetry/laneCatalog.ts';
export type { WarmUpProgress } from './telemetry/warmUp.ts';
export type { SlimeDump } from './slime/dump.ts';
export type { SampleTextRecord } from './miles/sampleText.ts';
export type { SlimeSample, SlimeValue, TraceCarrier, TraceEventRecord } from './slime/sample.ts';
export { Opaque } from './slime/sample.ts';
export { effectiveResponseLength, isRecord, numpyStr, pyFloatOf, pyIntOrFloat, pyNumber, responseLength, rewardValue, sampleIndex, sampleStatus, sampleTrace, traceEvents } from './slime/sample.ts';

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
  /** The policy weight version of each generation turn (slime: of each SGLang request, a resumed one included). */
  weightVersions: string[];
  /** Tool messages in a chat prompt, null when the prompt is not a chat. */
  promptToolMessages: number | null;
  /**
   * Generation turns, from what the format records of them (slime: the `turn_index` values its trace's spans
   * carry); null when it records nothing that marks a turn. Absent: one per weight version (miles).
   */
  turns?: number | null;
  /**
   * Tool calls, from what the format records of them (slime: its trace's `tool_call` spans; a tool's output is
   * part of the response there, not of the prompt); null when it records none. Absent: `promptToolMessages` (miles).
   */
  toolCalls?: number | null;
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
  /**
   * What the samples' weight versions count. `rollout` (or absent): the rollout id whose weights generated a turn
   * (miles), so a sample is `rolloutId − oldest version` steps stale. `update`: a count of weight updates that
   * stands in no fixed relation to rollout ids (slime's SGLang `weight_version`), so staleness is measured
   * from the newest version among the step's samples instead.
   */
  weightVersionScale?: 'rollout' | 'update';
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


/** A recorded conversation row as the run wrote it, keyed by its sample id. */
export type ConversationRecord = Record<string, unknown> & { sample_index: number };

/**
 * A run's telemetry streams (`dashboard/`): the lane catalog, phases, gpu columns and their rollup cells,
 * engine series, the flat streams (metrics, topology, data buffer, trajectory, gpu processes), the time
 * window they cover and a version per stream. Blocks grow only at their end (see telemetry/store.ts for
 * how each is laid out).
 */
export interface TelemetrySource {
  meta(): RunMeta | null;
  /** Whether rlsight's collector is recording the run (`running`), stopped (`stopped`), or never did (null). */
  recorder?(): 'running' | 'stopped' | null;
  /** `[min, max]` over every stream, or null when empty. */
  timeRange(): [number, number] | null;
  hasStream(stream: StreamName): boolean;
  /** Changes whenever that stream's data may have changed (answers may be kept until then). */
  streamVersion(stream: StreamName): number;
  /** The lane index in `(node, gpu)` order; `laneIndexVersion` changes whenever it does. */
  laneIndex(): readonly LaneEntry[];
  readonly laneIndexVersion: number;
  /** Interned lane, string and engine series ids of the blocks. */
  readonly lanes: LaneTable;
  readonly strings: StringTable;
  readonly engineSeries: EngineSeriesTable;
  metricsRecords(): readonly MetricsRecord[];
  metricKeys(): string[];
  stepKeys(): string[];
  topologySnapshots(): readonly TopologySnapshot[];
  topologyWindows(): TopologyWindow[];
  dataBufferSamples(): readonly DataBufferSample[];
  latestDataBufferLength(): number | null;
  /** With `lanes` (`"<node>:<gpu>"` keys) cold hours may be read for those lanes only. */
  gpuUtilBlocks(t0?: number | null, t1?: number | null, lanes?: Iterable<string> | null): GpuUtilBlock[];
  /** The same blocks one at a time for a single pass (a long window stays within the memory budget). */
  gpuUtilPass(t0?: number | null, t1?: number | null, lanes?: Iterable<string> | null): Iterable<GpuUtilBlock>;
  /** The hours one at a time with their rollup cells (whole-window answers). */
  gpuUtilHours(t0?: number | null, t1?: number | null): Iterable<GpuUtilHour>;
  /** With `metrics`, cold hours may be read for those metrics only (rows of others may remain). */
  engineSeriesBlocks(t0?: number | null, t1?: number | null, metrics?: readonly string[]): EngineSeriesBlock[];
  engineSeriesPass(t0?: number | null, t1?: number | null, metrics?: readonly string[]): Iterable<EngineSeriesBlock>;
  /** Starts reading what the asks will need (a hint; answers do not wait for it). */
  engineSeriesReadAhead(asks: readonly { t0?: number | null; t1?: number | null; metrics: readonly string[] }[]): void;
  /** The first hour holding engine series and the newest stamp seen, or null without engine series. */
  engineSeriesBounds(): { firstHour: number; newestStamp: number | null } | null;
  /** Distinct raw engine metric names, without parsing blocks. */
  engineMetricsPresent(): string[];
  phaseBlocks(t0?: number | null, t1?: number | null): PhaseBlock[];
  phaseEvents(t0?: number | null, t1?: number | null): PhaseEvent[];
  trajectoryEvents(t0?: number | null, t1?: number | null): TrajectoryEvent[];
  gpuProcessRows(t0?: number | null, t1?: number | null): GpuProcessSample[];
  /**
   * Parses on the parse threads, this thread free for other requests meanwhile, the cold hours a window read
   * of `stream` would parse (gpu_util: for `lanes` only when given); the read that follows finds them
   * resident. Without parse threads it does nothing (that read parses them itself).
   */
  readOnThreads(stream: 'gpu_util' | 'phases' | 'trajectories', t0?: number | null, t1?: number | null, lanes?: Iterable<string> | null): Promise<void>;
  /** Mean bytes of the stream's non-empty hour files as written (0 without any). */
  bytesPerHour(stream: 'gpu_util' | 'engine_series' | 'phases'): number;
  /** How far the background warm-up of cold hours has come, or null when there is none. */
  warmUpProgress(): WarmUpProgress | null;
  /**
   * While the warm-up still has hours of `[t0, t1]` (null: the run's edge) to read, answers over the hours it
   * finished and what they cover; null once every hour of the window is read (answer from the source itself).
   */
  foldedView(t0: number | null, t1: number | null, streams?: readonly WarmedStream[]): FoldedView<TelemetrySource> | null;
}

/** A run's per-request traces (slime rollout dumps carry one per sample). */
export interface TraceSource {
  /** One step's dump with every sample as dumped (fields and trace); NotFound when there is no such step. */
  dump(rolloutId: number, evaluation: boolean): Promise<SlimeDump>;
  /** Every readable dump of one kind, ascending (unreadable ones are reported through the run's warnings). */
  allDumps(evaluation: boolean): Promise<SlimeDump[]>;
  /**
   * Every step of one kind, ascending, with a stamp that changes whenever the files it is read from change;
   * nothing is decoded (what is derived from a step can be kept until its stamp changes).
   */
  stepStamps(evaluation: boolean): Promise<Array<{ rolloutId: number; stamp: string }>>;
  /**
   * One step's dump as `allDumps` takes it: null when it cannot be read (reported through the run's warnings),
   * DumpStillWriting while it is being written.
   */
  readableDump(rolloutId: number, evaluation: boolean): Promise<SlimeDump | null>;
  /** Bytes of the files one step's dump is read from (Infinity when the source cannot tell); nothing is decoded. */
  dumpBytes(rolloutId: number, evaluation: boolean): Promise<number>;
  /**
   * Settles when reading ahead of the requests may go on: once no request is being answered and none has been
   * for a moment (or after a few seconds of waiting at the latest, so steady requests cannot starve it).
   */
  backgroundTurn(): Promise<void>;
}

/** Whether a step is read because someone asked for it, or for a whole-run answer (it may wait). */
export type StepPriority = 'asked' | 'background';

/**
 * An open run. Every method reads only what it needs, lazily; failures are typed (see errors.ts). Nothing
 * here writes inside the run directory.
 */
export interface RunModel {
  /** The adapter that opened it (`miles`, …). */
  readonly format: string;
  /** The run directory (absolute). */
  readonly dir: string;
  /** The telemetry streams (`dashboard/`): columns, lanes, metrics records; null when the format records none (slime). */
  readonly telemetry: TelemetrySource | null;
  /** The per-request traces, when the format records them (slime). */
  readonly traces?: TraceSource;
  /** Absolute directories whose paths must never appear in an answer. */
  readonly roots: readonly string[];
  /** Where derived caches may be written (never inside the run), or null. */
  readonly cacheDir: string | null;
  rolloutIds(): Promise<RolloutIds>;
  /**
   * One step's records; NotFound when the run has no such step. `background`: read for a whole-run answer,
   * after the steps someone asked for. `signal`: the asker may leave; a read every asker left before it began
   * may be dropped (rejected with an AbortError).
   */
  step(rolloutId: number, evaluation: boolean, priority?: StepPriority, signal?: AbortSignal): Promise<StepRecords>;
  /**
   * The step's samples as soon as its rollout side is decoded, before its train side is joined (`complete`
   * false: no digests yet), or the complete step once it is known; fails as `step` does. With `first`, the
   * step's first samples (whole groups, `partial` true) when they are decoded ahead of the rest. Formats that
   * read a step in one piece leave it out (their `step` is the preview).
   */
  stepPreview?(rolloutId: number, evaluation: boolean, signal?: AbortSignal, first?: boolean): Promise<{ records: StepRecords; complete: boolean; partial: boolean }>;
  /**
   * Bytes a cold read of a train step decodes (its dumps), counted until `atMost` is passed: a step-wide answer
   * reads steps this cheap at once instead of answering without them. Formats that cannot tell leave it out.
   */
  stepBytes?(rolloutId: number, atMost?: number): Promise<number>;
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
  /**
   * A server has begun serving the run: what its first answers would wait for starts now, while a viewer
   * loads (a miles run: the decode thread of its newest step's read and that step's rank file catalog, for
   * the first run of a process that has a step to read). Whether anything started.
   */
  getReady?(): boolean;
  /** Reads what the run gained since the last call (`--follow`). */
  advance(): Promise<void>;
  /** Problems met while reading (skipped lines, unreadable files), as one-line messages. */
  warnings(): string[];
  close(): Promise<void>;
}

/**
 * Engine series kept outside the run (Prometheus, for `--prometheus URL`): what a run that scraped none
 * shows instead. Failures are SourceUnavailable (errors.ts).
 */
export interface OutsideEngineSeries {
  /** The names the collector would store of the series it holds (`sglang_num_running_reqs`; only those it scrapes). */
  metricNames(): Promise<string[]>;
  /** One served engine metric, computed as the collector's run computes it (the query layer says how). */
  series(q: OutsideEngineQuery, t0: number, t1: number, maxPoints: number): Promise<EngineSeries[]>;
}

/**
 * How one served engine metric derives from stored series: a stored series as it is, a counter's rate per
 * second, or a histogram's mean (Δsum/Δcount, idle intervals left out); dp ranks of one engine summed,
 * averaged or kept apart.
 */
export interface OutsideEngineQuery {
  kind: 'gauge' | 'rate' | 'mean';
  /** The stored name: the gauge, the counter (`…_total`), or the histogram without `_sum`/`_count`. */
  base: string;
  fold: 'none' | 'sum' | 'mean';
}

/** What a run's searchable texts need of one sample's text: its named fields and the ids recorded with it. */
export interface SearchableText {
  /** Named text fields (`prompt`, `response`, …). */
  fields: Record<string, string>;
  ids: string[];
}

/** One derived entry kept across server starts (in `--cache-dir`, never inside a run): read whole, rewritten whole later. */
export interface DerivedEntry {
  /** The entry's text, or null when there is none. */
  read(): Promise<string | null>;
  /** Rewrites the entry once no answer is being given; `text` is called then, so one write covers every change before it. */
  write(text: () => string): void;
}

/** Where a step's searchable texts come from, with a stamp that changes whenever the step's files do. */
export interface SearchTextSource<T extends SearchableText = SearchableText> {
  stepStamp(step: number, evaluation: boolean): Promise<string>;
  sampleTextBatches(step: number, evaluation: boolean): AsyncIterable<T[]>;
}

/** Searchable words are the runs of letters and digits between matches of this. */
export const SEARCH_NON_WORD = /[^\p{L}\p{N}]+/u;

/** One step's searchable texts (or a batch of them), lower-cased once, with a word index once built. */
export interface StepTexts<T extends SearchableText = SearchableText> {
  readonly key: string;
  readonly stamp: string;
  readonly texts: readonly T[];
  /** Per sample, its fields lower-cased. */
  readonly lower: readonly Record<string, string>[];
  /** Per sample, bit k set once its k-th searched field was looked at, bit 8 + k when it is plain ASCII (a matcher's memo). */
  readonly ascii: Uint16Array;
  /** Sample positions by recorded id. */
  readonly ids: ReadonlyMap<string, number[]>;
  /** Positions of the samples holding `word` (one lower-case word as split at SEARCH_NON_WORD); null while there is no index (any may). */
  lookup(word: string): Set<number> | null;
}

/** A run's searchable texts, step by step: kept between searches (and with a cache directory, on disk). */
export interface StepTextsSource<T extends SearchableText = SearchableText> {
  /** One step's texts: at once when known, else batch by batch while its dump is read (one read shared by every asker). */
  stepBatches(step: number, evaluation: boolean): AsyncGenerator<StepTexts<T>>;
}

export interface OpenRunOptions {
  /** Rollout steps kept decoded in memory. */
  tensorLru?: number;
  /** Where derived caches may be written; never inside the run. */
  cacheDir?: string;
  /** Bytes the resident telemetry columns may hold (see `TelemetryStore`). */
  memoryBudget?: number;
  /** A TensorBoard logdir whose scalars join the run's metrics (`--tensorboard LOGDIR`). */
  tensorboard?: string;
}

/** A format: whether a directory is one of its runs, and how to open it. */
export interface RunAdapter {
  readonly format: string;
  /** Whether `dir` holds what this format writes (cheap: a few stats). */
  detect(dir: string): boolean;
  open(dir: string, options?: OpenRunOptions): Promise<RunModel>;
}
