// Stragglers: train ranks that enter the train phases late, step after step. At whole-run zoom one
// late rank is a sliver; here each step's entry moments are judged robustly (median and MAD of the
// ranks), so a rank is late only when it is an outlier against its peers' spread, and a spread that is
// an even ramp (every rank a little later than the last) is a skew, not a set of stragglers.

/** A phase event as the rules read it (`t1 === -1` while open). */
export interface StragglerPhase {
  name: string;
  t0: number;
  t1: number;
  node: string;
  rank: number;
}

/**
 * A rank's entry into a step: when it leaves `train_wait`, or (a rank without `train_wait`) when it
 * starts `actor_train`. Its lag in the step is its entry minus the median entry of the step's ranks.
 */
export const ENTRY_PHASE = 'train_wait';
export const ENTRY_FALLBACK_PHASE = 'actor_train';
/** The absolute floor: a rank less than this many seconds behind the median is never late. */
export const STRAGGLER_MIN_LAG_S = 2.0;
/** A rank is late in a step when its lag exceeds this many robust standard deviations (1.4826 × MAD). */
export const STRAGGLER_MAD_FACTOR = 3.5;
/** Steps a rank needs to be measured in before it can be called a straggler. */
export const STRAGGLER_MIN_STEPS = 2;
/** A straggler is late in more than this share of its steps ("most steps"). */
export const STRAGGLER_STEP_SHARE = 0.5;
/** Ranks a step needs before a median of peers means anything. */
const MIN_RANKS = 3;
/** A skew is reported when the ranks that are not late spread over at least this many seconds (median step). */
export const SKEW_MIN_SPREAD_S = 5;
/** |Spearman correlation| of rank and lag from which the skew is "in rank order". */
const RANK_ORDER_CORRELATION = 0.8;

/** One step judged: each party's lag behind the median entry, and who is an outlier. */
export interface StepJudgement<K> {
  /** The median entry moment of the step's parties. */
  median: number;
  /** Seconds behind the median from which a party is late in this step: max(floor, 3.5 × 1.4826 × MAD). */
  threshold: number;
  lags: Map<K, number>;
  late: Set<K>;
  /** Earliest to latest entry of the parties that are not late, in seconds. */
  spread: number;
}

/** Judges one step's entry moments (null with fewer than three parties: a median of peers needs peers). */
export function judgeStep<K>(entries: ReadonlyMap<K, number>): StepJudgement<K> | null {
  if (entries.size < MIN_RANKS) return null;
  const times = [...entries.values()];
  const mid = median(times);
  const mad = median(times.map((t) => Math.abs(t - mid)));
  const threshold = Math.max(STRAGGLER_MIN_LAG_S, STRAGGLER_MAD_FACTOR * 1.4826 * mad);
  const lags = new Map<K, number>();
  const late = new Set<K>();
  let lo = Infinity;
  let hi = -Infinity;
  for (const [k, t] of entries) {
    const lag = t - mid;
    lags.set(k, lag);
    if (lag >= threshold) late.add(k);
    else {
      lo = Math.min(lo, t);
      hi = Math.max(hi, t);
    }
  }
  return { median: mid, threshold, lags, late, spread: hi - lo };
}

export interface Straggler {
  rank: number;
  node: string;
  /** How it reads: `leaves train_wait` (or `starts actor_train` for a rank without `train_wait`). */
  phase: string;
  verb: string;
  /** The rank's lag: the median over its measured steps of seconds behind the step's median entry. */
  lag: number;
  /** Steps in which it was an outlier, of the steps it was measured in. */
  lateSteps: number;
  steps: number;
  /** The step with the largest lag: the median entry and this rank's. */
  worst: { median: number; at: number };
}

/** The ranks spread out without a late one: one finding for the whole run. */
export interface Skew {
  /** Median over steps of the earliest-to-latest entry of the ranks that are not late, in seconds. */
  spread: number;
  /** Steps whose spread reaches the skew threshold, of the steps measured. */
  skewedSteps: number;
  steps: number;
  ranks: number;
  /** `rank` (low ranks first), `reverse` (high ranks first) or `none` (no fixed rank order). */
  order: 'rank' | 'reverse' | 'none';
  /** The earliest and latest rank by median lag. */
  first: number;
  last: number;
  /** The widest step's earliest and latest entry, for a window. */
  widest: { t0: number; t1: number };
}

export interface StragglerFindings {
  stragglers: Straggler[];
  skew: Skew | null;
}

type PhasesByName<E> = Map<string, E[]>;

/** The events of the entry phases, grouped by name in one pass (file order kept). */
function byEntryPhase<E extends StragglerPhase>(events: readonly E[]): PhasesByName<E> {
  const out: PhasesByName<E> = new Map([
    [ENTRY_PHASE, []],
    [ENTRY_FALLBACK_PHASE, []],
  ]);
  for (const e of events) out.get(e.name)?.push(e);
  return out;
}

/** One party's entries, step by step (the n-th entry event of a party is its n-th step). */
interface PartyEntries {
  node: string;
  fallback: boolean;
  times: number[];
}

/** Every party's entry moments (`keyOf`: a rank, or a lane); `since` drops an earlier attempt's events. */
function entriesOf<E extends StragglerPhase>(events: PhasesByName<E>, keyOf: (e: E) => string | null, since: number): Map<string, PartyEntries> {
  const out = new Map<string, PartyEntries>();
  for (const [phase, fallback] of [
    [ENTRY_PHASE, false],
    [ENTRY_FALLBACK_PHASE, true],
  ] as const) {
    const edge = fallback ? 't0' : 't1';
    const sorted = (events.get(phase) ?? []).filter((e) => e.t0 >= since && e.t1 !== -1 && Number.isFinite(e[edge])).sort((a, b) => a.t0 - b.t0);
    const fresh = new Map<string, PartyEntries>();
    for (const e of sorted) {
      const k = keyOf(e);
      // A party with train_wait enters by it; actor_train speaks only for parties without one.
      if (k === null || (fallback && out.has(k))) continue;
      let r = fresh.get(k);
      if (r === undefined) fresh.set(k, (r = { node: e.node, fallback, times: [] }));
      r.times.push(e[edge]);
    }
    for (const [k, r] of fresh) out.set(k, r);
  }
  return out;
}

/** Each party's lags, step by step (NaN where unmeasured), and each step judged. */
function judgeSteps(parties: Map<string, PartyEntries>): { steps: (StepJudgement<string> | null)[]; entries: (Map<string, number>)[] } {
  const n = Math.max(0, ...[...parties.values()].map((r) => r.times.length));
  const steps: (StepJudgement<string> | null)[] = [];
  const entries: Map<string, number>[] = [];
  for (let s = 0; s < n; s++) {
    const at = new Map<string, number>();
    for (const [k, r] of parties) if (r.times[s] !== undefined) at.set(k, r.times[s]!);
    entries.push(at);
    steps.push(judgeStep(at));
  }
  return { steps, entries };
}

/** A straggler is late in more than its share of at least the minimum number of measured steps. */
function isStraggler(p: { measured: number; late: number }): boolean {
  return p.measured >= STRAGGLER_MIN_STEPS && p.late > STRAGGLER_STEP_SHARE * p.measured;
}

/** A party's lag: the median over its measured steps of its lag behind the step's median entry. */
function partyLag(key: string, steps: readonly (StepJudgement<string> | null)[]): { lag: number; measured: number; late: number; worst: number } | null {
  const lags: number[] = [];
  let late = 0;
  let worst = -1;
  let worstLag = -Infinity;
  steps.forEach((j, s) => {
    const lag = j?.lags.get(key);
    if (lag === undefined) return;
    lags.push(lag);
    if (j!.late.has(key)) late++;
    if (lag > worstLag) [worst, worstLag] = [s, lag];
  });
  return lags.length ? { lag: median(lags), measured: lags.length, late, worst } : null;
}

/**
 * Ranks that are outliers in most of their steps, worst (largest lag) first, and the run's skew when the
 * other ranks spread out over several seconds. `since` drops events of an earlier attempt of the run.
 */
export function findStragglers(events: readonly StragglerPhase[], since = -Infinity): StragglerFindings {
  const parties = entriesOf(byEntryPhase(events), (e) => (e.rank >= 0 ? String(e.rank) : null), since);
  const { steps, entries } = judgeSteps(parties);
  const stragglers: Straggler[] = [];
  const lagOf = new Map<number, number>();
  for (const [key, r] of parties) {
    const p = partyLag(key, steps);
    if (p === null) continue;
    const rank = Number(key);
    if (!isStraggler(p)) {
      lagOf.set(rank, p.lag);
      continue;
    }
    const [phase, verb] = r.fallback ? [ENTRY_FALLBACK_PHASE, 'starts'] : [ENTRY_PHASE, 'leaves'];
    stragglers.push({ rank, node: r.node, phase, verb, lag: p.lag, lateSteps: p.late, steps: p.measured, worst: { median: steps[p.worst]!.median, at: r.times[p.worst]! } });
  }
  stragglers.sort((a, b) => b.lag - a.lag || a.rank - b.rank);
  return { stragglers, skew: skewOf(steps, entries, lagOf) };
}

/** The skew of the ranks that are not stragglers: their median spread, and whether it follows rank order. */
function skewOf(steps: readonly (StepJudgement<string> | null)[], entries: readonly Map<string, number>[], lagOf: Map<number, number>): Skew | null {
  const judged = steps.map((j, s) => ({ j, s })).filter((x): x is { j: StepJudgement<string>; s: number } => x.j !== null);
  if (!judged.length || lagOf.size < MIN_RANKS) return null;
  const spread = median(judged.map((x) => x.j.spread));
  if (spread < SKEW_MIN_SPREAD_S) return null;
  const widest = judged.reduce((a, b) => (b.j.spread > a.j.spread ? b : a));
  const onTime = [...entries[widest.s]!].filter(([k]) => !widest.j.late.has(k)).map(([, t]) => t);
  const ranks = [...lagOf.keys()];
  const rho = spearman(ranks, ranks.map((r) => lagOf.get(r)!));
  const byLag = [...lagOf].sort((a, b) => a[1] - b[1] || a[0] - b[0]);
  return {
    spread,
    skewedSteps: judged.filter((x) => x.j.spread >= SKEW_MIN_SPREAD_S).length,
    steps: judged.length,
    ranks: lagOf.size,
    order: rho >= RANK_ORDER_CORRELATION ? 'rank' : rho <= -RANK_ORDER_CORRELATION ? 'reverse' : 'none',
    first: byLag[0]![0],
    last: byLag[byLag.length - 1]![0],
    widest: { t0: Math.min(...onTime), t1: Math.max(...onTime) },
  };
}

/**
 * Each lane's lag in seconds, for the `start_lag` quick pick: the lag of the train rank whose entries ran
 * on it (the same number as the rank's straggler finding), `straggler` when that rank is one. A lane of
 * several ranks takes the latest; lanes without train phases are absent. `since` drops an earlier attempt.
 */
export function laneStartLags(events: readonly (StragglerPhase & { lanes: readonly string[] })[], since = -Infinity): { node: string; gpu: number; score: number; straggler: boolean }[] {
  const parties = entriesOf(byEntryPhase(events), (e) => (e.rank >= 0 ? String(e.rank) : null), since);
  const { steps } = judgeSteps(parties);
  const lanesOf = new Map<string, Set<string>>();
  for (const e of events) {
    if (e.rank < 0 || (e.name !== ENTRY_PHASE && e.name !== ENTRY_FALLBACK_PHASE) || e.t0 < since) continue;
    const key = String(e.rank);
    let set = lanesOf.get(key);
    if (set === undefined) lanesOf.set(key, (set = new Set()));
    for (const l of e.lanes) set.add(l);
  }
  const byLane = new Map<string, { node: string; gpu: number; score: number; straggler: boolean }>();
  for (const key of parties.keys()) {
    const p = partyLag(key, steps);
    if (p === null) continue;
    const straggler = isStraggler(p);
    for (const lane of lanesOf.get(key) ?? []) {
      const prev = byLane.get(lane);
      if (prev && prev.score >= p.lag) continue;
      const cut = lane.lastIndexOf(':');
      byLane.set(lane, { node: lane.slice(0, cut), gpu: Number(lane.slice(cut + 1)), score: p.lag, straggler });
    }
  }
  return [...byLane.values()];
}

/** Spearman's rank correlation (average ranks for ties); 0 when either side does not vary. */
function spearman(xs: readonly number[], ys: readonly number[]): number {
  const rx = ranksOf(xs);
  const ry = ranksOf(ys);
  const mx = rx.reduce((a, b) => a + b, 0) / rx.length;
  const my = ry.reduce((a, b) => a + b, 0) / ry.length;
  let sxy = 0;
  let sxx = 0;
  let syy = 0;
  for (let i = 0; i < rx.length; i++) {
    sxy += (rx[i]! - mx) * (ry[i]! - my);
    sxx += (rx[i]! - mx) ** 2;
    syy += (ry[i]! - my) ** 2;
  }
  return sxx > 0 && syy > 0 ? sxy / Math.sqrt(sxx * syy) : 0;
}

function ranksOf(values: readonly number[]): number[] {
  const order = values.map((v, i) => ({ v, i })).sort((a, b) => a.v - b.v);
  const out = new Array<number>(values.length);
  for (let i = 0; i < order.length; ) {
    let j = i;
    while (j + 1 < order.length && order[j + 1]!.v === order[i]!.v) j++;
    for (let k = i; k <= j; k++) out[order[k]!.i] = (i + j) / 2;
    i = j + 1;
  }
  return out;
}

export function median(values: readonly number[]): number {
  const s = [...values].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}
