// What the HTTP layer asks of an open run: one method per endpoint, arguments already validated.
import type {
  BubblesAnswer,
  Conversation,
  EngineSeriesAnswer,
  Fleet,
  GpuAnswer,
  GpuProcessesAnswer,
  LanesAnswer,
  LocatedAdvisoryAnswer,
  MetricsAnswer,
  OutliersAnswer,
  PhasesAnswer,
  RolloutTable,
  TokenView,
  Topology,
  Trajectories,
} from '../wire/index.ts';
import type { AnswerRun } from '../queries/answerRun.ts';
import type { RunCatalog } from './events.ts';

export interface Window {
  t0?: number;
  t1?: number;
}

export interface RunMetaAnswer {
  run_name: string | null;
  start_ts: number | null;
  wandb_url: string | null;
  data_buffer_length: number | null;
  time_range: [number, number] | null;
  rollout_ids: { train: number[]; eval: number[] };
  metric_keys: string[];
  engine_metric_keys: string[];
  step_keys: string[];
  has_metrics: boolean;
  has_tokenizer: boolean;
  has_timeline: boolean;
  has_engine_series: boolean;
}

/**
 * An open run as the server sees it. Every method is a query over the run's model; failures are typed
 * (QueryError, dump errors) and mapped to statuses by the server. Nothing here writes to the run.
 */
export interface RunSources {
  meta(): Promise<RunMetaAnswer>;
  topology(): Promise<Topology>;
  /** rlsight's own: the lanes a selection picks (`/api/rlsight/lanes`). */
  selectLanes(grammar: string | undefined): Promise<LanesAnswer>;
  phases(w: Window & { lanes?: string }): Promise<PhasesAnswer>;
  gpu(w: Window & { lanes?: string; maxPoints: number }): Promise<GpuAnswer>;
  gpuProcesses(w: Window & { lanes?: string }): Promise<GpuProcessesAnswer>;
  /** The framed heatmap bytes. */
  heatmap(w: Window & { metric: string; xBuckets: number; lanes?: string }): Promise<Uint8Array>;
  fleet(w: Window & { xBuckets: number }): Promise<Fleet>;
  outliers(w: Window & { criterion: string; topK: number }): Promise<OutliersAnswer>;
  engineSeries(w: Window & { metric: string; maxPoints: number; perDpRank: boolean }): Promise<EngineSeriesAnswer>;
  bubbles(): Promise<BubblesAnswer>;
  metrics(q: Window & { keys: string[]; x: string }): Promise<MetricsAnswer>;
  advisory(w: Window & { lowMfu: number }): Promise<LocatedAdvisoryAnswer>;
  summary(rolloutId: number, evaluation: boolean): Promise<RolloutTable>;
  groups(rolloutId: number, evaluation: boolean): Promise<RolloutTable>;
  trajectories(rolloutId: number, sampleIndex?: number): Promise<Trajectories>;
  messages(rolloutId: number, sampleIndex: number, evaluation: boolean): Promise<Conversation>;
  tokens(rolloutId: number, sampleIndex: number, q: { start: number; end?: number; evaluation: boolean }): Promise<TokenView>;

  /** The run as the health board, search, diffs and exports read it (`/api/rlsight/…`). */
  answers?(): AnswerRun;

  /** Reads what the telemetry streams gained since the last call (`--follow`). */
  advance(): Promise<void>;
  /** What `--follow` diffs between ticks. */
  catalog(): Promise<RunCatalog>;
  /** Problems met while reading (skipped lines, unreadable files), as one-line messages. */
  warnings(): string[];
  /** Absolute directories whose paths must never appear in an answer. */
  readonly roots: string[];
}
