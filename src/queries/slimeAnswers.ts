// The answers about a slime run: everything a run answers (Rollouts, Sample, search, exports), plus slime's
// per-step metrics (perf/, rollout/, eval/ and the corrected perf_fixed/) and the request traces.
import { DumpStillWriting, NotFound } from '../run/errors.ts';
import type { DerivedEntry, RunModel, SlimeDump, TraceSource } from '../run/model.ts';
import type { Meta, MetricsAnswer, RolloutTable, RunListing } from '../wire/index.ts';
import { rolloutGroups, stepAggregate, stepTables, type StepAggregate } from './rollouts.ts';
import type { TraceAnswer, TraceDetails } from '../wire/trace.ts';
import { RunAnswers, type HandedIn, type Presentation, type Window } from './runAnswers.ts';
import { loggedEvalDatasets, slimeMetricKeys, slimeMetricsAnswer, slimeStepMetrics, type StepMetricsInputs } from './slimeRollouts.ts';
import { traceDetails, traceView, widenedByTrace } from './slimeTraceView.ts';

type StepMetric = ReturnType<typeof slimeStepMetrics>[number];

/** A step whose dump cannot be read: nothing derived from it (its problem is in the run's warnings). */
const UNREADABLE = Symbol('unreadable');

/** The cache entry of a slime or collected run's per-step derived values (kept by `eachStep`). */
export const SLIME_STEPS_ENTRY = 'slime-steps.json';
const SLIME_STEPS_VERSION = 1;

/** JSON of derived values with their non-finite numbers kept (JSON has no NaN or ±Infinity). */
const keepNonFinite = (_: string, v: unknown): unknown => (typeof v === 'number' && !Number.isFinite(v) ? { nonfinite: String(v) } : v);
const restoreNonFinite = (_: string, v: unknown): unknown => (v !== null && typeof v === 'object' && 'nonfinite' in v && Object.keys(v).length === 1 ? Number((v as { nonfinite: string }).nonfinite) : v);

export class SlimeAnswers extends RunAnswers {
  /** What is derived from each step's dump, by what and step, with the stamp (and inputs) it was derived at. */
  private readonly derived = new Map<string, { stamp: string; value: unknown }>();
  /** Where `derived` is kept across starts (its readable steps'), read once before the first answer. */
  private readonly kept: DerivedEntry | null;
  private loaded: Promise<void> | null = null;

  constructor(
    model: RunModel,
    private readonly traces: TraceSource,
    private readonly inputs: StepMetricsInputs = {},
    handed: HandedIn = {},
  ) {
    super(model, handed);
    this.kept = handed.slimeSteps ?? null;
  }

  /** The values a previous start derived, taken while their steps' stamps still match (checked as they are used). */
  private load(): Promise<void> {
    this.loaded ??= (async () => {
      const text = await this.kept?.read().catch(() => null);
      if (!text) return;
      try {
        const doc = JSON.parse(text, restoreNonFinite) as { version?: unknown; steps?: Record<string, { stamp: string; value: unknown }> };
        if (doc.version !== SLIME_STEPS_VERSION || !doc.steps) return;
        for (const [k, v] of Object.entries(doc.steps)) if (!this.derived.has(k) && typeof v?.stamp === 'string') this.derived.set(k, v);
      } catch {
        // a damaged entry: derived again
      }
    })();
    return this.loaded;
  }

  /** Rewrites the kept entry (once no answer is being given) with every readable step's values. */
  private keep(): void {
    this.kept?.write(() => {
      const steps: Record<string, { stamp: string; value: unknown }> = {};
      for (const [k, v] of this.derived) if (v.value !== UNREADABLE) steps[k] = v;
      return JSON.stringify({ version: SLIME_STEPS_VERSION, steps }, keepNonFinite);
    });
  }

  /**
   * `make` of each readable step of one kind, ascending, kept by `what` while the step's files (and `salt`, the
   * inputs beside them) are unchanged: a followed run's answers decode only its new or rewritten steps, whatever
   * its length (its dumps are not all kept; re-reading every step for each answer grew with the run), and with a
   * cache directory a restarted server decodes none it has read before.
   */
  private async eachStep<T>(what: string, evaluation: boolean, make: (d: SlimeDump) => T | Promise<T>, salt = ''): Promise<T[]> {
    await this.load();
    const prefix = `${what}:${evaluation ? 'eval' : 'train'}:`;
    const out: T[] = [];
    const seen = new Set<string>();
    let changed = false;
    for (const { rolloutId, stamp } of await this.traces.stepStamps(evaluation)) {
      const key = prefix + rolloutId;
      seen.add(key);
      const want = `${stamp}|${salt}`;
      let hit = this.derived.get(key);
      if (hit?.stamp !== want) {
        let d: SlimeDump | null;
        try {
          d = await this.traces.readableDump(rolloutId, evaluation);
        } catch (e) {
          // read once it is whole
          if (e instanceof DumpStillWriting) continue;
          throw e;
        }
        hit = { stamp: want, value: d === null ? UNREADABLE : await make(d) };
        this.derived.set(key, hit);
        changed = true;
      }
      if (hit.value !== UNREADABLE) out.push(hit.value as T);
    }
    for (const k of this.derived.keys()) {
      if (k.startsWith(prefix) && !seen.has(k)) {
        this.derived.delete(k);
        changed = true;
      }
    }
    if (changed) this.keep();
    return out;
  }

  private async steps(): Promise<StepMetric[]> {
    // eval datasets by the names given, else by those the run logged itself (a run recorded through slime's hooks)
    const names = this.inputs.evalDatasetNames ?? loggedEvalDatasets(this.metricsRecords());
    const train = await this.eachStep('metrics', false, (d) => slimeStepMetrics([d], [], this.inputs)[0]!);
    const evals = await this.eachStep('metrics', true, (d) => slimeStepMetrics([], [d], { ...this.inputs, evalDatasetNames: names })[0]!, names.join(','));
    return [...train, ...evals];
  }

  /**
   * The step's table with the raw reward filled in: slime dumps samples before reward normalisation, so a
   * sample's reward is its raw reward (a miles run reads it from the train dumps).
   */
  private async tables(rolloutId: number, evaluation: boolean): Promise<{ summary: RolloutTable; groups: RolloutTable }> {
    const base = stepTables(await this.model.step(rolloutId, evaluation)).summary;
    const summary = evaluation ? base : { ...base, rows: base.rows.map((r) => ({ ...r, raw_reward: r.reward })) };
    return { summary, groups: rolloutGroups(summary) };
  }

  /** A slime dump is read in one piece, with no queue of steps to wait in. */
  protected override stepTablesOf(step: number): Promise<{ summary: RolloutTable; groups: RolloutTable }> {
    return this.tables(step, false);
  }

  override async summary(rolloutId: number, evaluation: boolean): Promise<RolloutTable> {
    return (await this.tables(rolloutId, evaluation)).summary;
  }

  override async groups(rolloutId: number, evaluation: boolean): Promise<RolloutTable> {
    return (await this.tables(rolloutId, evaluation)).groups;
  }

  override stepAggregates(): Promise<StepAggregate[]> {
    return this.eachStep('aggregate', false, async (d) => {
      const t = await this.tables(d.rolloutId, false);
      return stepAggregate(t.summary, t.groups);
    });
  }

  /**
   * The computed keys served: those of a family (`rollout/`, `perf/`, `perf_fixed/`, `eval/`) the run did not log
   * itself. A trainer that logs its own `rollout/…` keys gets none computed beside them: a family is either the
   * trainer's or slime's computation, never a mix of the two (a logged mean above a computed max).
   */
  private computedKeys(steps: ReturnType<typeof slimeStepMetrics>): string[] {
    const family = (k: string): string => k.slice(0, k.indexOf('/') + 1);
    const logged = new Set(this.store.metricKeys().filter((k) => k.includes('/')).map(family));
    return slimeMetricKeys(steps).filter((k) => !logged.has(family(k)));
  }

  override async meta(p: Presentation): Promise<Meta> {
    const m = await super.meta(p);
    const own = this.computedKeys(await this.steps());
    return { ...m, run_name: m.run_name ?? this.model.dir.split('/').pop() ?? null, metric_keys: [...own, ...m.metric_keys.filter((k) => !own.includes(k))], capabilities: { ...m.capabilities, has_metrics: true } };
  }

  override async metrics(q: Window & { keys: string[]; x: string; progressive?: boolean }): Promise<MetricsAnswer> {
    const steps = await this.steps();
    const own = new Set(this.computedKeys(steps));
    const mine = slimeMetricsAnswer(steps, q.keys.filter((k) => own.has(k)));
    // what the run logged itself (a run recorded live logs slime's metrics, rollout_time included) comes first
    // (its dumps are all decoded for its own metrics already: its `dump/*` series are complete at once)
    const logged = await super.metrics({ ...q, progressive: false });
    const out: MetricsAnswer = {};
    for (const k of q.keys) out[k] = logged[k] !== undefined && (logged[k].x.length > 0 || mine[k] === undefined) ? logged[k] : mine[k];
    return out;
  }

  /** The step's computed perf/, rollout/ and perf_fixed/ values beside what the run logged (which wins) and its `dump/*` aggregate. */
  override async stepMetrics(step: number): Promise<Map<string, number>> {
    const logged = await super.stepMetrics(step);
    const steps = await this.steps();
    const served = new Set(this.computedKeys(steps));
    const own = steps.find((s) => s.rolloutId === step && !s.evaluation)?.metrics ?? {};
    const out = new Map<string, number>();
    for (const [k, v] of Object.entries(own)) if (Number.isFinite(v) && served.has(k) && !logged.has(k)) out.set(k, v);
    for (const [k, v] of logged) out.set(k, v);
    return out;
  }

  /** The runs table's start and end: a slime run writes no telemetry, so the span its request traces cover. */
  override async listing(id: string, primary: boolean, opts: { follow?: boolean; latest?: readonly string[] } = {}): Promise<RunListing> {
    const l = await super.listing(id, primary, opts);
    if (l.start_ts !== null && l.end_ts !== null) return l;
    const span = await this.traceSpan();
    return span === null ? l : { ...l, start_ts: l.start_ts ?? span[0], end_ts: l.end_ts ?? span[1] };
  }

  /** First start and last end over every dump's request traces (null without any), each step's kept while it is unchanged. */
  private async traceSpan(): Promise<[number, number] | null> {
    const spanOf = (d: SlimeDump) => widenedByTrace(null, traceView(d.samples, d));
    let span: [number, number] | null = null;
    for (const evaluation of [false, true]) {
      for (const s of await this.eachStep('span', evaluation, spanOf)) if (s !== null) span = span === null ? s : [Math.min(span[0], s[0]), Math.max(span[1], s[1])];
    }
    return span;
  }

  override get hasTraces(): boolean {
    return true;
  }

  override async trace(rolloutId: number, evaluation: boolean): Promise<TraceAnswer> {
    const d = await this.traces.dump(rolloutId, evaluation);
    return traceView(d.samples, d);
  }

  override async traceDetails(rolloutId: number, evaluation: boolean, row: number): Promise<TraceDetails> {
    const d = await this.traces.dump(rolloutId, evaluation);
    const s = d.samples[row];
    if (!s) throw new NotFound(`row ${row} is not in ${d.file} (${d.samples.length === 0 ? 'it holds no samples' : `rows 0-${d.samples.length - 1}`})`);
    const details = traceDetails(s);
    if (!details) throw new NotFound(`row ${row} of ${d.file} has no trace`);
    return details;
  }
}

/** The answers for an open run: a run that records per-request traces (slime) gets their metrics and traces too. */
export function answersFor(model: RunModel, handed: HandedIn & { slime?: StepMetricsInputs } = {}): RunAnswers {
  return model.traces ? new SlimeAnswers(model, model.traces, handed.slime, handed) : new RunAnswers(model, handed);
}
