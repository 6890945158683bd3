// The health board: one row per train step, one cell per known failure signal, each coloured by a threshold
// and pointing at the evidence. Pure: it reads step tables, logged metrics and telemetry records handed to it.
import type { MetricsRecord, PhaseEvent, StepPriority, TopologySnapshot } from '../run/model.ts';
import type {
  Evidence,
  HealthAnswer,
  HealthCell,
  HealthFiring,
  HealthLevel,
  HealthRow,
  HealthSignal,
  SignalSpec,
  StepCoverage,
  Threshold,
} from '../wire/index.ts';
import { BadArgument } from './limits.ts';
import { ENTRY_PHASE, judgeStep } from './stragglers.ts';
import type { TableRow } from '../wire/index.ts';

export type { HealthAnswer, HealthSignal, SignalSpec } from '../wire/index.ts';

export const HEALTH_SIGNALS: readonly HealthSignal[] = [
  'zero_std',
  'lp_drift',
  'imp_ratio',
  'truncation',
  'mixed_version',
  'staleness',
  'reward_jump',
  'length_jump',
  'step_time',
  'engine_restart',
  'straggler',
];

/** A per-sample mean importance ratio outside this band counts as an outlier. */
export const IMP_RATIO_BAND: readonly [number, number] = [0.8, 1.25];

/** Default thresholds; `--health-config FILE` overrides any of them. */
export const DEFAULT_SIGNALS: readonly SignalSpec[] = [
  { id: 'zero_std', label: 'zero-std groups', warn: 0.3, fire: 0.5, doc: 'fraction of GRPO groups whose rewards do not vary (no policy gradient)' },
  { id: 'lp_drift', label: 'mean |lp diff|', warn: 0.03, fire: 0.06, doc: 'mean over samples of the loss-masked mean |train − rollout log-prob|' },
  {
    id: 'imp_ratio',
    label: 'ratio outliers',
    warn: 0.02,
    fire: 0.05,
    doc: `fraction of samples whose mean importance ratio lies outside [${IMP_RATIO_BAND[0]}, ${IMP_RATIO_BAND[1]}]`,
  },
  { id: 'truncation', label: 'truncated', warn: 0.1, fire: 0.25, doc: 'fraction of samples cut at the response-length limit' },
  { id: 'mixed_version', label: 'mixed version', warn: 0.5, fire: 0.9, doc: 'fraction of samples generated across more than one weight version' },
  {
    id: 'staleness',
    label: 'staleness',
    warn: 2,
    fire: 3,
    doc: 'largest step − oldest weight version over the step’s samples (slime: newest − oldest weight version among them, in weight updates)',
  },
  { id: 'reward_jump', label: 'reward jump', warn: 0.15, fire: 0.3, doc: '|change of the mean reward| from the previous step' },
  { id: 'length_jump', label: 'length jump', warn: 0.25, fire: 0.5, doc: '|relative change of the mean response length| from the previous step' },
  { id: 'step_time', label: 'step time ×median', warn: 1.5, fire: 2, doc: 'step wall time over the run’s median step time' },
  { id: 'engine_restart', label: 'engine restarts', warn: 0.5, fire: 0.5, doc: 'rollout engines that came back on a new address during the step' },
  { id: 'straggler', label: 'straggler (s)', warn: 5, fire: 10, doc: 'seconds the latest outlier train rank entered the step after the median rank (0 when no rank is an outlier)' },
];

/** One train step as the board reads it; null tables when its dump could not be read. */
export interface HealthStep {
  step: number;
  summary: readonly TableRow[] | null;
  groups: readonly TableRow[] | null;
  /** Why the step's dump could not be read (`file: problem`): its row is marked damaged. */
  damaged?: string;
  /** The summary's `staleness_from`: set when staleness counts weight updates behind the step's newest version, not steps. */
  stalenessFrom?: 'newest_version';
}

export interface HealthPhase {
  name: string;
  t0: number;
  t1: number;
  rank: number;
  role: string;
}

export interface HealthInputs {
  /** Each step's tables, or its facts once read (see `healthStepFacts`). */
  steps: readonly (HealthStep | HealthStepFacts)[];
  /** A partial board: the train steps not read yet, as runs (their rows are left out). */
  coverage?: StepCoverage;
  metrics: readonly MetricsRecord[];
  topology: readonly TopologySnapshot[];
  phases: readonly HealthPhase[];
  startTs: number | null;
  signals?: readonly SignalSpec[];
  /** Why some steps are missing (unreadable dumps), passed through to the answer. */
  warnings?: string[];
}

const STEP_KEY = 'rollout/step';

/**
 * Thresholds from a `--health-config` document: `{ "<signal>": { "warn"?: x, "fire"?: y }, … }`.
 * An unknown signal, a non-number or `warn > fire` is an error naming the key.
 */
export function healthSignals(config: unknown, source = 'health config'): SignalSpec[] {
  const out = DEFAULT_SIGNALS.map((s) => ({ ...s }));
  if (config === undefined || config === null) return out;
  if (typeof config !== 'object' || Array.isArray(config)) throw new BadArgument('health_config', `${source}: expected a JSON object of signal thresholds`);
  for (const [key, value] of Object.entries(config as Record<string, unknown>)) {
    const spec = out.find((s) => s.id === key);
    if (!spec) throw new BadArgument('health_config', `${source}: unknown signal '${key}' (known: ${HEALTH_SIGNALS.join(', ')})`);
    if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new BadArgument('health_config', `${source}: '${key}' must be an object with warn and/or fire`);
    for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
      if (k !== 'warn' && k !== 'fire') throw new BadArgument('health_config', `${source}: '${key}.${k}' is not a threshold (warn, fire)`);
      if (typeof v !== 'number' || !Number.isFinite(v)) throw new BadArgument('health_config', `${source}: '${key}.${k}' must be a finite number`);
      spec[k] = v;
    }
    if (spec.warn > spec.fire) throw new BadArgument('health_config', `${source}: '${key}': warn ${spec.warn} is above fire ${spec.fire}`);
  }
  return out;
}

/** Parses `--fail-on a,b`: every name must be a signal. */
export function parseSignalList(text: string, param = 'fail_on'): HealthSignal[] {
  const names = text.split(',').map((s) => s.trim()).filter((s) => s !== '');
  if (names.length === 0) throw new BadArgument(param, `${param}: expected a comma-separated list of signals (${HEALTH_SIGNALS.join(', ')})`);
  for (const n of names) {
    if (!(HEALTH_SIGNALS as readonly string[]).includes(n)) throw new BadArgument(param, `${param}: unknown signal '${n}' (known: ${HEALTH_SIGNALS.join(', ')})`);
  }
  return names as HealthSignal[];
}

function num(v: unknown): number | null {
  if (typeof v === 'number') return Number.isFinite(v) ? v : null;
  if (typeof v === 'boolean') return v ? 1 : 0;
  return null;
}

function mean(xs: readonly number[]): number | null {
  if (xs.length === 0) return null;
  let s = 0;
  for (const x of xs) s += x;
  return s / xs.length;
}

function median(xs: readonly number[]): number | null {
  if (xs.length === 0) return null;
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

function column(rows: readonly TableRow[], name: string): number[] {
  const out: number[] = [];
  for (const r of rows) {
    const v = num(r[name]);
    if (v !== null) out.push(v);
  }
  return out;
}

/** The row with the largest `score`, or null when none has one. */
function argmax(rows: readonly TableRow[], score: (r: TableRow) => number | null): TableRow | null {
  let best: TableRow | null = null;
  let bestScore = -Infinity;
  for (const r of rows) {
    const s = score(r);
    if (s !== null && s > bestScore) {
      best = r;
      bestScore = s;
    }
  }
  return best;
}

const fmt = (x: number, digits = 3): string => (Number.isInteger(x) ? String(x) : x.toFixed(digits));
const pct = (x: number): string => `${(x * 100).toFixed(1)}%`;

function levelOf(value: number | null, t: Threshold): HealthLevel {
  if (value === null) return 'none';
  if (value >= t.fire) return 'fire';
  if (value >= t.warn) return 'warn';
  return 'ok';
}

const EMPTY: Omit<HealthCell, 'level'> = { value: null, detail: 'no data', evidence: null };

/** Per step: the `(t0, t1]` window it occupies on the wall clock, from the last record logged against it. */
function stepWindows(metrics: readonly MetricsRecord[], startTs: number | null): Map<number, { t0: number; t1: number }> {
  const ends = new Map<number, number>();
  for (const r of metrics) {
    if (r.step_key !== STEP_KEY || r.step === null) continue;
    ends.set(r.step, Math.max(ends.get(r.step) ?? -Infinity, r.ts));
  }
  const steps = [...ends.keys()].sort((a, b) => a - b);
  const out = new Map<number, { t0: number; t1: number }>();
  let prev = startTs ?? -Infinity;
  for (const s of steps) {
    const t1 = ends.get(s)!;
    out.set(s, { t0: Number.isFinite(prev) ? prev : t1 - 3600, t1 });
    prev = t1;
  }
  return out;
}

/** Logged value of `key` at each step (the last record wins). */
function loggedByStep(metrics: readonly MetricsRecord[], key: string): Map<number, number> {
  const out = new Map<number, number>();
  for (const r of metrics) {
    if (r.step_key !== STEP_KEY || r.step === null || !(key in r.metrics)) continue;
    const v = num(r.metrics[key]);
    if (v !== null) out.set(r.step, v);
  }
  return out;
}

/**
 * Engine restarts: an engine (known by the GPUs it holds, else its rank) that appears under a new address in
 * a topology snapshot taken at `ts`. Engine ranks are positions in a snapshot, so they shift while one is down.
 */
function restartTimes(topology: readonly TopologySnapshot[]): { ts: number; engine: string; from: string; to: string }[] {
  const addrOf = new Map<string, string>();
  const out: { ts: number; engine: string; from: string; to: string }[] = [];
  for (const snap of [...topology].sort((a, b) => a.ts - b.ts)) {
    for (const e of snap.engines) {
      const key = e.gpus.length ? e.gpus.map(([node, gpu]) => `${node}:${gpu}`).join(',') : `rank ${e.engine_rank}`;
      const known = addrOf.get(key);
      if (known !== undefined && known !== e.addr) out.push({ ts: snap.ts, engine: key, from: known, to: e.addr });
      addrOf.set(key, e.addr);
    }
  }
  return out;
}

/**
 * The straggler of a window: per train rank, when it entered the step (the end of its `train_wait` inside
 * the window, else its first phase's start there), judged as the stragglers rule judges a step; the answer
 * is the latest outlier rank and its lag behind the median rank, or the spread when no rank is an outlier.
 */
function straggler(phases: readonly HealthPhase[], w: { t0: number; t1: number }): { rank: number; late: number; threshold: number } | { spread: number; ranks: number } | null {
  const waited = new Map<number, number>();
  const started = new Map<number, number>();
  for (const p of phases) {
    if (p.role !== 'train' || p.rank < 0) continue;
    // A still-open interval has t1 = -1: it has not ended, so it marks no start.
    if (p.name === ENTRY_PHASE) {
      if (p.t1 >= p.t0 && p.t1 > w.t0 && p.t1 <= w.t1) waited.set(p.rank, Math.min(waited.get(p.rank) ?? Infinity, p.t1));
    } else if (p.t0 > w.t0 && p.t0 <= w.t1) started.set(p.rank, Math.min(started.get(p.rank) ?? Infinity, p.t0));
  }
  const entry = new Map(started);
  for (const [r, t] of waited) entry.set(r, t);
  const j = judgeStep(entry);
  if (j === null) return null;
  let rank = -1;
  let late = -Infinity;
  for (const r of j.late) {
    const lag = j.lags.get(r)!;
    if (lag > late) [rank, late] = [r, lag];
  }
  return rank >= 0 ? { rank, late, threshold: j.threshold } : { spread: j.spread, ranks: entry.size };
}

/** The signals a step's own dump answers; the others come from the run's logged metrics and telemetry. */
export type DumpSignal = 'zero_std' | 'lp_drift' | 'imp_ratio' | 'truncation' | 'mixed_version' | 'staleness';

/** What the board takes of one step's dump: its dump cells and the means its jumps compare (small: kept per step once read). */
export interface HealthStepFacts {
  step: number;
  cells: Record<DumpSignal, Omit<HealthCell, 'level'>>;
  rewardMean: number | null;
  lengthMean: number | null;
  /** Why the step's dump could not be read (`file: problem`): its row is marked damaged. */
  damaged?: string;
}

/** One step's dump cells and means, from its summary and groups tables. */
export function healthStepFacts(st: HealthStep): HealthStepFacts {
  const rows_ = st.summary;
  const cells = {} as Record<DumpSignal, Omit<HealthCell, 'level'>>;
  const rewardColumn = rows_ && rows_.some((r) => num(r.raw_reward) !== null) ? 'raw_reward' : 'reward';
  const rewardMean = rows_ ? mean(column(rows_, rewardColumn)) : null;
  const lengthMean = rows_ ? mean(column(rows_, 'response_length')) : null;

  if (st.groups && st.groups.length > 0) {
    const zero = st.groups.filter((g) => g.zero_std === true).length;
    cells.zero_std = {
      value: zero / st.groups.length,
      detail: `${zero}/${st.groups.length} groups have zero reward std`,
      evidence: { view: 'rollout', step: st.step, tab: 'groups', sort: 'zero_std' },
    };
  } else cells.zero_std = EMPTY;

  if (rows_) {
    const lp = column(rows_, 'mean_abs_lp_diff');
    const worst = argmax(rows_, (r) => num(r.mean_abs_lp_diff));
    const m = mean(lp);
    cells.lp_drift =
      m === null || !worst
        ? { ...EMPTY, detail: 'no train-side log-probs' }
        : {
            value: m,
            detail: `mean ${fmt(m, 4)} over ${lp.length} samples; worst sample ${String(worst.sample_index)} at ${fmt(num(worst.mean_abs_lp_diff)!, 4)}`,
            evidence: { view: 'sample', step: st.step, sample_index: worst.sample_index as number, color: 'lp_diff' },
          };

    const ratios = rows_.filter((r) => num(r.mean_imp_ratio) !== null);
    const outside = ratios.filter((r) => {
      const v = num(r.mean_imp_ratio)!;
      return v < IMP_RATIO_BAND[0] || v > IMP_RATIO_BAND[1];
    });
    const extreme = argmax(ratios, (r) => Math.abs(Math.log(Math.max(1e-12, num(r.mean_imp_ratio)!))));
    cells.imp_ratio =
      ratios.length === 0 || !extreme
        ? { ...EMPTY, detail: 'no importance ratios' }
        : {
            value: outside.length / ratios.length,
            detail: `${outside.length}/${ratios.length} samples outside [${IMP_RATIO_BAND[0]}, ${IMP_RATIO_BAND[1]}]; most extreme sample ${String(extreme.sample_index)} at ${fmt(num(extreme.mean_imp_ratio)!, 3)}`,
            evidence: { view: 'sample', step: st.step, sample_index: extreme.sample_index as number, color: 'imp_ratio' },
          };

    const trunc = column(rows_, 'truncated');
    const tf = mean(trunc);
    cells.truncation =
      tf === null
        ? EMPTY
        : { value: tf, detail: `${trunc.filter((x) => x > 0).length}/${trunc.length} samples truncated (${pct(tf)})`, evidence: { view: 'rollout', step: st.step, sort: 'truncated' } };

    const mixed = column(rows_, 'mixed_version');
    const mf = mean(mixed);
    cells.mixed_version =
      mf === null
        ? EMPTY
        : { value: mf, detail: `${mixed.filter((x) => x > 0).length}/${mixed.length} samples span several weight versions`, evidence: { view: 'rollout', step: st.step, sort: 'mixed_version' } };

    const stale = argmax(rows_, (r) => num(r.staleness));
    const behind = num(stale?.staleness ?? null);
    const oldest = num(stale?.weight_version_min ?? null);
    cells.staleness =
      stale && behind !== null
        ? {
            value: behind,
            // slime's weight versions count weight updates, not steps: measured from the newest one in the step
            detail:
              st.stalenessFrom === 'newest_version' && oldest !== null
                ? `oldest weights ${behind} weight update${behind === 1 ? '' : 's'} behind the step's newest (sample ${String(stale.sample_index)}: version ${oldest}, newest ${oldest + behind})`
                : `oldest weights ${String(stale.staleness)} steps behind (sample ${String(stale.sample_index)})`,
            evidence: { view: 'rollout', step: st.step, sort: 'staleness' },
          }
        : EMPTY;
  } else {
    for (const id of ['lp_drift', 'imp_ratio', 'truncation', 'mixed_version', 'staleness'] as const) cells[id] = { ...EMPTY, detail: st.damaged ? `dump damaged: ${st.damaged}` : 'dump not readable' };
  }
  return st.damaged ? { step: st.step, cells, rewardMean, lengthMean, damaged: st.damaged } : { step: st.step, cells, rewardMean, lengthMean };
}

/** The logged mean response length (miles' `rollout/response_len/mean`). */
const LOGGED_LENGTH = 'rollout/response_len/mean';

/** Previous-step means not known: the step before this one is not read yet (a partial board). */
const UNREAD = 'unread';
/** No step before this one. */
const FIRST = 'first';
/** The previous step listed and its dumped mean (null: its dump gives none), or why there is none to compare with. */
type Previous = { step: number; dumped: number | null } | typeof UNREAD | typeof FIRST;

interface JumpSpec {
  what: string;
  dumpKey: string;
  loggedKey: string;
  logged: Map<number, number>;
  digits: number;
  /** Relative to the previous mean (which must be positive), or absolute. */
  relative: boolean;
}

/**
 * A mean's jump from the previous step listed: between the two dumps' means when both give one, else between
 * what the run logged at both steps (never a dumped mean against a logged one: the two can differ by more than a
 * threshold at one step), else not measured across the step that has neither.
 */
function jumpCell(prev: Previous, step: number, dumped: number | null, j: JumpSpec): Omit<HealthCell, 'level'> {
  if (prev === UNREAD) return { ...EMPTY, detail: 'previous step not read yet' };
  if (prev === FIRST) {
    // the first dumped step of a run dumped late: its jump from the step before, as both were logged
    return loggedJump(step, step - 1, j, `step ${step - 1} was not dumped`) ?? { ...EMPTY, detail: dumped === null && !j.logged.has(step) ? `no ${j.what}` : 'first step' };
  }
  if (dumped !== null && prev.dumped !== null) {
    if (j.relative && prev.dumped <= 0) return { ...EMPTY, detail: `previous ${j.what} is not positive` };
    return {
      value: Math.abs(dumped - prev.dumped) / (j.relative ? prev.dumped : 1),
      detail: `${j.what} ${fmt(prev.dumped, j.digits)} → ${fmt(dumped, j.digits)}`,
      evidence: { view: 'metrics', keys: [j.dumpKey] },
    };
  }
  const undumped = prev.dumped === null ? prev.step : step;
  const logged = loggedJump(step, prev.step, j, `step ${undumped}'s dump gives none`);
  if (logged !== null) return logged;
  if (dumped === null && !j.logged.has(step)) return { ...EMPTY, detail: `no ${j.what}` };
  return { ...EMPTY, detail: `step ${undumped} has no ${j.what}: not measured across it` };
}

/** The jump between what the run logged at `before` and at `step`, or null when either was not logged. */
function loggedJump(step: number, before: number, j: JumpSpec, why: string): Omit<HealthCell, 'level'> | null {
  const was = j.logged.get(before);
  const now = j.logged.get(step);
  if (was === undefined || now === undefined) return null;
  if (j.relative && was <= 0) return { ...EMPTY, detail: `previous logged ${j.what} is not positive` };
  return {
    value: Math.abs(now - was) / (j.relative ? was : 1),
    detail: `logged ${j.what} ${fmt(was, j.digits)} → ${fmt(now, j.digits)} (${why})`,
    evidence: { view: 'metrics', keys: [j.loggedKey] },
  };
}

/**
 * The board over a run's train steps (their tables, or their facts once read). Steps come in ascending order;
 * jumps compare with the previous one listed. With `coverage` (a partial board), a step whose previous step is
 * not read yet says so instead of a jump.
 */
export function healthBoard(inputs: HealthInputs): HealthAnswer {
  const signals = [...(inputs.signals ?? DEFAULT_SIGNALS)];
  const spec = (id: HealthSignal): SignalSpec => signals.find((s) => s.id === id)!;
  const windows = stepWindows(inputs.metrics, inputs.startTs);
  const stepTimes = loggedByStep(inputs.metrics, 'perf/step_time');
  const rewardJump: JumpSpec = { what: 'mean reward', dumpKey: 'dump/reward_mean', loggedKey: 'rollout/rewards_mean', logged: loggedByStep(inputs.metrics, 'rollout/rewards_mean'), digits: 3, relative: false };
  const lengthJump: JumpSpec = { what: 'mean response length', dumpKey: 'dump/response_length_mean', loggedKey: LOGGED_LENGTH, logged: loggedByStep(inputs.metrics, LOGGED_LENGTH), digits: 1, relative: true };
  const medianStepTime = median([...stepTimes.values()]);
  const restarts = restartTimes(inputs.topology);
  const hasTrainPhases = inputs.phases.some((p) => p.role === 'train' && p.rank >= 0);
  const steps = inputs.steps.map((st) => ('cells' in st ? st : healthStepFacts(st))).sort((a, b) => a.step - b.step);
  // runs of unread steps, ascending: one that starts before a step lies between it and the step read before it
  const unread = inputs.coverage?.unread ?? [];

  const rows: HealthRow[] = [];
  // The previous step listed and its dumped means (none for the first, or not read yet on a partial board)
  let prev: Previous = FIRST;
  let prevReward: number | null = null;
  let prevLength: number | null = null;
  let nextUnread = 0;
  for (const st of steps) {
    if (nextUnread < unread.length && unread[nextUnread]![0] < st.step) {
      while (nextUnread < unread.length && unread[nextUnread]![0] < st.step) nextUnread++;
      prev = UNREAD;
    }
    const cells: Record<HealthSignal, Omit<HealthCell, 'level'>> = { ...st.cells } as Record<HealthSignal, Omit<HealthCell, 'level'>>;
    const { rewardMean, lengthMean } = st;
    const before = (dumped: number | null): Previous => (typeof prev === 'string' ? prev : { step: prev.step, dumped });
    cells.reward_jump = jumpCell(before(prevReward), st.step, rewardMean, rewardJump);
    cells.length_jump = jumpCell(before(prevLength), st.step, lengthMean, lengthJump);
    prev = { step: st.step, dumped: null };
    prevReward = rewardMean;
    prevLength = lengthMean;

    const w = windows.get(st.step);
    const t = stepTimes.get(st.step);
    cells.step_time =
      t !== undefined && medianStepTime !== null && medianStepTime > 0
        ? {
            value: t / medianStepTime,
            detail: `step took ${fmt(t, 1)} s, median ${fmt(medianStepTime, 1)} s`,
            evidence: w ? { view: 'timeline', t0: w.t0, t1: w.t1 } : { view: 'metrics', keys: ['perf/step_time'] },
          }
        : { ...EMPTY, detail: 'no perf/step_time logged' };

    if (w && inputs.topology.length > 0) {
      const here = restarts.filter((r) => r.ts > w.t0 && r.ts <= w.t1);
      cells.engine_restart = {
        value: here.length,
        detail: here.length ? here.map((r) => `engine on ${r.engine}: ${r.from} → ${r.to}`).join('; ') : 'no engine changed address',
        evidence: here.length
          ? { view: 'timeline', t0: Math.max(w.t0, here[0].ts - 60), t1: Math.min(w.t1, here[0].ts + 60), lanes: `engine:${here[0].to}` }
          : { view: 'timeline', t0: w.t0, t1: w.t1 },
      };
    } else cells.engine_restart = { ...EMPTY, detail: 'no topology telemetry' };

    const lag = w && hasTrainPhases ? straggler(inputs.phases, w) : null;
    cells.straggler =
      lag === null
        ? { ...EMPTY, detail: hasTrainPhases ? 'fewer than 3 train ranks in the step' : 'no train phase telemetry' }
        : 'rank' in lag
          ? {
              value: lag.late,
              detail: `rank ${lag.rank} entered this step ${fmt(lag.late, 1)} s after the median rank (an outlier: late from ${fmt(lag.threshold, 1)} s)`,
              evidence: { view: 'timeline', t0: w!.t0, t1: w!.t1, lanes: `rank:${lag.rank}` },
            }
          : {
              value: 0,
              detail: `no rank is an outlier; the ${lag.ranks} ranks entered within ${fmt(lag.spread, 1)} s of each other`,
              evidence: { view: 'timeline', t0: w!.t0, t1: w!.t1 },
            };

    const full = {} as Record<HealthSignal, HealthCell>;
    for (const id of HEALTH_SIGNALS) {
      const c = cells[id] ?? EMPTY;
      full[id] = { ...c, level: levelOf(c.value, spec(id)) };
    }
    rows.push(st.damaged ? { step: st.step, cells: full, damaged: st.damaged } : { step: st.step, cells: full });
  }

  const fired: HealthFiring[] = [];
  for (const r of rows) {
    for (const id of HEALTH_SIGNALS) {
      const c = r.cells[id];
      if (c.level === 'fire') fired.push({ step: r.step, signal: id, value: c.value!, fire: spec(id).fire, detail: c.detail });
    }
  }
  const answer: HealthAnswer = { signals, rows, fired, warnings: inputs.warnings ?? [] };
  return inputs.coverage ? { ...answer, coverage: inputs.coverage } : answer;
}

/** The firings of the listed signals, one line each, for `rlsight health --fail-on`. */
export function failures(answer: HealthAnswer, failOn: readonly HealthSignal[]): string[] {
  return answer.fired
    .filter((f) => failOn.includes(f.signal))
    .map((f) => `step ${f.step}: ${f.signal} ${fmt(f.value, 4)} >= ${f.fire} (${f.detail})`);
}

/** The signals of `failOn` no step of the board measures (every cell empty): a gate on them can pass only by not looking. */
export function unmeasured(answer: HealthAnswer, failOn: readonly HealthSignal[]): HealthSignal[] {
  return failOn.filter((signal) => !answer.rows.some((r) => r.cells[signal]?.value !== null && r.cells[signal]?.value !== undefined));
}

/** What the board of an open run reads of it (the run's answers; named here, so the board depends on no more). */
export interface HealthSources {
  readPhases(): Promise<void>;
  stepFacts(opts: { progressive: true } | { progressive: false; priority: StepPriority }): Promise<{
    steps: { health: HealthStepFacts }[];
    coverage?: StepCoverage;
    warnings: string[];
  }>;
  metricsRecords(): readonly MetricsRecord[];
  topologySnapshots(): readonly TopologySnapshot[];
  phaseEvents(): readonly PhaseEvent[];
  startTs(): number | null;
}

/**
 * The board of an open run: every visible train step. A step still being written is skipped, and a damaged
 * step is a row marked damaged (its dump's signals show no data), each with a warning naming the file.
 * `progressive`: at once over the steps read so far, with their coverage (the others are read in the
 * background); else every step is read first (`rlsight health` reads them as asked).
 */
export async function runHealth(run: HealthSources, signals: readonly SignalSpec[] = DEFAULT_SIGNALS, opts: { progressive?: boolean } = {}): Promise<HealthAnswer> {
  // the stragglers' phase hours (seconds on a big cold run) are parsed on the parse threads, the serving thread
  // answering others meanwhile; a board with no step read yet needs none of them and comes at once
  const phasesRead = opts.progressive ? run.readPhases() : null;
  phasesRead?.catch(() => {});
  const facts = await run.stepFacts(opts.progressive ? { progressive: true } : { progressive: false, priority: 'asked' });
  if (facts.steps.length > 0) await phasesRead;
  return healthBoard({
    steps: facts.steps.map((f) => f.health),
    coverage: facts.coverage,
    metrics: run.metricsRecords(),
    topology: run.topologySnapshots(),
    phases: facts.steps.length > 0 ? run.phaseEvents() : [],
    startTs: run.startTs(),
    signals,
    warnings: facts.warnings,
  });
}
