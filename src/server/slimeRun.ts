// An open slime run as the server sees it: Rollouts, Sample, Metrics (slime's perf/ and rollout/ keys
// plus perf_fixed/) and the Trace view from the rollout dumps. slime writes no compute timeline, so the
// timeline endpoints answer 404 saying so.
import { notFound } from '../queries/errors.ts';
import { slimeConversation, slimeGroups, slimeMetricKeys, slimeMetricsAnswer, slimeStepMetrics, slimeSummary, slimeTokens, type StepMetricsInputs } from '../queries/slimeRollouts.ts';
import { traceDetails, traceView } from '../queries/slimeTraceView.ts';
import type { SlimeDump } from '../run/slime/dump.ts';
import { sampleByIndex, SlimeRun } from '../run/slime/run.ts';
import type { TraceAnswer, TraceDetails } from '../wire/trace.ts';
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
import type { RunCatalog } from './events.ts';
import type { RunMetaAnswer, RunSources } from './sources.ts';
import type { TraceSources } from './trace.ts';

const NO_TIMELINE = 'a slime run records no compute timeline (phases, GPU and engine series are not in its dumps)';

export class OpenSlimeRun implements RunSources, TraceSources {
  readonly roots: string[];
  private stepsMemo: { key: string; steps: ReturnType<typeof slimeStepMetrics> } | null = null;

  constructor(
    readonly run: SlimeRun,
    readonly runName: string,
    private readonly inputs: StepMetricsInputs = {},
  ) {
    this.roots = [run.root];
  }

  private async steps(): Promise<ReturnType<typeof slimeStepMetrics>> {
    const train = await this.run.allDumps(false);
    const evals = await this.run.allDumps(true);
    // Decoded dumps are reused while unchanged; the metrics are recomputed only when the set changes.
    const key = [...train, ...evals].map((d) => `${d.file}:${d.samples.length}`).join('|');
    if (this.stepsMemo?.key === key) return this.stepsMemo.steps;
    const steps = slimeStepMetrics(train, evals, this.inputs);
    this.stepsMemo = { key, steps };
    return steps;
  }

  async meta(): Promise<RunMetaAnswer> {
    const ids = await this.run.rolloutIds();
    return {
      run_name: this.runName,
      start_ts: null,
      wandb_url: null,
      data_buffer_length: null,
      time_range: null,
      rollout_ids: ids,
      metric_keys: slimeMetricKeys(await this.steps()),
      engine_metric_keys: [],
      step_keys: [],
      has_metrics: true,
      has_tokenizer: false,
      has_timeline: false,
      has_engine_series: false,
    };
  }

  private async need(rolloutId: number, evaluation: boolean): Promise<SlimeDump> {
    const d = await this.run.dump(rolloutId, evaluation);
    if (!d) throw notFound(`${evaluation ? 'eval ' : ''}rollout ${rolloutId} is not in this run`, 'rollout_id');
    return d;
  }

  private async sample(rolloutId: number, index: number, evaluation: boolean) {
    const d = await this.need(rolloutId, evaluation);
    const s = sampleByIndex(d, index);
    if (!s) throw notFound(`sample ${index} is not in ${evaluation ? 'eval ' : ''}rollout ${rolloutId}`, 'sample_index');
    return { d, s };
  }

  async topology(): Promise<Topology> {
    throw notFound(NO_TIMELINE);
  }
  async selectLanes(): Promise<LanesAnswer> {
    throw notFound(NO_TIMELINE);
  }
  async phases(): Promise<PhasesAnswer> {
    throw notFound(NO_TIMELINE);
  }
  async gpu(): Promise<GpuAnswer> {
    throw notFound(NO_TIMELINE);
  }
  async gpuProcesses(): Promise<GpuProcessesAnswer> {
    throw notFound(NO_TIMELINE);
  }
  async heatmap(): Promise<Uint8Array> {
    throw notFound(NO_TIMELINE);
  }
  async fleet(): Promise<Fleet> {
    throw notFound(NO_TIMELINE);
  }
  async outliers(): Promise<OutliersAnswer> {
    throw notFound(NO_TIMELINE);
  }
  async engineSeries(): Promise<EngineSeriesAnswer> {
    throw notFound(NO_TIMELINE);
  }
  async bubbles(): Promise<BubblesAnswer> {
    return { bubbles: [] };
  }

  async metrics(q: { keys: string[] }): Promise<MetricsAnswer> {
    return slimeMetricsAnswer(await this.steps(), q.keys);
  }

  async advisory(): Promise<LocatedAdvisoryAnswer> {
    return { advisories: [], mfu: null };
  }

  async summary(rolloutId: number, evaluation: boolean): Promise<RolloutTable> {
    return slimeSummary(await this.need(rolloutId, evaluation));
  }

  async groups(rolloutId: number, evaluation: boolean): Promise<RolloutTable> {
    return slimeGroups(await this.need(rolloutId, evaluation));
  }

  async trajectories(rolloutId: number): Promise<Trajectories> {
    await this.need(rolloutId, false);
    return { lanes: [], consume_ts: null, t0: null };
  }

  async messages(rolloutId: number, sampleIndex: number, evaluation: boolean): Promise<Conversation> {
    return slimeConversation((await this.sample(rolloutId, sampleIndex, evaluation)).s);
  }

  async tokens(rolloutId: number, sampleIndex: number, q: { start: number; end?: number; evaluation: boolean }): Promise<TokenView> {
    const { d, s } = await this.sample(rolloutId, sampleIndex, q.evaluation);
    return slimeTokens(d, s, { start: q.start, end: q.end });
  }

  async trace(rolloutId: number, evaluation: boolean): Promise<TraceAnswer> {
    const d = await this.need(rolloutId, evaluation);
    return traceView(d.samples, d);
  }

  async traceDetails(rolloutId: number, evaluation: boolean, row: number): Promise<TraceDetails> {
    const d = await this.need(rolloutId, evaluation);
    const s = d.samples[row];
    const details = s ? traceDetails(s) : null;
    if (!details) throw notFound(`row ${row} of ${d.file} has no trace`, 'row');
    return details;
  }

  async advance(): Promise<void> {
    this.run.refresh();
  }

  async catalog(): Promise<RunCatalog> {
    const m = await this.meta();
    return { steps: m.rollout_ids.train, rollout_ids: m.rollout_ids, metric_keys: m.metric_keys, engine_metric_keys: [], lanes: [], time_range: null };
  }

  warnings(): string[] {
    return this.run.warnings();
  }
}
