// An open run: the telemetry store and the dump reader, answered through the query functions.
import { statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import {
  ABORT_WINDOW_S,
  type AdvisoryInputs,
  type LocatedAdvisory,
  type EngineInputs,
  type EngineSeriesData,
  type MfuSummary,
  type RawPhase,
  MFU_KEY,
  MFU_PEAK_KEY,
  MFU_STEP_KEY,
  advisoryEngineGauges,
  computeAdvisories,
  mfuSummary,
} from '../queries/advisory.ts';
import { bubbles } from '../queries/bubbles.ts';
import { engineMetricNames, engineSeries } from '../queries/engineSeries.ts';
import { notFound } from '../queries/errors.ts';
import { fleet } from '../queries/fleet.ts';
import { gpuProcesses } from '../queries/gpuProcesses.ts';
import { gpuSeries } from '../queries/gpuSeries.ts';
import { encodeHeatmap, heatmap } from '../queries/heatmap.ts';
import { resolveLanes, selectedLanes } from '../queries/lanes.ts';
import { DUMP_METRIC_PREFIX, metricSeries, metricsAnswer } from '../queries/metrics.ts';
import { outliers } from '../queries/outliers.ts';
import { phasesByLane } from '../queries/phases.ts';
import { STEP_AGGREGATE_METRICS } from '../queries/rollouts.ts';
import { topology } from '../queries/topology.ts';
import { rolloutTrajectories } from '../queries/trajectoryLanes.ts';
import { DumpStillWriting } from '../run/dumps/errors.ts';
import { DumpReader } from '../run/dumps/reader.ts';
import { TelemetryStore } from '../run/telemetry/store.ts';
import type { AnswerRun } from '../queries/answerRun.ts';
import { answerRunOf } from './answerRun.ts';
import type { RunCatalog } from './events.ts';
import type { RunMetaAnswer, RunSources, Window } from './sources.ts';
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

export interface OpenRunOptions {
  /** Rollout steps kept decoded in memory. */
  tensorLru?: number;
  /** Where derived caches may be written; never inside the run. */
  cacheDir?: string;
}

/** The engine counters the advisory rules read (the gauges depend on the run's args). */
const ADVISORY_COUNTERS = ['sglang_num_requests_total', 'sglang_num_aborted_requests_total'];
/** Advisory answers kept (one per viewport the app asks about). */
const ADVISORY_ANSWERS_KEPT = 16;

function isDir(p: string): boolean {
  try {
    return statSync(p).isDirectory();
  } catch {
    return false;
  }
}

function wandbUrl(args: Record<string, unknown> | undefined): string | null {
  if (!args) return null;
  const { wandb_team: team, wandb_project: project, wandb_run_id: runId } = args;
  if (!(team && project && runId)) return null;
  const host = String(args.wandb_host || 'https://wandb.ai').replace(/\/+$/, '');
  return `${host}/${String(team)}/${String(project)}/runs/${String(runId)}`;
}

export class OpenRun implements RunSources {
  readonly roots: string[];
  private readonly advisoryCache = new Map<string, { advisories: LocatedAdvisory[]; mfu: MfuSummary | null }>();

  private answerRun: AnswerRun | undefined;

  constructor(
    readonly runDir: string,
    readonly store: TelemetryStore,
    readonly dumps: DumpReader,
    private readonly cacheDir?: string,
  ) {
    this.roots = [runDir, ...(cacheDir ? [cacheDir] : [])];
  }

  answers(): AnswerRun {
    this.answerRun ??= answerRunOf(this, this.cacheDir);
    return this.answerRun;
  }

  async meta(): Promise<RunMetaAnswer> {
    const ids = await this.dumps.rolloutIds();
    const meta = this.store.meta();
    // Dump-derived keys are advertised only for a run recorded without the collector's metrics stream.
    const offline = ids.train.length > 0 && !this.store.hasStream('metrics');
    return {
      run_name: meta?.run_name ?? null,
      start_ts: meta?.start_ts ?? null,
      wandb_url: wandbUrl(meta?.args),
      data_buffer_length: this.store.latestDataBufferLength(),
      time_range: this.store.timeRange(),
      rollout_ids: { train: ids.train, eval: ids.eval },
      metric_keys: [...this.store.metricKeys(), ...(offline ? STEP_AGGREGATE_METRICS.map((c) => DUMP_METRIC_PREFIX + c) : [])],
      engine_metric_keys: engineMetricNames(this.store),
      step_keys: this.store.stepKeys(),
      has_metrics: this.store.hasStream('metrics'),
      has_tokenizer: isDir(join(this.runDir, 'tokenizer')),
      has_timeline: this.store.hasStream('phases') || this.store.hasStream('gpu_util'),
      has_engine_series: this.store.hasStream('engine_series'),
    };
  }

  async topology(): Promise<Topology> {
    return topology(this.store);
  }

  async selectLanes(grammar: string | undefined): Promise<LanesAnswer> {
    return { lanes: selectedLanes(grammar, this.store.laneIndex()) };
  }

  async phases(w: Window & { lanes?: string }): Promise<PhasesAnswer> {
    return { phases: phasesByLane(this.store, { t0: w.t0, t1: w.t1, lanes: resolveLanes(w.lanes, this.store.laneIndex()) }) };
  }

  async gpu(w: Window & { lanes?: string; maxPoints: number }): Promise<GpuAnswer> {
    return gpuSeries(this.store, { t0: w.t0, t1: w.t1, lanes: w.lanes, maxPoints: w.maxPoints });
  }

  async gpuProcesses(w: Window & { lanes?: string }): Promise<GpuProcessesAnswer> {
    return gpuProcesses(this.store, { t0: w.t0, t1: w.t1, lanes: w.lanes });
  }

  async heatmap(w: Window & { metric: string; xBuckets: number; lanes?: string }): Promise<Uint8Array> {
    return encodeHeatmap(heatmap(this.store, { t0: w.t0, t1: w.t1, metric: w.metric, xBuckets: w.xBuckets, lanes: w.lanes }));
  }

  async fleet(w: Window & { xBuckets: number }): Promise<Fleet> {
    return fleet(this.store, { t0: w.t0, t1: w.t1, xBuckets: w.xBuckets });
  }

  async outliers(w: Window & { criterion: string; topK: number }): Promise<OutliersAnswer> {
    return outliers(this.store, { t0: w.t0, t1: w.t1, criterion: w.criterion, topK: w.topK });
  }

  async engineSeries(w: Window & { metric: string; maxPoints: number; perDpRank: boolean }): Promise<EngineSeriesAnswer> {
    return engineSeries(this.store, { t0: w.t0, t1: w.t1, metric: w.metric, maxPoints: w.maxPoints, perDpRank: w.perDpRank });
  }

  async bubbles(): Promise<BubblesAnswer> {
    return { bubbles: bubbles(this.store) };
  }

  async metrics(q: Window & { keys: string[]; x: string }): Promise<MetricsAnswer> {
    return metricsAnswer(this.store, q.keys, q, () => this.dumps.stepAggregates());
  }

  async advisory(w: Window & { lowMfu: number }): Promise<LocatedAdvisoryAnswer> {
    const ids = await this.dumps.rolloutIds();
    // Rules are recomputed only when what they read changed (dumps are written once per step, so ids suffice).
    const key = JSON.stringify([
      w.t0 ?? null,
      w.t1 ?? null,
      w.lowMfu,
      (['phases', 'engine_series', 'metrics'] as const).map((s) => this.store.streamVersion(s)),
      this.store.timeRange(),
      this.store.meta()?.start_ts ?? null,
      this.store.meta()?.args ?? null,
      ids,
    ]);
    const cached = this.advisoryCache.get(key);
    if (cached) return cached;
    const answer = await this.computeAdvisory(w, ids.train.at(-1));
    if (answer.complete) {
      if (this.advisoryCache.size >= ADVISORY_ANSWERS_KEPT) this.advisoryCache.delete(this.advisoryCache.keys().next().value as string);
      this.advisoryCache.set(key, answer.body);
    }
    return answer.body;
  }

  private async computeAdvisory(
    w: Window & { lowMfu: number },
    newestTrainId: number | undefined,
  ): Promise<{ body: { advisories: LocatedAdvisory[]; mfu: MfuSummary | null }; complete: boolean }> {
    const series = metricSeries(this.store, [MFU_KEY, MFU_PEAK_KEY], { x: MFU_STEP_KEY });
    const numeric = (ys: readonly unknown[] = []): number[] => ys.map((v) => (typeof v === 'number' ? v : Number.NaN));
    const mfu = mfuSummary(numeric(series[MFU_KEY]?.y), numeric(series[MFU_PEAK_KEY]?.y));
    const meta = this.store.meta();
    const args = (meta?.args as Record<string, unknown> | undefined) ?? {};
    const window = { t0: w.t0, t1: w.t1 };
    const engine = (metric: string, perDpRank = false): EngineSeriesData[] => this.engineValues(metric, window, perDpRank);
    // One selective read of each cold hour for every gauge the rules can use and, in the recent hours, the
    // abort counters too, all parse threads sharing the hours (each series is then cut from these reads).
    const gauges = advisoryEngineGauges(args);
    if (this.store.hasStream('engine_series')) {
      const from = this.recentCountersFrom();
      this.store.engineSeriesReadAhead([
        { t0: w.t0, t1: w.t1, metrics: gauges },
        ...(Number.isFinite(from) ? [{ t0: from, t1: null, metrics: ADVISORY_COUNTERS }] : []),
      ]);
    }
    const rollout = newestTrainId === undefined ? null : await this.rolloutVerdictInputs(newestTrainId);
    const inputs: AdvisoryInputs = {
      args,
      edge: this.store.timeRange()?.[1] ?? null,
      startTs: meta?.start_ts ?? null,
      phases: this.rawPhases(),
      engine: this.store.hasStream('engine_series')
        ? {
            ...this.recentCounters(),
            running: engine('sglang_num_running_reqs'),
            tokenUsage: engine('sglang_token_usage'),
            cacheHitRate: gauges.includes('sglang_cache_hit_rate') ? engine('sglang_cache_hit_rate') : [],
            // Only series labelled with a dp rank can show an imbalance; a run without them skips the second cut.
            runningPerDpRank: this.hasDpRanks('sglang_num_running_reqs') ? engine('sglang_num_running_reqs', true) : [],
          }
        : null,
      rollout: rollout === 'writing' ? null : rollout,
      mfu,
      lowMfu: w.lowMfu,
      metricsRecords: this.store.metricsRecords(),
    };
    return { body: { advisories: computeAdvisories(inputs), mfu }, complete: rollout !== 'writing' };
  }

  /** Every raw phase event, read off the columns without the fields the stall rule does not use. */
  private rawPhases(): RawPhase[] {
    const out: RawPhase[] = [];
    const s = this.store.strings;
    for (const b of this.store.phaseBlocks()) {
      const { name, node, t0, t1, rank } = b;
      for (let i = 0; i < b.length; i++) out.push({ name: s.str(name[i]), t0: t0[i], t1: t1[i], node: s.str(node[i]), rank: rank[i] });
    }
    return out;
  }

  /** Whether any series of `metric` carries a `dp_rank` label. */
  private hasDpRanks(metric: string): boolean {
    const table = this.store.engineSeries;
    for (let id = 0; id < table.size; id++) {
      const k = table.key(id);
      if (k.metric === metric && 'dp_rank' in (JSON.parse(k.labelsJson) as Record<string, string>)) return true;
    }
    return false;
  }

  /** Every point of one engine metric (no downsampling). */
  private engineValues(metric: string, w: Window, perDpRank = false): EngineSeriesData[] {
    return engineSeries(this.store, { ...w, metric, maxPoints: Number.MAX_SAFE_INTEGER, perDpRank }).series;
  }

  /**
   * The abort counters over the recent past only: from just before the abort window ending at the newest
   * scrape, widened until every series reaches back past the window (else the whole run), so a cold advisory
   * does not parse hours of engine history. The run-wide counters are read only if the alarm fires.
   */
  private recentCounters(): Pick<EngineInputs, 'requestsTotal' | 'abortsTotal' | 'runCounters'> {
    const whole = (): { requests: EngineSeriesData[]; aborts: EngineSeriesData[] } => {
      this.store.engineSeriesBlocks(null, null, ADVISORY_COUNTERS);
      return { requests: this.engineValues('sglang_num_requests_total', {}), aborts: this.engineValues('sglang_num_aborted_requests_total', {}) };
    };
    const files = this.store.partitions.engine_series.files().filter((f) => f.size > 0);
    const firstLo = files.length ? files[0].lo : -Infinity;
    let from = this.recentCountersFrom();
    for (let attempt = 0; attempt < 3 && Number.isFinite(from) && from > firstLo; attempt++) {
      this.store.engineSeriesBlocks(from, null, ADVISORY_COUNTERS);
      const requests = this.engineValues('sglang_num_requests_total', { t0: from });
      const aborts = this.engineValues('sglang_num_aborted_requests_total', { t0: from });
      const all = [...requests, ...aborts].filter((s) => s.ts.length > 0);
      if (all.length === 0) break;
      const since = Math.max(...all.map((s) => s.ts[s.ts.length - 1])) - ABORT_WINDOW_S;
      if (all.every((s) => s.ts[0] < since)) return { requestsTotal: requests, abortsTotal: aborts, runCounters: whole };
      from = since - 3600;
    }
    const run = whole();
    return { requestsTotal: run.requests, abortsTotal: run.aborts };
  }

  /** Where the first read of the recent counters starts (-Infinity without engine data). */
  private recentCountersFrom(): number {
    // The newest scrape, read off the newest partition's last line; 10 min of slack keep the point before the window.
    const stamps = this.store.partitions.engine_series.edgeStamps();
    return stamps.length ? Math.max(...stamps) - ABORT_WINDOW_S - 600 : -Infinity;
  }

  /** The newest train step's groups and per-sample flags, or `writing` while its dump is still being written. */
  private async rolloutVerdictInputs(rolloutId: number): Promise<AdvisoryInputs['rollout'] | 'writing'> {
    let groups, summary;
    try {
      groups = (await this.dumps.groups(rolloutId)).rows;
      summary = (await this.dumps.summary(rolloutId)).rows;
    } catch (err) {
      // A step still being written has no verdict yet; the other rules still answer (the reference 503s).
      if (err instanceof DumpStillWriting) return 'writing';
      throw err;
    }
    return {
      rolloutId,
      groups: groups.map((g) => ({ reward_mean: g.reward_mean as number | null, zero_std: g.zero_std as boolean | null })),
      summary: summary.map((r) => ({ truncated: r.truncated as boolean | null, alignment_failed: r.alignment_failed as boolean | null })),
    };
  }

  summary(rolloutId: number, evaluation: boolean): Promise<RolloutTable> {
    return this.dumps.summary(rolloutId, evaluation);
  }

  groups(rolloutId: number, evaluation: boolean): Promise<RolloutTable> {
    return this.dumps.groups(rolloutId, evaluation);
  }

  async trajectories(rolloutId: number, sampleIndex?: number): Promise<Trajectories> {
    const indices = sampleIndex !== undefined ? [sampleIndex] : (await this.dumps.summary(rolloutId)).rows.map((r) => r.sample_index as number);
    return rolloutTrajectories(this.store, rolloutId, indices);
  }

  messages(rolloutId: number, sampleIndex: number, evaluation: boolean): Promise<Conversation> {
    return this.dumps.messages(rolloutId, sampleIndex, evaluation);
  }

  tokens(rolloutId: number, sampleIndex: number, q: { start: number; end?: number; evaluation: boolean }): Promise<TokenView> {
    return this.dumps.tokens(rolloutId, sampleIndex, { start: q.start, end: q.end ?? null, evaluation: q.evaluation });
  }

  async advance(): Promise<void> {
    this.store.follow();
  }

  async catalog(): Promise<RunCatalog> {
    const ids = await this.dumps.rolloutIds();
    const steps = new Set<number>();
    for (const r of this.store.metricsRecords()) if (r.step_key === MFU_STEP_KEY && r.step !== null) steps.add(r.step);
    return {
      steps: [...steps].sort((a, b) => a - b),
      rollout_ids: { train: ids.train, eval: ids.eval },
      metric_keys: this.store.metricKeys(),
      engine_metric_keys: engineMetricNames(this.store),
      lanes: this.store.laneIndex().map((l) => `${l.node}:${l.gpu}`),
      time_range: this.store.timeRange(),
    };
  }

  warnings(): string[] {
    return this.store.warnings().map((w) => `dashboard/${w.file}:${w.line}: ${w.message}`);
  }
}

/** Opens a run directory for serving; nothing under it is ever written. */
export async function openRun(runDir: string, opts: OpenRunOptions = {}): Promise<OpenRun> {
  const dir = resolve(runDir);
  if (!isDir(dir)) throw notFound('the run directory does not exist');
  const dumps = await DumpReader.open(dir, { tensorLru: opts.tensorLru, cacheDir: opts.cacheDir });
  const store = TelemetryStore.open(join(dir, 'dashboard'));
  return new OpenRun(dir, store, dumps, opts.cacheDir ? resolve(opts.cacheDir) : undefined);
}
