// Every answer about one open run, assembled from its model by the query functions. The server only routes,
// validates and encodes: each endpoint is one method here, its arguments already parsed.
import { FLAT_STREAMS, PARTITIONED_STREAMS, type DerivedEntry, type MetricsRecord, type OutsideEngineSeries, type PhaseEvent, type RunModel, type SampleTextRecord, type SearchTextSource, type StepPriority, type StepTextsSource, type TelemetrySource, type TopologySnapshot, type WarmedStream } from '../run/model.ts';
import { basename } from 'node:path';
import { damageOf, DumpStillWriting, NotFound } from '../run/errors.ts';
import { openSearchTexts } from '../run/open.ts';
import type {
  BubblesAnswer,
  Conversation,
  Coverage,
  EngineSeriesAnswer,
  Fleet,
  GpuAnswer,
  GpuProcessesAnswer,
  LanesAnswer,
  LocatedAdvisoryAnswer,
  Meta,
  MetricsAnswer,
  OutliersAnswer,
  PhasesAnswer,
  RolloutIds,
  RolloutPreview,
  RolloutTable,
  RunListing,
  SampleStep,
  SearchMatch,
  TokenView,
  Topology,
  Trajectories,
} from '../wire/index.ts';
import { MFU_STEP_KEY } from './advisory.ts';
import { advisoryAnswer } from './advisoryInputs.ts';
import { bubbles } from './bubbles.ts';
import { engineMetricNames, engineSeries, outsideEngineQuery, withNonfinite } from './engineSeries.ts';
import { fleet } from './fleet.ts';
import { gpuProcesses } from './gpuProcesses.ts';
import { gpuLaneSeries } from './gpuSeries.ts';
import { encodeHeatmap, heatmap } from './heatmap.ts';
import { resolveLanes, selectedLanes, selectiveLaneKeys } from './lanes.ts';
import { checkLatestKeys, MAX_WINDOW_S } from './limits.ts';
import { NoConversationRecorded, noConversation, sampleConversation } from './messages.ts';
import { DUMP_METRIC_PREFIX, loggedStepMetrics, metricsAnswer, WALL_TIME_X, withGapsAt } from './metrics.ts';
import { outliers } from './outliers.ts';
import { phasesByLane } from './phases.ts';
import { STEP_AGGREGATE_METRICS, stepTables, type StepAggregate } from './rollouts.ts';
import { StepFactsKeeper, type StepFactsAnswer } from './stepFacts.ts';
import { noTelemetry } from './noTelemetry.ts';
import { tokenView } from './tokens.ts';
import type { TraceAnswer, TraceDetails } from '../wire/trace.ts';
import { topology } from './topology.ts';
import { rolloutTrajectories } from './trajectoryLanes.ts';
import { latestValues, LIVE_EDGE_S, mostLoggedSteps, runConfig, runStatus } from './runsTable.ts';

export interface Window {
  t0?: number;
  t1?: number;
}

/** Aborted once no one waits for the answer: the work after its reads is not done (the reads stay cached). */
export interface Stoppable {
  signal?: AbortSignal;
}

/** A heatmap's wire frame; `coverage` (also in the frame's header) when it covers only the hours read so far. */
export interface HeatmapAnswer {
  frame: Uint8Array;
  coverage?: Coverage;
}

/** How the server presents the run (`--follow`, `--use-utilization-overview`). */
export interface Presentation {
  follow: boolean;
  useUtilizationOverview: boolean;
}

/** What `--follow` diffs between ticks. */
export interface RunCatalog {
  /** Step values logged on `rollout/step`. */
  steps: number[];
  rollout_ids: RolloutIds;
  metric_keys: string[];
  engine_metric_keys: string[];
  lanes: string[];
  time_range: [number, number] | null;
}

/**
 * An open run as the server, the commands and the answers no single chart gives (health, search, diffs,
 * exports) see it: one method per endpoint, arguments already validated. Failures are typed (see
 * run/errors.ts) and mapped to statuses by the server. Nothing here writes to the run.
 */
export interface RunSources {
  /** The run's name as the server lists it. */
  readonly name: string;
  /**
   * `progressive` (the server's): a slime or collected run's steps not read yet are read only for a moment, and the
   * answer names the keys of those read with their `coverage` (the others are read in the background).
   */
  meta(p: Presentation & { progressive?: boolean }): Promise<Meta>;
  /**
   * The run as `/api/runs` lists it, under the URL name `id`, with the newest value of each `latest` key.
   * `progressive`: what a slime or collected run derives from its steps, over the steps read so far (see `meta`).
   */
  listing(id: string, primary: boolean, opts?: { follow?: boolean; latest?: readonly string[]; progressive?: boolean }): Promise<RunListing>;
  topology(): Promise<Topology>;
  /** rlsight's own: the lanes a selection picks (`/api/rlsight/lanes`). */
  selectLanes(grammar: string | undefined): Promise<LanesAnswer>;
  phases(w: Window & Stoppable & { lanes?: string }): Promise<PhasesAnswer>;
  gpu(w: Window & Stoppable & { lanes?: string; maxPoints: number }): Promise<GpuAnswer>;
  gpuProcesses(w: Window & { lanes?: string }): Promise<GpuProcessesAnswer>;
  /** The framed heatmap bytes, and their coverage when the answer is partial. */
  heatmap(w: Window & { metric: string; xBuckets: number; lanes?: string; maxRows?: number }): Promise<HeatmapAnswer>;
  fleet(w: Window & { xBuckets: number }): Promise<Fleet>;
  outliers(w: Window & { criterion: string; topK: number }): Promise<OutliersAnswer>;
  engineSeries(w: Window & { metric: string; maxPoints: number; perDpRank: boolean }): Promise<EngineSeriesAnswer>;
  bubbles(): Promise<BubblesAnswer>;
  /**
   * `progressive`: `dump/*` series (a slime or collected run's computed series too) at once over the steps read so
   * far, each with its coverage (see `stepFacts`).
   */
  metrics(q: Window & { keys: string[]; x: string; progressive?: boolean }): Promise<MetricsAnswer>;
  advisory(w: Window & Stoppable & { lowMfu: number }): Promise<LocatedAdvisoryAnswer>;
  /** `signal`: the asker may leave (a step read no one waits for is dropped before it begins). */
  summary(rolloutId: number, evaluation: boolean, signal?: AbortSignal): Promise<RolloutTable>;
  /** The summary as soon as the step's samples are decoded (`train_pending` while its train side is joined). */
  summaryPreview(rolloutId: number, evaluation: boolean, signal?: AbortSignal, first?: boolean): Promise<RolloutPreview>;
  groups(rolloutId: number, evaluation: boolean, signal?: AbortSignal): Promise<RolloutTable>;
  trajectories(rolloutId: number, sampleIndex?: number): Promise<Trajectories>;
  /** rlsight's own: the train step whose batch holds a sample, and its lifecycle there. */
  sampleStep(sampleIndex: number, near?: number): Promise<SampleStep>;
  messages(rolloutId: number, sampleIndex: number, evaluation: boolean): Promise<Conversation>;
  /** `messages`, or the empty shape saying why for a held sample without a recorded conversation. */
  messagesOrNone(rolloutId: number, sampleIndex: number, evaluation: boolean): Promise<Conversation>;
  tokens(rolloutId: number, sampleIndex: number, q: { start: number; end?: number; evaluation: boolean }): Promise<TokenView>;

  rolloutIds(): Promise<{ train: number[]; eval: number[] }>;
  /** The `dump/*` aggregates of every visible train step, ascending; a step still being written or damaged is left out. */
  stepAggregates(): Promise<StepAggregate[]>;
  /** One train step's `dump/*` aggregate (its step read if it was not); undefined when it has none (not a train step, damaged, being written). */
  stepAggregate(step: number): Promise<StepAggregate | undefined>;
  /** One train step's metric values (what the run logged at that step, the ones computed from its dump, its `dump/*` aggregate): the step diff's. */
  stepMetrics(step: number): Promise<Map<string, number>>;
  /**
   * What the step-wide answers (health board, `dump/*` series) take of every visible train step, each step read
   * once. `progressive`: at once over the steps read so far, with their coverage, the others read in the
   * background one at a time; else every step, read now (`priority` `asked` for a command that waits on it).
   */
  stepFacts(opts: { progressive: true } | { progressive: false; priority: StepPriority }): Promise<StepFactsAnswer>;
  /** Every sample's searchable text, in batch order. */
  sampleTexts(step: number, evaluation: boolean): Promise<SampleText[]>;
  /** The same texts in order, in batches handed out while the step is still being read. */
  sampleTextBatches(step: number, evaluation: boolean): AsyncIterable<SampleText[]>;
  /** Changes whenever the files a step's answers read change (its search texts are kept until then). */
  stepStamp(step: number, evaluation: boolean): Promise<string>;
  metricsRecords(): readonly MetricsRecord[];
  topologySnapshots(): readonly TopologySnapshot[];
  phaseEvents(): readonly PhaseEvent[];
  /** Reads every phases hour on the parse threads, so `phaseEvents` then assembles them without parsing on this thread. */
  readPhases(): Promise<void>;
  startTs(): number | null;
  /** Whether the run records per-request traces (slime rollout dumps carry them). */
  readonly hasTraces: boolean;
  /** A dump's request traces laid out for the Trace view; NotFound for a run without traces, as for a step it lacks. */
  trace(rolloutId: number, evaluation: boolean): Promise<TraceAnswer>;
  /** One sample's trace items with every attr; NotFound for a run without traces. */
  traceDetails(rolloutId: number, evaluation: boolean, row: number): Promise<TraceDetails>;
  /** The run's searchable texts, kept between searches (made once, by what whoever opened the run handed in). */
  searchTexts(): StepTextsSource<SampleText>;

  /**
   * A token that changes whenever a telemetry answer (`/api/timeline/*`) may change: every stream's
   * version, the lane index and the time range. Answers may be kept while it stays the same; null when
   * they change with time instead (engine series from Prometheus).
   */
  telemetryVersion(): string | null;
  /** Reads what the run gained since the last call (`--follow`). */
  advance(): Promise<void>;
  /** Closes the run's files. */
  close(): Promise<void>;
  /** What `--follow` diffs between ticks. */
  catalog(): Promise<RunCatalog>;
  /** See RunModel.getReady. */
  getReady?(): boolean;
  /** Problems met while reading (skipped lines, unreadable files), as one-line messages. */
  warnings(): string[];
  /** Absolute directories whose paths must never appear in an answer. */
  readonly roots: readonly string[];
}

/** The searchable text of one sample. */
export interface SampleText extends Pick<SearchMatch, 'step' | 'evaluation' | 'sample_index' | 'group_index' | 'status' | 'reward'> {
  /** Named text fields: `prompt`, `response`, `label`, `conversation` (the sidecar's messages), `metadata`. */
  fields: Record<string, string>;
  /** Identifiers recorded with the sample: request ids, trace ids, session ids. */
  ids: string[];
}

/** What whoever opens a run hands its answers: nothing of it is read from files by the queries. */
export interface HandedIn {
  /** The run's searchable texts over these answers (kept in `--cache-dir` when the opener has one); in memory when absent. */
  searchTexts?: (source: SearchTextSource<SampleText>) => StepTextsSource<SampleText>;
  /** Engine series from outside the run (`--prometheus URL`), shown when the run has none of its own. */
  engines?: OutsideEngineSeries | null;
  /** The clock an outside source's default window ends at (seconds). */
  now?: () => number;
  /** Where each step's facts for the step-wide answers are kept across starts; in memory only when absent. */
  stepFacts?: DerivedEntry | null;
  /** Where a slime or collected run's per-step derived values are kept across starts; in memory only when absent. */
  slimeSteps?: DerivedEntry | null;
}

/** Without a window, the last hour of outside engine series is asked for. */
export const OUTSIDE_ENGINE_WINDOW_S = 3600;

/** Work an answer does on the serving thread before other requests get a turn, ms. */
export const SLICE_MS = 10;

/** The event loop's next turn: requests that arrived meanwhile are answered first. */
const nextTurn = (): Promise<void> => new Promise((r) => setImmediate(r));

/** Advisory answers kept (one per viewport the app asks about). */
const ADVISORY_ANSWERS_KEPT = 16;

/** Why a run without per-request traces answers no trace request. */
const NO_TRACES = 'this run holds no per-request traces (slime rollout dumps carry them)';

/**
 * The W&B run link, only when it is an absolute http(s) URL: the app renders it as a link, and run
 * metadata is untrusted (a `javascript:` host would run in the app's origin).
 */
function wandbUrl(args: Record<string, unknown> | undefined): string | null {
  if (!args) return null;
  const { wandb_team: team, wandb_project: project, wandb_run_id: runId } = args;
  if (!(team && project && runId)) return null;
  const host = String(args.wandb_host || 'https://wandb.ai').replace(/\/+$/, '');
  const url = `${host}/${String(team)}/${String(project)}/runs/${String(runId)}`;
  return isHttpUrl(url) ? url : null;
}

function isHttpUrl(text: string): boolean {
  if (!/^https?:\/\//i.test(text)) return false;
  try {
    const u = new URL(text);
    return (u.protocol === 'http:' || u.protocol === 'https:') && u.hostname !== '';
  } catch {
    return false;
  }
}

/** Steps to look in for a sample, likeliest first: those whose batch closed at or after `near`, nearest first, then earlier ones, then steps without a bubble. */
function likelySteps(train: readonly number[], closes: ReadonlyMap<number | null, number>, near: number | undefined): number[] {
  const rank = (id: number): number => {
    const ts = closes.get(id);
    if (ts === undefined) return Number.POSITIVE_INFINITY;
    if (near === undefined) return -ts;
    return ts >= near ? ts - near : 1e12 + (near - ts);
  };
  return [...train].sort((a, b) => rank(a) - rank(b) || a - b);
}

export class RunAnswers implements RunSources {
  private readonly advisoryCache = new Map<string, LocatedAdvisoryAnswer>();
  /** Work between turns given to other requests, ms (a large answer is assembled in such slices). */
  sliceMs = SLICE_MS;
  /** Sample id → its train step: a dumped step's samples never change. */
  private readonly stepOfSample = new Map<number, number>();
  private unstamped = 0;

  private readonly openSearchTexts: (source: SearchTextSource<SampleText>) => StepTextsSource<SampleText>;
  private search: StepTextsSource<SampleText> | null = null;
  private readonly engines: OutsideEngineSeries | null;
  private readonly now: () => number;
  /** The run's telemetry, or for a run that records none a source holding nothing (every answer the empty one). */
  protected readonly store: TelemetrySource;
  private readonly facts: StepFactsKeeper;

  constructor(
    readonly model: RunModel,
    handed: HandedIn = {},
  ) {
    this.store = model.telemetry ?? noTelemetry();
    this.openSearchTexts = handed.searchTexts ?? ((source) => openSearchTexts(source));
    this.engines = handed.engines ?? null;
    this.now = handed.now ?? (() => Date.now() / 1000);
    this.facts = new StepFactsKeeper(
      {
        trainSteps: async () => (await this.model.rolloutIds()).train,
        stamp: (step) => this.stepStamp(step, false),
        tables: (step, priority) => this.stepTablesOf(step, priority),
        bytes: model.stepBytes ? (step, atMost) => model.stepBytes!(step, atMost) : undefined,
      },
      handed.stepFacts ?? null,
    );
  }

  /** One train step's summary and groups tables, read at `priority`. */
  protected async stepTablesOf(step: number, priority: StepPriority): Promise<{ summary: RolloutTable; groups: RolloutTable }> {
    return stepTables(await this.model.step(step, false, priority));
  }

  stepFacts(opts: { progressive: true } | { progressive: false; priority: StepPriority }): Promise<StepFactsAnswer> {
    return opts.progressive ? this.facts.soFar() : this.facts.complete(opts.priority);
  }

  /** Unread steps whose dumps total less than this are read before a step-wide answer (0: it answers partial at once). */
  get partialStepsFromBytes(): number {
    return this.facts.partialFromBytes;
  }

  set partialStepsFromBytes(bytes: number) {
    this.facts.partialFromBytes = bytes;
  }

  /** Settles once the background read of the steps is done (tests, benchmarks). */
  stepFactsSettled(): Promise<void> {
    return this.facts.settled();
  }

  /** Engine series come from outside the run: it has an outside source and no engine_series stream of its own. */
  private get outsideEngines(): OutsideEngineSeries | null {
    return this.engines !== null && !this.store.hasStream('engine_series') ? this.engines : null;
  }

  get name(): string {
    return this.store.meta()?.run_name ?? basename(this.model.dir);
  }

  rolloutIds(): Promise<{ train: number[]; eval: number[] }> {
    return this.model.rolloutIds();
  }

  searchTexts(): StepTextsSource<SampleText> {
    return (this.search ??= this.openSearchTexts(this));
  }

  stepStamp(step: number, evaluation: boolean): Promise<string> {
    return this.model.stepStamp?.(step, evaluation) ?? Promise.resolve(`unstamped:${this.unstamped++}`);
  }

  async sampleTexts(step: number, evaluation: boolean): Promise<SampleText[]> {
    return (await this.model.sampleTexts(step, evaluation)).map((t) => sampleText(t, step, evaluation));
  }

  async *sampleTextBatches(step: number, evaluation: boolean): AsyncGenerator<SampleText[]> {
    if (!this.model.sampleTextBatches) {
      yield await this.sampleTexts(step, evaluation);
      return;
    }
    for await (const batch of this.model.sampleTextBatches(step, evaluation)) yield batch.map((t) => sampleText(t, step, evaluation));
  }

  metricsRecords(): readonly MetricsRecord[] {
    return this.store.metricsRecords();
  }

  topologySnapshots(): readonly TopologySnapshot[] {
    return this.store.topologySnapshots();
  }

  phaseEvents(): readonly PhaseEvent[] {
    return this.store.phaseEvents();
  }

  readPhases(): Promise<void> {
    return this.store.readOnThreads('phases');
  }

  startTs(): number | null {
    return this.store.meta()?.start_ts ?? null;
  }

  get hasTraces(): boolean {
    return false;
  }

  // A run without traces has no step to trace: every step is a 404 saying so (the app knows it from meta's `traces`).
  async trace(_rolloutId: number, _evaluation: boolean): Promise<TraceAnswer> {
    throw new NotFound(NO_TRACES);
  }

  async traceDetails(_rolloutId: number, _evaluation: boolean, _row: number): Promise<TraceDetails> {
    throw new NotFound(NO_TRACES);
  }

  /** Closes the run's files. */
  close(): Promise<void> {
    this.facts.close();
    return this.model.close();
  }

  get roots(): readonly string[] {
    return this.model.roots;
  }

  telemetryVersion(): string | null {
    // Outside answers change with time, not with the run's files: none of this run's telemetry answers is kept.
    if (this.engines !== null) return null;
    const store = this.store;
    const streams = [...PARTITIONED_STREAMS, ...FLAT_STREAMS].map((st) => store.streamVersion(st)).join(',');
    return `${streams}|${store.laneIndexVersion}|${JSON.stringify(store.timeRange())}|${store.meta()?.start_ts ?? ''}`;
  }

  async meta(p: Presentation): Promise<Meta> {
    const m = await this.ownMeta(p);
    const outside = this.outsideEngines;
    if (outside === null) return m;
    let names: string[] = [];
    try {
      // served as a collected run serves the same stored names: counters as rates, histograms as means
      const present = await outside.metricNames();
      names = engineMetricNames({ engineMetricsPresent: () => present });
    } catch {
      // The outside source is down: the run is still served, without engine series.
    }
    return { ...m, engine_metric_keys: names, capabilities: { ...m.capabilities, has_engine_series: names.length > 0 } };
  }

  private async ownMeta(p: Presentation): Promise<Meta> {
    const ids = await this.model.rolloutIds();
    const store = this.store;
    const meta = store.meta();
    // Dump-derived keys are advertised only for a run recorded without the collector's metrics stream.
    const offline = ids.train.length > 0 && !store.hasStream('metrics');
    return {
      mode: p.follow ? 'follow' : 'static',
      run_name: meta?.run_name ?? null,
      start_ts: meta?.start_ts ?? null,
      wandb_url: wandbUrl(meta?.args),
      data_buffer_length: store.latestDataBufferLength(),
      time_range: store.timeRange(),
      rollout_ids: { train: ids.train, eval: ids.eval },
      metric_keys: [...store.metricKeys(), ...(offline ? STEP_AGGREGATE_METRICS.map((c) => DUMP_METRIC_PREFIX + c) : [])],
      engine_metric_keys: engineMetricNames(store),
      step_keys: store.stepKeys(),
      capabilities: {
        has_metrics: store.hasStream('metrics'),
        has_tokenizer: this.model.hasTokenizer(),
        has_timeline: store.hasStream('phases') || store.hasStream('gpu_util'),
        has_engine_series: store.hasStream('engine_series'),
        max_window_s: MAX_WINDOW_S,
        use_utilization_overview: p.useUtilizationOverview,
      },
      ...openingWindow(defaultWindowS(store.bytesPerHour('gpu_util'))),
      ...warmUpOf(store.warmUpProgress()),
      ...recorderOf(store.recorder?.() ?? null),
      ...(p.follow ? { live_edge_s: LIVE_EDGE_S } : {}),
      ...(this.hasTraces ? { traces: true as const } : {}),
    };
  }

  async listing(id: string, primary: boolean, opts: { follow?: boolean; latest?: readonly string[] } = {}): Promise<RunListing> {
    const store = this.store;
    const keys = checkLatestKeys(opts.latest ?? []);
    const [ids, catalog, latest] = await Promise.all([
      this.model.rolloutIds(),
      this.catalog(),
      keys.length ? this.metrics({ keys: [...keys], x: WALL_TIME_X }).then((a) => latestValues(a, keys)) : {},
    ]);
    const warnings = this.warnings();
    const range = store.timeRange();
    const edge = range?.[1] ?? null;
    // A resumed run rewrites meta.json's start: its history began at its first record.
    const starts = [store.meta()?.start_ts, range?.[0]].filter((t): t is number => t !== undefined && t !== null);
    return {
      id,
      name: store.meta()?.run_name || basename(this.model.dir),
      start_ts: starts.length ? Math.min(...starts) : null,
      // unknown (null) when its telemetry names no GPU, as a slime run's dumps do not
      gpus: store.laneIndex().length || null,
      // a run with only logged metrics (recorded from a TensorBoard logdir) counts the steps it logged on its own key
      steps: Math.max(catalog.steps.length, ids.train.length) || mostLoggedSteps(store.metricsRecords()),
      formats: [this.model.format],
      primary,
      end_ts: edge,
      status: runStatus(warnings, opts.follow ?? false, edge, Date.now() / 1000, store.recorder?.() ?? null),
      warnings,
      config: runConfig(store.meta()?.args),
      latest,
    };
  }

  async topology(): Promise<Topology> {
    return topology(this.store);
  }

  async selectLanes(grammar: string | undefined): Promise<LanesAnswer> {
    return { lanes: selectedLanes(grammar, this.store.laneIndex()) };
  }

  // Window answers have their cold hours parsed on the parse threads first (this thread answers other
  // requests meanwhile), then assemble from what is resident.

  async phases(w: Window & Stoppable & { lanes?: string }): Promise<PhasesAnswer> {
    const lanes = resolveLanes(w.lanes, this.store.laneIndex());
    await this.store.readOnThreads('phases', w.t0, w.t1);
    w.signal?.throwIfAborted();
    return { phases: phasesByLane(this.store, { t0: w.t0, t1: w.t1, lanes }) };
  }

  async gpu(w: Window & Stoppable & { lanes?: string; maxPoints: number }): Promise<GpuAnswer> {
    const index = this.store.laneIndex();
    await this.store.readOnThreads('gpu_util', w.t0, w.t1, selectiveLaneKeys(resolveLanes(w.lanes, index), index.length));
    w.signal?.throwIfAborted();
    // all lanes of an hour is half a second of work: assembled a slice at a time, stopped when no one waits
    const lanes: GpuAnswer['lanes'] = {};
    let since = performance.now();
    for (const [key, series] of gpuLaneSeries(this.store, { t0: w.t0, t1: w.t1, lanes: w.lanes, maxPoints: w.maxPoints })) {
      lanes[key] = series;
      if (performance.now() - since < this.sliceMs) continue;
      await nextTurn();
      w.signal?.throwIfAborted();
      since = performance.now();
    }
    return { lanes };
  }

  async gpuProcesses(w: Window & { lanes?: string }): Promise<GpuProcessesAnswer> {
    return gpuProcesses(this.store, { t0: w.t0, t1: w.t1, lanes: w.lanes });
  }

  /**
   * A whole-window answer: over the store itself once every hour of the window is read; while the warm-up
   * still reads some of the `streams` it reads, at once over the hours it finished, with their `coverage`.
   */
  private progressive<T extends object>(w: Window, streams: readonly WarmedStream[], answer: (store: TelemetrySource) => T): T & { coverage?: Coverage } {
    const folded = this.store.foldedView(w.t0 ?? null, w.t1 ?? null, streams);
    if (folded === null) return answer(this.store);
    return { ...folded.run(answer), coverage: folded.coverage };
  }

  async heatmap(w: Window & { metric: string; xBuckets: number; lanes?: string; maxRows?: number }): Promise<HeatmapAnswer> {
    const q = { t0: w.t0, t1: w.t1, metric: w.metric, xBuckets: w.xBuckets, lanes: w.lanes, maxRows: w.maxRows };
    // the request strip reads trajectories, which the warm-up does not read ahead
    if (w.metric === 'lifecycle') {
      await this.store.readOnThreads('trajectories', w.t0, w.t1);
      return { frame: encodeHeatmap(heatmap(this.store, q)) };
    }
    const h = this.progressive(w, w.metric === 'phase' ? ['phases'] : ['gpu_util'], (store) => heatmap(store, q));
    if (h.coverage === undefined) return { frame: encodeHeatmap(h) };
    return { frame: encodeHeatmap({ header: { ...h.header, coverage: h.coverage }, values: h.values }), coverage: h.coverage };
  }

  async fleet(w: Window & { xBuckets: number }): Promise<Fleet> {
    return this.progressive(w, ['gpu_util', 'phases'], (store) => fleet(store, { t0: w.t0, t1: w.t1, xBuckets: w.xBuckets }));
  }

  async outliers(w: Window & { criterion: string; topK: number }): Promise<OutliersAnswer> {
    return this.progressive(w, w.criterion === 'lowest_util' ? ['gpu_util'] : ['phases'], (store) => outliers(store, { t0: w.t0, t1: w.t1, criterion: w.criterion, topK: w.topK, since: store.meta()?.start_ts ?? null }));
  }

  async engineSeries(w: Window & { metric: string; maxPoints: number; perDpRank: boolean }): Promise<EngineSeriesAnswer> {
    const outside = this.outsideEngines;
    if (outside !== null) {
      const range = this.store.timeRange();
      const t1 = w.t1 ?? range?.[1] ?? this.now();
      const t0 = w.t0 ?? Math.max(range?.[0] ?? -Infinity, t1 - OUTSIDE_ENGINE_WINDOW_S);
      const q = outsideEngineQuery(w.metric, w.perDpRank);
      return { series: q === null ? [] : (await outside.series(q, t0, t1, w.maxPoints)).map(withNonfinite) };
    }
    return this.progressive(w, ['engine_series'], (store) => engineSeries(store, { t0: w.t0, t1: w.t1, metric: w.metric, maxPoints: w.maxPoints, perDpRank: w.perDpRank }));
  }

  async bubbles(): Promise<BubblesAnswer> {
    return { bubbles: bubbles(this.store) };
  }

  async metrics(q: Window & { keys: string[]; x: string; progressive?: boolean }): Promise<MetricsAnswer> {
    if (!q.progressive) return metricsAnswer(this.store, q.keys, q, () => this.stepAggregates());
    let facts: StepFactsAnswer | undefined;
    const answer = await metricsAnswer(this.store, q.keys, q, async () => {
      facts = await this.stepFacts({ progressive: true });
      return aggregatesOf(facts);
    });
    if (facts === undefined) return answer;
    // a step that could not be read breaks the line there (a point at y = null) instead of being bridged
    const unread = facts.steps.filter((f) => f.aggregate === null).map((f) => f.step);
    const coverage = facts.coverage;
    for (const k of q.keys) {
      if (!k.startsWith(DUMP_METRIC_PREFIX)) continue;
      const series = unread.length > 0 ? withGapsAt(answer[k], unread) : answer[k];
      answer[k] = coverage ? { ...series, coverage } : series;
    }
    return answer;
  }

  async stepAggregate(step: number): Promise<StepAggregate | undefined> {
    return (await this.facts.one(step, 'asked'))?.aggregate ?? undefined;
  }

  async stepMetrics(step: number): Promise<Map<string, number>> {
    return loggedStepMetrics(this.metricsRecords(), await this.stepAggregate(step), step);
  }

  /** The `dump/*` aggregates of every visible train step, ascending; a step still being written or damaged is left out. */
  async stepAggregates(): Promise<StepAggregate[]> {
    return aggregatesOf(await this.stepFacts({ progressive: false, priority: 'background' }));
  }

  async advisory(w: Window & Stoppable & { lowMfu: number }): Promise<LocatedAdvisoryAnswer> {
    const ids = await this.model.rolloutIds();
    const store = this.store;
    // Rules are recomputed only when what they read changed (dumps are written once per step, so ids suffice).
    const key = JSON.stringify([
      w.t0 ?? null,
      w.t1 ?? null,
      w.lowMfu,
      (['phases', 'engine_series', 'metrics'] as const).map((s) => store.streamVersion(s)),
      store.timeRange(),
      store.meta()?.start_ts ?? null,
      store.meta()?.args ?? null,
      ids,
    ]);
    const cached = this.advisoryCache.get(key);
    if (cached) return cached;
    const folded = store.foldedView(w.t0 ?? null, w.t1 ?? null, ['engine_series', 'phases']);
    if (folded !== null) {
      // At once over the hours read so far, never kept; the newest step's verdict (its groups and samples,
      // seconds of dump decoding) is left to the complete answer.
      const partial = await advisoryAnswer(this.model, w, undefined, folded.run);
      return { ...partial.body, coverage: folded.coverage };
    }
    // the whole run's rules are most of a second of work: read a part at a time, stopped when no one waits
    const pause = async (): Promise<void> => {
      await nextTurn();
      w.signal?.throwIfAborted();
    };
    const answer = await advisoryAnswer(this.model, w, ids.train.at(-1), (read) => read(store), pause);
    if (answer.complete) {
      if (this.advisoryCache.size >= ADVISORY_ANSWERS_KEPT) this.advisoryCache.delete(this.advisoryCache.keys().next().value as string);
      this.advisoryCache.set(key, answer.body);
    }
    return answer.body;
  }

  async summary(rolloutId: number, evaluation: boolean, signal?: AbortSignal): Promise<RolloutTable> {
    return stepTables(await this.model.step(rolloutId, evaluation, 'asked', signal)).summary;
  }

  async summaryPreview(rolloutId: number, evaluation: boolean, signal?: AbortSignal, first = false): Promise<RolloutPreview> {
    if (!this.model.stepPreview) return this.summary(rolloutId, evaluation, signal);
    const { records, complete, partial } = await this.model.stepPreview(rolloutId, evaluation, signal, first);
    const summary = stepTables(records).summary;
    if (complete) return summary;
    return partial ? { ...summary, train_pending: true, first_samples: true } : { ...summary, train_pending: true };
  }

  async groups(rolloutId: number, evaluation: boolean, signal?: AbortSignal): Promise<RolloutTable> {
    return stepTables(await this.model.step(rolloutId, evaluation, 'asked', signal)).groups;
  }

  async trajectories(rolloutId: number, sampleIndex?: number): Promise<Trajectories> {
    // One sample's lanes need no dump; the whole batch's sample ids come from the step's summary.
    const indices = sampleIndex !== undefined ? [sampleIndex] : (await this.summary(rolloutId, false)).rows.map((r) => r.sample_index as number);
    return rolloutTrajectories(this.store, rolloutId, indices);
  }

  async sampleStep(sampleIndex: number, near?: number): Promise<SampleStep> {
    const train = (await this.model.rolloutIds()).train;
    let found = this.stepOfSample.get(sampleIndex);
    /** The first step passed over unread: still being written (looked in again next time), or damaged. */
    let unread: { writing: unknown; damaged: unknown } = { writing: null, damaged: null };
    if (found === undefined) {
      const closes = new Map(bubbles(this.store).map((b) => [b.step, b.ts]));
      for (const id of likelySteps(train, closes, near)) {
        let samples;
        try {
          samples = (await this.model.step(id, false)).samples;
        } catch (e) {
          if (e instanceof DumpStillWriting) unread = { ...unread, writing: unread.writing ?? e };
          else if (damageOf(e) !== null) unread = { ...unread, damaged: unread.damaged ?? e };
          else throw e;
          continue;
        }
        for (const s of samples) if (s.index !== null) this.stepOfSample.set(s.index, id);
        if (this.stepOfSample.has(sampleIndex)) {
          found = id;
          break;
        }
      }
    }
    // not in any step read: a step that could not be read may hold it (a 503 to come back, or a 422 naming the file)
    if (found === undefined) throw unread.writing ?? unread.damaged ?? new NotFound(`no train step of this run holds sample ${sampleIndex}`);
    const lanes = rolloutTrajectories(this.store, found, [sampleIndex]).lanes;
    return { sample_index: sampleIndex, rollout_id: found, lane: lanes[0] ?? null };
  }

  async messages(rolloutId: number, sampleIndex: number, evaluation: boolean): Promise<Conversation> {
    const conversations = await this.model.conversations(rolloutId, evaluation);
    // a step the run does not hold is said to be missing, not to have recorded no conversation
    if (conversations === null) {
      const ids = await this.model.rolloutIds();
      if (!(evaluation ? ids.eval : ids.train).includes(rolloutId)) throw new NotFound(`${evaluation ? 'eval ' : ''}rollout ${rolloutId} is not in this run`);
    }
    return sampleConversation(conversations, rolloutId, sampleIndex);
  }

  /**
   * rlsight's conversation answer: a sample of the step without a recorded conversation is the empty shape
   * saying why; a step or sample the run does not hold is a NotFound (its tokens are what show it is held).
   */
  async messagesOrNone(rolloutId: number, sampleIndex: number, evaluation: boolean): Promise<Conversation> {
    try {
      return await this.messages(rolloutId, sampleIndex, evaluation);
    } catch (e) {
      if (!(e instanceof NoConversationRecorded)) throw e;
      await this.model.sampleTokens(rolloutId, sampleIndex, evaluation);
      return noConversation(sampleIndex, e.message);
    }
  }

  async tokens(rolloutId: number, sampleIndex: number, q: { start: number; end?: number; evaluation: boolean }): Promise<TokenView> {
    return tokenView(await this.model.sampleTokens(rolloutId, sampleIndex, q.evaluation), { start: q.start, end: q.end ?? null });
  }

  async advance(): Promise<void> {
    await this.model.advance();
    this.facts.changed();
  }

  getReady(): boolean {
    return this.model.getReady?.() ?? false;
  }

  async catalog(): Promise<RunCatalog> {
    const ids = await this.model.rolloutIds();
    const store = this.store;
    const steps = new Set<number>();
    for (const r of store.metricsRecords()) if (r.step_key === MFU_STEP_KEY && r.step !== null) steps.add(r.step);
    return {
      steps: [...steps].sort((a, b) => a - b),
      rollout_ids: { train: ids.train, eval: ids.eval },
      metric_keys: store.metricKeys(),
      engine_metric_keys: engineMetricNames(store),
      lanes: store.laneIndex().map((l) => `${l.node}:${l.gpu}`),
      time_range: store.timeRange(),
    };
  }

  warnings(): string[] {
    return this.model.warnings();
  }
}

/**
 * gpu_util JSONL a fresh server reads for a few lanes in about a second on two parse threads: a selective read
 * still scans every byte of the hours it reads.
 */
const FIRST_READ_BYTES = 768 * 2 ** 20;

/** The timeline's opening window: whole hours whose gpu_util fits `FIRST_READ_BYTES` (a window of N hours touches N + 1 files), at least one, at most the widest. */
export function defaultWindowS(gpuBytesPerHour: number): number {
  if (!(gpuBytesPerHour > 0)) return MAX_WINDOW_S;
  const hours = Math.floor(FIRST_READ_BYTES / gpuBytesPerHour) - 1;
  return Math.min(MAX_WINDOW_S, Math.max(1, hours) * 3600);
}

function openingWindow(seconds: number): Pick<Meta, 'default_window_s'> {
  return seconds < MAX_WINDOW_S ? { default_window_s: seconds } : {};
}

/** The aggregates of the steps read (a damaged step has none). */
function aggregatesOf(facts: StepFactsAnswer): StepAggregate[] {
  return facts.steps.flatMap((f) => (f.aggregate ? [f.aggregate] : []));
}

function sampleText(t: SampleTextRecord, step: number, evaluation: boolean): SampleText {
  return { step, evaluation, sample_index: t.sampleIndex, group_index: t.groupIndex, status: t.status, reward: t.reward, fields: t.fields, ids: t.ids };
}

/** `recorder` when rlsight's collector records (or recorded) the run. */
function recorderOf(state: 'running' | 'stopped' | null): Pick<Meta, 'recorder'> {
  return state === null ? {} : { recorder: state };
}

/** `warmup` while the background warm-up runs (only with a cache directory), nothing once it is done. */
function warmUpOf(p: { hoursDone: number; hoursTotal: number; running: boolean } | null): Pick<Meta, 'warmup'> {
  return p !== null && p.running ? { warmup: { hours_done: p.hoursDone, hours_total: p.hoursTotal } } : {};
}
