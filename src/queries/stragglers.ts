// Stragglers: train ranks that enter the train phases late, step after step. At whole-run zoom one
// late rank is a sliver; here each rank's start lag is measured per step against the median of its
// peers, and a rank late in most steps becomes a finding (an advisory, an outlier score, a default lane).

/** A phase event as the rules read it (`t1 === -1` while open). */
export interface StragglerPhase {
  name: string;
  t0: number;
  t1: number;
  node: string;
  rank: number;
}

/** The moments compared across ranks: when a rank leaves `train_wait`, when it starts `actor_train`. */
export const STRAGGLER_MARKS: readonly { phase: string; edge: 't0' | 't1'; verb: string }[] = [
  { phase: 'train_wait', edge: 't1', verb: 'leaves' },
  { phase: 'actor_train', edge: 't0', verb: 'starts' },
];
/** A rank is late in a step when it is at least this many seconds behind the median of its peers. */
export const STRAGGLER_MIN_LAG_S = 2.0;
/** Steps a rank needs to be measured in before it can be called a straggler. */
export const STRAGGLER_MIN_STEPS = 2;
/** A straggler is late in more than this share of its steps ("most steps"). */
export const STRAGGLER_STEP_SHARE = 0.5;

export interface Straggler {
  rank: number;
  node: string;
  /** The phase whose edge is late, and how that reads (`leaves train_wait`, `starts actor_train`). */
  phase: string;
  verb: string;
  /** Median lag in seconds over the late steps. */
  lag: number;
  lateSteps: number;
  steps: number;
  /** The step with the largest lag: the peers' median moment and this rank's. */
  worst: { median: number; at: number };
}

/** One party's lags at one mark, step by step (NaN where the step had no peers to compare with). */
interface MarkLags {
  node: string;
  lags: number[];
  /** The peers' median moment and this party's, per step. */
  medians: number[];
  times: number[];
}

type PhasesByName<E> = Map<string, E[]>;

/** The events of the phases the marks read, grouped by name in one pass (file order kept). */
function byMarkedPhase<E extends StragglerPhase>(events: readonly E[]): PhasesByName<E> {
  const out: PhasesByName<E> = new Map(STRAGGLER_MARKS.map((m) => [m.phase, []]));
  for (const e of events) out.get(e.name)?.push(e);
  return out;
}

/**
 * Lags at one mark for every party (`keyOf`: a rank, or a lane); the n-th event of a party is its n-th
 * step, and each step's moment is compared with the median over the parties that have that step.
 */
function markLags<E extends StragglerPhase>(events: PhasesByName<E>, mark: (typeof STRAGGLER_MARKS)[number], keyOf: (e: E) => string | null, since: number): Map<string, MarkLags> {
  const byKey = new Map<string, { node: string; times: number[] }>();
  const sorted = (events.get(mark.phase) ?? []).filter((e) => e.t0 >= since && e.t1 !== -1 && Number.isFinite(e[mark.edge])).sort((a, b) => a.t0 - b.t0);
  for (const e of sorted) {
    const k = keyOf(e);
    if (k === null) continue;
    let r = byKey.get(k);
    if (r === undefined) byKey.set(k, (r = { node: e.node, times: [] }));
    r.times.push(e[mark.edge]);
  }
  const out = new Map<string, MarkLags>();
  // A median of peers needs peers.
  if (byKey.size < 3) return out;
  const steps = Math.max(0, ...[...byKey.values()].map((r) => r.times.length));
  const medians: number[] = [];
  for (let s = 0; s < steps; s++) {
    const at = [...byKey.values()].map((r) => r.times[s]).filter((t): t is number => t !== undefined);
    medians.push(at.length >= 3 ? median(at) : NaN);
  }
  for (const [k, r] of byKey) {
    const m = r.times.map((_, s) => medians[s]!);
    out.set(k, { node: r.node, times: r.times, medians: m, lags: r.times.map((t, s) => t - m[s]!) });
  }
  return out;
}

/**
 * Ranks late in most of their steps, worst (largest median lag) first; each rank once, at the mark
 * where it is latest. `since` drops events of an earlier attempt of the run.
 */
export function findStragglers(events: readonly StragglerPhase[], since = -Infinity): Straggler[] {
  const best = new Map<number, Straggler>();
  const marked = byMarkedPhase(events);
  for (const mark of STRAGGLER_MARKS) {
    for (const [key, r] of markLags(marked, mark, (e) => (e.rank >= 0 ? String(e.rank) : null), since)) {
      const rank = Number(key);
      const late: number[] = [];
      let measured = 0;
      let worst = { lag: -Infinity, median: 0, at: 0 };
      r.lags.forEach((lag, s) => {
        if (!Number.isFinite(lag)) return;
        measured++;
        if (lag >= STRAGGLER_MIN_LAG_S) late.push(lag);
        if (lag > worst.lag) worst = { lag, median: r.medians[s]!, at: r.times[s]! };
      });
      if (measured < STRAGGLER_MIN_STEPS || late.length <= STRAGGLER_STEP_SHARE * measured) continue;
      const found: Straggler = { rank, node: r.node, phase: mark.phase, verb: mark.verb, lag: median(late), lateSteps: late.length, steps: measured, worst: { median: worst.median, at: worst.at } };
      const prev = best.get(rank);
      if (!prev || found.lag > prev.lag) best.set(rank, found);
    }
  }
  return [...best.values()].sort((a, b) => b.lag - a.lag || a.rank - b.rank);
}

/**
 * Each lane's start lag in seconds: the median over its steps of how late it reaches a straggler mark
 * (the later of the two marks), for the `start_lag` quick pick. Lanes without train phases are absent.
 */
export function laneStartLags<E extends StragglerPhase & { gpu: number }>(rows: readonly E[]): { node: string; gpu: number; score: number }[] {
  const score = new Map<string, { node: string; gpu: number; score: number }>();
  const marked = byMarkedPhase(rows);
  for (const mark of STRAGGLER_MARKS) {
    for (const [key, r] of markLags(marked, mark, (e) => `${e.node}:${e.gpu}`, -Infinity)) {
      const lags = r.lags.filter(Number.isFinite);
      if (!lags.length) continue;
      const m = median(lags);
      const gpu = Number(key.slice(key.lastIndexOf(':') + 1));
      const prev = score.get(key);
      if (!prev || m > prev.score) score.set(key, { node: r.node, gpu, score: m });
    }
  }
  return [...score.values()];
}

export function median(values: readonly number[]): number {
  const s = [...values].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}
