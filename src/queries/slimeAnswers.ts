// The answers about a slime run: everything a run answers (Rollouts, Sample, search, exports), plus slime's
// per-step metrics (perf/, rollout/, eval/ and the corrected perf_fixed/) and the request traces.
//
// What the whole-run answers (`/api/meta`, the computed and `dump/*` series, the runs table's span) take of each
// step is derived once from its dump, all of it at once, and kept by the step's stamp (in the cache directory
// too). The server's first whole-run answer does not wait for every step: it reads steps for at most
// `stepBudgetMs`, answers over the steps read with their `coverage`, and the others are read in the background,
// one at a time between requests, the newest train and eval step first, then in rollout id order; the commands
// read every step before answering.
import { DumpStillWriting, NotFound } from '../run/errors.ts';
import type { DerivedEntry, RunModel, SlimeDump, StepPriority, TraceSource } from '../run/model.ts';
import type { Meta, MetricsAnswer, RolloutTable, RunListing, StepCoverage } from '../wire/index.ts';
import { checkLatestKeys } from './limits.ts';
import { DUMP_METRIC_PREFIX, metricsAnswer, WALL_TIME_X } from './metrics.ts';
import { rolloutGroups, stepAggregate, stepTables, type StepAggregate } from './rollouts.ts';
import type { TraceAnswer, TraceDetails } from '../wire/trace.ts';
import { RunAnswers, type HandedIn, type Presentation, type Window } from './runAnswers.ts';
import { latestValues, runStatus } from './runsTable.ts';
import { loggedEvalDatasets, slimeMetricKeys, slimeMetricsAnswer, slimeStepMetrics, type StepMetricsInputs } from './slimeRollouts.ts';
import { traceDetails, traceView, widenedByTrace } from './slimeTraceView.ts';
import { fewAndSmall, unreadRuns } from './stepFacts.ts';

type StepMetric = ReturnType<typeof slimeStepMetrics>[number];

/** A step whose dump cannot be read: nothing derived from it (its problem is in the run's warnings). */
const UNREADABLE = Symbol('unreadable');

/** The cache entry of a slime or collected run's per-step derived values (each step's all together). */
export const SLIME_STEPS_ENTRY = 'slime-steps.json';
const SLIME_STEPS_VERSION = 1;

/** Decode time a whole-run answer the server gives spends on steps not read yet before it answers over those read, ms. */
export const STEP_BUDGET_MS = 120;

/** JSON of derived values with their non-finite numbers kept (JSON has no NaN or ±Infinity). */
const keepNonFinite = (_: string, v: unknown): unknown => (typeof v === 'number' && !Number.isFinite(v) ? { nonfinite: String(v) } : v);
const restoreNonFinite = (_: string, v: unknown): unknown => (v !== null && typeof v === 'object' && 'nonfinite' in v && Object.keys(v).length === 1 ? Number((v as { nonfinite: string }).nonfinite) : v);

/** One step's dump as listed (nothing decoded): `key` is `train:ID` or `eval:ID`. */
interface ListedStep {
  rolloutId: number;
  evaluation: boolean;
  stamp: string;
  key: string;
}

/** One value derived from a step's dump, kept under `WHAT:KEY` with the step's stamp and `salt` (the inputs beside it). */
interface Derivation {
  what: 'metrics' | 'aggregate' | 'span';
  salt: string;
  make(d: SlimeDump): unknown;
}

/** The keys computed from eval steps (`eval/{dataset}…`). */
const EVAL_PREFIX = 'eval/';

/** Every value a train step's derived entry holds; an eval step's holds `metrics` and `span`. */
const TRAIN_VALUES = ['metrics', 'aggregate', 'span'] as const;
const EVAL_VALUES = ['metrics', 'span'] as const;

/** The whole-run answers' view of the steps: what the steps read yield, ascending, and `coverage` while some are not read. */
interface StepsRead {
  /** Train steps' then eval steps' computed metrics. */
  metrics: StepMetric[];
  /** Train steps' `dump/*` aggregates. */
  aggregates: StepAggregate[];
  /** First start and last end over the steps' request traces, null without any. */
  span: [number, number] | null;
  /** Present while some steps are not read yet: over train and eval steps, and over each kind alone (absent once it is all read). */
  coverage?: StepCoverage;
  train?: StepCoverage;
  eval?: StepCoverage;
}

/**
 * The steps of `listed` (by rollout id) that `unread` picks, in the order they are read: the run's newest train and
 * eval step first (a partial runs-table row's `latest` values and a followed run's status come from them), then by
 * rollout id.
 */
function readingOrder(listed: readonly ListedStep[], unread: (s: ListedStep) => boolean): ListedStep[] {
  const newest = [listed.findLast((s) => !s.evaluation), listed.findLast((s) => s.evaluation)].filter((s): s is ListedStep => s !== undefined && unread(s));
  return [...newest, ...listed.filter((s) => unread(s) && !newest.includes(s))];
}

/** Counts the steps of an answer, read and not read yet. */
class Tally {
  private readonly ids: number[] = [];
  private readonly missing = new Set<number>();
  private done = 0;
  private total = 0;

  add(rolloutId: number, read: boolean): void {
    if (this.ids.at(-1) !== rolloutId) this.ids.push(rolloutId);
    this.total++;
    if (read) this.done++;
    else this.missing.add(rolloutId);
  }

  /** The coverage of an answer over these steps; undefined when every one is read. */
  coverage(): StepCoverage | undefined {
    if (this.missing.size === 0) return undefined;
    return { steps_done: this.done, steps_total: this.total, unread: unreadRuns(this.ids, this.missing) };
  }
}

export class SlimeAnswers extends RunAnswers {
  /** What is derived from each step's dump, by what and step, with the stamp (and inputs) it was derived at. */
  private readonly derived = new Map<string, { stamp: string; value: unknown }>();
  /** Steps found still being written, by key, with the stamp they had then: left out of the answers until it changes. */
  private readonly writing = new Map<string, string>();
  /** Step reads under way (an answer and the background read wait for the same one). */
  private readonly reading = new Map<string, { want: string; done: Promise<void> }>();
  /** Where `derived` is kept across starts (its readable steps'), read once before the first answer. */
  private readonly kept: DerivedEntry | null;
  private loaded: Promise<void> | null = null;
  private sweeping: Promise<void> | null = null;
  private closed = false;
  /** Decode time a progressive whole-run answer spends on unread steps before answering over those read, ms. */
  stepBudgetMs = STEP_BUDGET_MS;

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

  /**
   * Rewrites the kept entry (once no answer is being given) with every readable step whose values are all there,
   * derived from the same files: a step is kept whole or not at all.
   */
  private keep(): void {
    this.kept?.write(() => {
      const steps: Record<string, { stamp: string; value: unknown }> = {};
      const whole = new Map<string, boolean>();
      for (const k of this.derived.keys()) {
        const key = stepKeyOf(k);
        if (!whole.has(key)) whole.set(key, this.wholeStep(key));
        if (whole.get(key)) steps[k] = this.derived.get(k)!;
      }
      return JSON.stringify({ version: SLIME_STEPS_VERSION, steps }, keepNonFinite);
    });
  }

  /**
   * Whether every value of the step is derived, none unreadable, all from the same files: each stamp is the span's
   * (`FILES|`, derived without inputs), an eval step's metrics' that followed by the dataset names.
   */
  private wholeStep(key: string): boolean {
    const evaluation = key.startsWith('eval:');
    const span = this.derived.get(`span:${key}`);
    if (span === undefined || span.value === UNREADABLE) return false;
    return (evaluation ? EVAL_VALUES : TRAIN_VALUES).every((what) => {
      const v = this.derived.get(`${what}:${key}`);
      return v !== undefined && v.value !== UNREADABLE && (v.stamp === span.stamp || (evaluation && what === 'metrics' && v.stamp.startsWith(span.stamp)));
    });
  }

  /** The eval datasets' names: those given, else those the run logged itself (a run recorded through slime's hooks). */
  private evalNames(): readonly string[] {
    return this.inputs.evalDatasetNames ?? loggedEvalDatasets(this.metricsRecords());
  }

  /** What is derived from one step's dump. */
  private derivations(evaluation: boolean, names: readonly string[]): Derivation[] {
    const span: Derivation = { what: 'span', salt: '', make: (d) => widenedByTrace(null, traceView(d.samples, d)) };
    if (evaluation) return [{ what: 'metrics', salt: names.join(','), make: (d) => slimeStepMetrics([], [d], { ...this.inputs, evalDatasetNames: [...names] })[0]! }, span];
    const aggregate = async (d: SlimeDump): Promise<StepAggregate> => {
      const t = await this.tables(d.rolloutId, false);
      return stepAggregate(t.summary, t.groups);
    };
    return [{ what: 'metrics', salt: '', make: (d) => slimeStepMetrics([d], [], this.inputs)[0]! }, { what: 'aggregate', salt: '', make: aggregate }, span];
  }

  /** Whether every value of the step is derived from its files as they are now (and the inputs as they are). */
  private isRead(s: ListedStep, names: readonly string[]): boolean {
    return this.derivations(s.evaluation, names).every((d) => this.derived.get(`${d.what}:${s.key}`)?.stamp === `${s.stamp}|${d.salt}`);
  }

  /** Found still being written at its present stamp: left out, as a complete answer leaves it out. */
  private isWriting(s: ListedStep): boolean {
    return this.writing.get(s.key) === s.stamp;
  }

  /**
   * The run's steps, nothing decoded: by rollout id, a step's train dump before its eval dump. What was derived
   * from steps the run no longer holds is forgotten.
   */
  private async current(): Promise<{ listed: ListedStep[]; names: readonly string[] }> {
    await this.load();
    const names = this.evalNames();
    const [train, evals] = await Promise.all([this.traces.stepStamps(false), this.traces.stepStamps(true)]);
    const listed = [...train.map((t) => ({ ...t, evaluation: false })), ...evals.map((t) => ({ ...t, evaluation: true }))]
      .sort((a, b) => a.rolloutId - b.rolloutId || Number(a.evaluation) - Number(b.evaluation))
      .map((t) => ({ ...t, key: `${t.evaluation ? 'eval' : 'train'}:${t.rolloutId}` }));
    const held = new Set(listed.map((s) => s.key));
    let changed = false;
    for (const k of [...this.derived.keys()]) {
      if (held.has(stepKeyOf(k))) continue;
      this.derived.delete(k);
      changed = true;
    }
    for (const k of [...this.writing.keys()]) if (!held.has(k)) this.writing.delete(k);
    if (changed) this.keep();
    return { listed, names };
  }

  /**
   * Decodes one step and derives all of its values at once (so one decode serves every whole-run answer); a step
   * still being written is noted and derives nothing. One read of a step at a time: a second asker waits for it.
   */
  private readStep(s: ListedStep, names: readonly string[]): Promise<void> {
    const want = `${s.stamp}|${names.join(',')}`;
    const flying = this.reading.get(s.key);
    if (flying?.want === want) return flying.done;
    const done: Promise<void> = (async () => {
      let d: SlimeDump | null;
      try {
        d = await this.traces.readableDump(s.rolloutId, s.evaluation);
      } catch (e) {
        // read once it is whole
        if (e instanceof DumpStillWriting) {
          this.writing.set(s.key, s.stamp);
          return;
        }
        throw e;
      }
      this.writing.delete(s.key);
      const values: [string, { stamp: string; value: unknown }][] = [];
      for (const v of this.derivations(s.evaluation, names)) values.push([`${v.what}:${s.key}`, { stamp: `${s.stamp}|${v.salt}`, value: d === null ? UNREADABLE : await v.make(d) }]);
      // the step's values all at once, never some of them
      for (const [k, v] of values) this.derived.set(k, v);
      this.keep();
    })().finally(() => {
      if (this.reading.get(s.key)?.done === done) this.reading.delete(s.key);
    });
    this.reading.set(s.key, { want, done });
    return done;
  }

  /** Whether these steps are few and their dumps total less than `atOnceBytes`: read before answering. */
  private cheap(steps: readonly ListedStep[]): Promise<boolean> {
    // the health board's threshold (see RunAnswers) holds for the whole-run answers too
    return fewAndSmall(steps, this.partialStepsFromBytes, (s) => this.traces.dumpBytes(s.rolloutId, s.evaluation));
  }

  /**
   * The steps as a whole-run answer sees them. `budgetMs`: how long it may decode steps not read yet (in rollout
   * id order) before it answers over those read, with their coverage, the others read in the background;
   * Infinity reads every step first (the complete answer). A few small steps are always read first.
   */
  private async stepsRead(budgetMs: number): Promise<StepsRead> {
    const { listed, names } = await this.current();
    const unread = readingOrder(listed, (s) => !this.isRead(s, names));
    const deadline = budgetMs === Infinity || (await this.cheap(unread)) ? Infinity : performance.now() + budgetMs;
    for (const s of unread) {
      if (performance.now() >= deadline) break;
      await this.readStep(s, names);
    }
    const train: StepMetric[] = [];
    const evals: StepMetric[] = [];
    const aggregates: StepAggregate[] = [];
    let span: [number, number] | null = null;
    const all = new Tally();
    const kinds = { train: new Tally(), eval: new Tally() };
    for (const s of listed) {
      const read = this.isRead(s, names);
      if (!read && this.isWriting(s)) continue;
      all.add(s.rolloutId, read);
      kinds[s.evaluation ? 'eval' : 'train'].add(s.rolloutId, read);
      if (!read) continue;
      const value = (what: Derivation['what']): unknown => this.derived.get(`${what}:${s.key}`)!.value;
      if (value('metrics') === UNREADABLE) continue;
      (s.evaluation ? evals : train).push(value('metrics') as StepMetric);
      if (!s.evaluation) aggregates.push(value('aggregate') as StepAggregate);
      const sp = value('span') as [number, number] | null;
      if (sp !== null) span = span === null ? sp : [Math.min(span[0], sp[0]), Math.max(span[1], sp[1])];
    }
    const out: StepsRead = { metrics: [...train, ...evals], aggregates, span };
    const coverage = all.coverage();
    if (coverage === undefined) return out;
    this.sweep();
    return { ...out, coverage, train: kinds.train.coverage(), eval: kinds.eval.coverage() };
  }

  /** Reads the steps not read yet in the background, (see `readingOrder`), one at a time between requests. */
  private sweep(): void {
    if (this.sweeping !== null || this.closed) return;
    this.sweeping = (async () => {
      while (!this.closed) {
        const { listed, names } = await this.current();
        const todo = readingOrder(listed, (s) => !this.isRead(s, names) && !this.isWriting(s));
        if (todo.length === 0) return;
        for (const s of todo) {
          await this.traces.backgroundTurn();
          if (this.closed) return;
          if (!this.isRead(s, names) && !this.isWriting(s)) await this.readStep(s, names);
        }
      }
    })()
      .catch(() => {
        // the step that failed is read again by the next answer, which says why
      })
      .finally(() => {
        this.sweeping = null;
      });
  }

  /** Settles once the background read of the steps is done (tests, benchmarks). */
  async stepsSettled(): Promise<void> {
    while (this.sweeping) await this.sweeping;
  }

  override close(): Promise<void> {
    this.closed = true;
    return super.close();
  }

  private async steps(): Promise<StepMetric[]> {
    return (await this.stepsRead(Infinity)).metrics;
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

  /**
   * A slime dump is read in one piece, with no queue of steps to wait in; the health board's background read of
   * a step waits for a turn between requests first (as the whole-run answers' background read does).
   */
  protected override async stepTablesOf(step: number, priority: StepPriority): Promise<{ summary: RolloutTable; groups: RolloutTable }> {
    if (priority === 'background') await this.traces.backgroundTurn();
    return this.tables(step, false);
  }

  override async summary(rolloutId: number, evaluation: boolean): Promise<RolloutTable> {
    const t = await this.tables(rolloutId, evaluation);
    this.asked(rolloutId, evaluation);
    return t.summary;
  }

  override async groups(rolloutId: number, evaluation: boolean): Promise<RolloutTable> {
    const t = await this.tables(rolloutId, evaluation);
    this.asked(rolloutId, evaluation);
    return t.groups;
  }

  /**
   * A step someone opened is read for the whole-run answers too, ahead of the background read (its dump was just
   * decoded): its `dump/*` figures do not wait for the steps before it.
   */
  private asked(rolloutId: number, evaluation: boolean): void {
    void (async () => {
      await this.load();
      const s: ListedStep = { rolloutId, evaluation, stamp: await this.stepStamp(rolloutId, evaluation), key: `${evaluation ? 'eval' : 'train'}:${rolloutId}` };
      const names = this.evalNames();
      if (!this.isRead(s, names)) await this.readStep(s, names);
    })().catch(() => {
      // read again by the answer that needs it, which says why it cannot be
    });
  }

  override async stepAggregates(): Promise<StepAggregate[]> {
    return (await this.stepsRead(Infinity)).aggregates;
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

  /** `progressive`: at once over the steps read so far, with their coverage (the server's); else every step read first. */
  private budget(progressive: boolean | undefined): number {
    return progressive ? this.stepBudgetMs : Infinity;
  }

  override async meta(p: Presentation & { progressive?: boolean }): Promise<Meta> {
    const m = await super.meta(p);
    const read = await this.stepsRead(this.budget(p.progressive));
    const own = this.computedKeys(read.metrics);
    return {
      ...m,
      run_name: m.run_name ?? this.model.dir.split('/').pop() ?? null,
      metric_keys: [...own, ...m.metric_keys.filter((k) => !own.includes(k))],
      capabilities: { ...m.capabilities, has_metrics: true },
      ...(read.coverage ? { coverage: read.coverage } : {}),
    };
  }

  override async metrics(q: Window & { keys: string[]; x: string; progressive?: boolean }): Promise<MetricsAnswer> {
    return this.metricsOver(await this.stepsRead(this.budget(q.progressive)), q);
  }

  private async metricsOver(read: StepsRead, q: Window & { keys: readonly string[]; x: string }): Promise<MetricsAnswer> {
    const own = new Set(this.computedKeys(read.metrics));
    const mine = slimeMetricsAnswer(read.metrics, q.keys.filter((k) => own.has(k)));
    // what the run logged itself (a run recorded live logs slime's metrics, rollout_time included) comes first
    const logged = await metricsAnswer(this.store, q.keys, q, () => read.aggregates);
    const out: MetricsAnswer = {};
    for (const k of q.keys) {
      const series = logged[k] !== undefined && (logged[k].x.length > 0 || mine[k] === undefined) ? logged[k] : mine[k];
      if (series === undefined) continue;
      // while steps are unread, a series that may take points from them says what it covers (a logged one is
      // whole): an `eval/` key is computed from the eval steps, the others (and `dump/*`) from the train steps
      const ofSteps = k.startsWith(DUMP_METRIC_PREFIX) || !logged[k]?.x.length;
      const coverage = k.startsWith(EVAL_PREFIX) ? read.eval : read.train;
      out[k] = coverage !== undefined && ofSteps ? { ...series, coverage } : series;
    }
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

  /**
   * The runs table's row: a slime run writes no telemetry, so its start and end are the span its request traces
   * cover; `latest` values computed from the steps. `progressive`: over the steps read so far, with their coverage.
   */
  override async listing(id: string, primary: boolean, opts: { follow?: boolean; latest?: readonly string[]; progressive?: boolean } = {}): Promise<RunListing> {
    const keys = checkLatestKeys(opts.latest ?? []);
    const l = await super.listing(id, primary, { ...opts, latest: [] });
    const spanWanted = l.start_ts === null || l.end_ts === null;
    if (!spanWanted && keys.length === 0) return l;
    const read = await this.stepsRead(this.budget(opts.progressive));
    const latest = keys.length ? latestValues(await this.metricsOver(read, { keys: [...keys], x: WALL_TIME_X }), keys) : l.latest;
    const span = spanWanted ? read.span : null;
    const end = l.end_ts ?? span?.[1] ?? null;
    // a followed run without telemetry is live or quiet by its traces' newest end, as one with telemetry is by its edge
    const status = l.end_ts === null && end !== null ? runStatus(l.warnings, opts.follow ?? false, end, Date.now() / 1000, this.store.recorder?.() ?? null) : l.status;
    return { ...l, start_ts: l.start_ts ?? span?.[0] ?? null, end_ts: end, status, latest, ...(read.coverage ? { coverage: read.coverage } : {}) };
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

/** `train:ID` or `eval:ID` of a derived value's key `WHAT:train:ID`. */
function stepKeyOf(key: string): string {
  return key.slice(key.indexOf(':') + 1);
}

/** The answers for an open run: a run that records per-request traces (slime) gets their metrics and traces too. */
export function answersFor(model: RunModel, handed: HandedIn & { slime?: StepMetricsInputs } = {}): RunAnswers {
  return model.traces ? new SlimeAnswers(model, model.traces, handed.slime, handed) : new RunAnswers(model, handed);
}
