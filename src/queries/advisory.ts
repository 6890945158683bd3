// Run-health alarms and sglang tuning advice: liveness alarms first, tuning only on a run without alarms.
// Each advisory also says which time window (and which lanes) it is about, for the app to link to.
import { compareNodes, strAsc, type MetricsRecord } from '../run/model.ts';
import { pyFixed, pyG, pyPercent } from '../formats/pythonFormat.ts';
import { findStragglers, SKEW_MIN_SPREAD_S, type Skew } from './stragglers.ts';
import { ExactSum } from './exactSum.ts';
import type { EngineSeriesSummary } from './engineSummary.ts';
import type { Advisory, AdvisoryLevel, AdvisoryWindow, LocatedAdvisory, Mfu } from '../wire/metrics.ts';
import type { EngineSeries } from '../wire/timeline.ts';
import { integerRunsText } from './integerRuns.ts';
export type { Advisory, AdvisoryLevel, AdvisoryWindow, LocatedAdvisory };

export const STALL_FACTOR = 6.0;
export const STALL_MIN_AGE_S = 1800.0;
export const STALL_MIN_CLOSED = 3;
export const ABORT_RATIO_WARN = 0.05;
export const ABORT_WINDOW_S = 1800.0;
export const ABORT_MIN_REQUESTS = 100.0;
export const ZERO_STD_FRAC_WARN = 0.5;
export const TRUNCATED_FRAC_WARN = 0.25;
export const KV_BOUND_TOKEN_USAGE = 0.9;
export const KV_BOUND_RUNNING_RATIO = 0.5;
export const LOW_CONCURRENCY_RATIO = 0.3;
export const LOW_CACHE_HIT_RATE = 0.1;
export const HIGH_TOKEN_USAGE = 0.95;
export const DP_IMBALANCE_MIN_RUNNING = 1.0;
export const DP_IMBALANCE_RATIO = 0.25;
export const DEFAULT_LOW_MFU = 0.15;
export const MFU_KEY = 'perf/actor_train_mfu';
export const MFU_PEAK_KEY = 'perf/mfu_peak_tflops';
export const MFU_STEP_KEY = 'rollout/step';
export const MFU_MIN_STEPS = 3;
const OPEN_T1 = -1.0;




/** One engine series as `engineSeries` answers it. */
export type EngineSeriesData = EngineSeries;

/** A raw phase event; `t1 === -1` marks a phase still open. */
export interface RawPhase {
  name: string;
  t0: number;
  t1: number;
  node: string;
  rank: number;
}

/** The MFU figures of a run, as answered. */
export type MfuSummary = Mfu;

/** Engine series the rules read; absent when the run has no engine_series stream. */
export interface EngineInputs {
  /**
   * Dp-folded cumulative request and client-abort counters, covering at least the abort window before
   * the newest scrape (with the point before it); the whole run unless `runCounters` is given.
   */
  requestsTotal: EngineSeriesData[];
  abortsTotal: EngineSeriesData[];
  /** The same counters over the whole run, asked for only when the alarm fires (to quote the run's ratio). */
  runCounters?: () => { requests: EngineSeriesData[]; aborts: EngineSeriesData[] };
  /** Over the query window, dp-folded: each served series summarised (count, exact sum, max, extent). */
  running: EngineSeriesSummary[];
  tokenUsage: EngineSeriesSummary[];
  cacheHitRate: EngineSeriesSummary[];
  /** Over the query window, one series per dp rank. */
  runningPerDpRank: EngineSeriesSummary[];
}

/** The newest train rollout's tables, as far as the rules need them. */
export interface RolloutInputs {
  rolloutId: number;
  groups: { reward_mean: number | null; zero_std: boolean | null }[];
  summary: { truncated?: boolean | null; alignment_failed?: boolean | null }[];
}

export interface AdvisoryInputs {
  /** The `meta.json` args snapshot, or `{}`. */
  args: Record<string, unknown>;
  /** `time_range()[1]`, or null when the run has no telemetry. */
  edge: number | null;
  /** `meta.start_ts` of the current attempt, or null without meta. */
  startTs: number | null;
  /** Every raw phase event of the run. */
  phases: RawPhase[];
  engine: EngineInputs | null;
  rollout: RolloutInputs | null;
  mfu: MfuSummary | null;
  lowMfu: number;
  /** The run's metrics records (to place a rollout step and the MFU steps in time); absent means unplaced. */
  metricsRecords?: readonly MetricsRecord[];
}

/** The MFU series on `rollout/step`, first (warm-up) step excluded; null when there is none. */
export function mfuSummary(mfu: number[], peak: number[]): MfuSummary | null {
  const steady = mfu.slice(1);
  if (steady.length === 0) return null;
  return {
    latest: steady[steady.length - 1],
    mean: sum(steady) / steady.length,
    steps: steady.length,
    peak: peak.length ? peak[peak.length - 1] : null,
  };
}

/** The engine gauges the rules can read under these args: the cache hit rate feeds only the non-colocated B3 rule. */
export function advisoryEngineGauges(args: Record<string, unknown>): string[] {
  return ['sglang_num_running_reqs', 'sglang_token_usage', ...(args.colocate ? [] : ['sglang_cache_hit_rate'])];
}

export function computeAdvisories(inputs: AdvisoryInputs): LocatedAdvisory[] {
  return whole(advisoryRules(inputs));
}

/** `computeAdvisories` a rule at a time (a caller may pause between rules). */
export function* advisoryRules(inputs: AdvisoryInputs): Generator<void, LocatedAdvisory[]> {
  const stalls = stallAlarms(inputs);
  yield;
  const engine = engineAlarms(inputs);
  yield;
  const rollout = inputs.rollout ? rolloutAlarms(inputs.rollout, inputs.args, rolloutStepWindow(inputs.metricsRecords ?? [], inputs.rollout.rolloutId, inputs.edge)) : [];
  yield;
  const alarms = [...stalls, ...engine, ...rollout];
  const first = alarms.length ? alarms : tuningAdvice(inputs);
  yield;
  // Stragglers are rlsight's own finding; they are shown with alarms too, since a late rank slows every step.
  return [...first, ...stragglerAdvice(inputs)];
}

/** Runs a computation made of parts to its end at once. */
export function whole<T>(parts: Generator<void, T>): T {
  for (;;) {
    const part = parts.next();
    if (part.done) return part.value;
  }
}

/** Stragglers named one by one (worst first); beyond that, one line for the rest. */
export const STRAGGLERS_NAMED = 3;

function stragglerAdvice({ phases, startTs }: AdvisoryInputs): LocatedAdvisory[] {
  const { stragglers: found, skew } = findStragglers(phases, startTs ?? -Infinity);
  const out = found.slice(0, STRAGGLERS_NAMED).map((s) => {
    // Zoomed on its worst step, with the peers' median and its own moment both in view.
    const pad = Math.max(s.worst.at - s.worst.median, 10);
    return located(
      'warning',
      `rank ${s.rank} ${s.verb} ${s.phase} ${pyFixed(s.lag, 1)} s after the median rank (its median lag over ${s.steps} steps), ` +
        `an outlier against its peers' spread in ${s.lateSteps} of them — the collectives of every step wait for it; look at its node ${s.node}`,
      { t0: s.worst.median - pad, t1: s.worst.at + pad },
      `rank:${s.rank}`,
    );
  });
  const rest = found.slice(STRAGGLERS_NAMED);
  if (rest.length) {
    out.push(located('info', `${rest.length} more rank(s) are outliers entering the train phases in most steps`, null, rankLanes(rest.map((s) => s.rank))));
  }
  if (skew) out.push(located('info', skewMessage(skew), { t0: skew.widest.t0 - 5, t1: skew.widest.t1 + 5 }, null));
  return out;
}

/** The skew in one sentence: its spread, its order and what usually causes that order. */
export function skewMessage(k: Skew): string {
  const order =
    k.order === 'none'
      ? `in no fixed rank order (rank ${k.first} earliest, rank ${k.last} latest by median lag)`
      : `in ${k.order === 'rank' ? '' : 'reverse '}rank order (rank ${k.first} first, rank ${k.last} last)`;
  const cause =
    k.order === 'none'
      ? 'likely uneven input loading or host load, not one slow rank'
      : 'likely work handed out one rank at a time (data loading, a weight broadcast or a launch in rank order)';
  return (
    `skew, not a straggler: the ${k.ranks} train ranks leave train_wait spread over ${pyFixed(k.spread, 1)} s (median step; ` +
    `${k.skewedSteps} of ${k.steps} steps spread ${SKEW_MIN_SPREAD_S} s or more), ${order}, and no rank is an outlier against that spread — ` +
    `${cause}; every step waits for the last rank`
  );
}

/**
 * When rollout step `rolloutId` ran: it ends at its `rollout/step` metrics record and starts `perf/step_time`
 * earlier (else at the previous step's record); a step not logged yet runs from the previous record to `edge`.
 */
export function rolloutStepWindow(records: readonly MetricsRecord[], rolloutId: number, edge: number | null): AdvisoryWindow | null {
  let end = -Infinity;
  let stepTime: number | null = null;
  let previous = -Infinity;
  for (const r of records) {
    if (r.step_key !== MFU_STEP_KEY || r.step === null) continue;
    if (r.step === rolloutId) {
      if (r.ts >= end) end = r.ts;
      const st = r.metrics['perf/step_time'];
      if (typeof st === 'number' && Number.isFinite(st) && st >= 0) stepTime = st;
    } else if (r.step < rolloutId && r.ts > previous) {
      previous = r.ts;
    }
  }
  if (Number.isFinite(end)) {
    if (stepTime !== null) return { t0: end - stepTime, t1: end };
    return Number.isFinite(previous) && previous <= end ? { t0: previous, t1: end } : null;
  }
  return Number.isFinite(previous) && edge !== null && edge >= previous ? { t0: previous, t1: edge } : null;
}

/** The train steps the MFU summary covers: from the end of the warm-up step to the newest step's record. */
export function mfuWindow(records: readonly MetricsRecord[]): AdvisoryWindow | null {
  let t0 = Infinity;
  let t1 = -Infinity;
  for (const r of records) {
    if (r.step_key !== MFU_STEP_KEY || r.metrics[MFU_KEY] === undefined) continue;
    if (r.ts < t0) t0 = r.ts;
    if (r.ts > t1) t1 = r.ts;
  }
  return t0 < t1 ? { t0, t1 } : null;
}

/** The time span the points of `series` cover, or null without points. */
/** The time span the summarised series' points cover. */
export function summaryExtent(series: readonly EngineSeriesSummary[]): AdvisoryWindow | null {
  let t0 = Infinity;
  let t1 = -Infinity;
  for (const s of series) {
    if (s.tsMin < t0) t0 = s.tsMin;
    if (s.tsMax > t1) t1 = s.tsMax;
  }
  return t0 <= t1 ? { t0, t1 } : null;
}


/** Ranks as lane-grammar terms, consecutive ones as ranges: `rank:0-3,rank:7`. */
export function rankLanes(ranks: Iterable<number>): string | null {
  return integerRunsText(ranks, 'rank:', ',') || null;
}

/** Engines as lane-grammar terms (each address whole, so one engine never selects its port-sharing peers). */
export function engineLanes(addrs: Iterable<string>): string | null {
  const terms = [...new Set(addrs)].sort(strAsc).map((a) => `engine:${a}`);
  return terms.length ? terms.join(',') : null;
}

function located(level: AdvisoryLevel, message: string, window: AdvisoryWindow | null, lanes: string | null = null): LocatedAdvisory {
  return { level, message, window, lanes };
}

export function fmtDuration(seconds: number): string {
  if (seconds >= 3600) return `${pyFixed(seconds / 3600, 1)}h`;
  if (seconds >= 60) return `${pyFixed(seconds / 60, 0)}min`;
  return `${pyFixed(seconds, 0)}s`;
}

function stallAlarms({ edge, startTs, phases }: AdvisoryInputs): LocatedAdvisory[] {
  if (edge === null) return [];
  // The previous attempt's never-closed markers (a resumed run) are not this attempt's stall.
  const attemptStart = startTs ?? -Infinity;
  const open: RawPhase[] = [];
  // Closed events by start time: a marker's closed twin starts when it did (then node, rank, name decide).
  const closedByT0 = new Map<number, RawPhase[]>();
  const durations = new Map<string, number[]>();
  for (const e of phases) {
    if (!(e.t0 >= attemptStart)) continue;
    if (e.t1 === OPEN_T1) {
      open.push(e);
    } else {
      push(durations, e.name, e.t1 - e.t0);
      push(closedByT0, e.t0, e);
    }
  }
  const isTwin = (o: RawPhase, c: RawPhase): boolean => c.name === o.name && c.node === o.node && sameNumber(c.rank, o.rank);
  const openAges = new Map<string, number[]>();
  const openMarkers = new Map<string, RawPhase[]>();
  for (const e of open) {
    if (closedByT0.get(e.t0)?.some((c) => isTwin(e, c))) continue;
    push(openAges, e.name, edge - e.t0);
    push(openMarkers, e.name, e);
  }
  const out: LocatedAdvisory[] = [];
  for (const name of [...openAges.keys()].sort(strAsc)) {
    const ages = openAges.get(name)!;
    const closed = durations.get(name) ?? [];
    if (closed.length < STALL_MIN_CLOSED) continue;
    const typical = median(closed);
    const age = Math.max(...ages);
    if (age <= Math.max(STALL_FACTOR * typical, STALL_MIN_AGE_S)) continue;
    // The reference divides by a zero median; a phase that always closes instantly has no ratio to cite.
    const ratio =
      typical > 0 ? `${pyFixed(age / typical, 0)}x its median duration (${fmtDuration(typical)})` : 'its median duration is 0s';
    let message =
      `Phase '${name}' has been open for ${fmtDuration(age)} on ${ages.length} rank(s) — ` +
      `${ratio}; the pipeline is stalled, not slow`;
    if (name === 'train_wait') {
      message += ' (training is starved of rollout data — check the data buffer and engine health)';
    }
    // About the span the oldest marker has been open, on the ranks (else nodes) still inside the phase.
    const markers = openMarkers.get(name)!;
    const lanes =
      rankLanes(markers.map((e) => e.rank)) ?? ([...new Set(markers.map((e) => e.node))].sort(compareNodes).map((n) => `node:${n}`).join(',') || null);
    out.push(located('critical', message, { t0: edge - age, t1: edge }, lanes));
  }
  return out;
}

/** Total increase of cumulative counters, summed per interval ending at or after `since`; resets count 0. */
export function counterDelta(series: EngineSeriesData[], since = -Infinity): number {
  let total = 0;
  for (const one of series) {
    for (let i = 1; i < one.ts.length; i++) {
      if (one.ts[i] >= since) total += Math.max(one.value[i] - one.value[i - 1], 0);
    }
  }
  return total;
}

function engineAlarms({ engine, args }: AdvisoryInputs): LocatedAdvisory[] {
  if (!engine) return [];
  const out: LocatedAdvisory[] = [];
  // Judged over the last 30 min before the newest engine scrape, so a dead engine cannot slide out of view.
  const both = [...engine.requestsTotal, ...engine.abortsTotal];
  const edge = both.reduce((m, s) => (s.ts.length ? Math.max(m, s.ts[s.ts.length - 1]) : m), -Infinity);
  const since = (Number.isFinite(edge) ? edge : 0) - ABORT_WINDOW_S;
  const total = counterDelta(engine.requestsTotal, since);
  const aborted = counterDelta(engine.abortsTotal, since);
  if (total >= ABORT_MIN_REQUESTS && aborted / total > ABORT_RATIO_WARN) {
    const run = engine.runCounters?.() ?? { requests: engine.requestsTotal, aborts: engine.abortsTotal };
    const runTotal = counterDelta(run.requests);
    const runAborted = counterDelta(run.aborts);
    let message =
      `${pyPercent(aborted / total, 0)} of engine requests were aborted client-side in the last ` +
      `${fmtDuration(ABORT_WINDOW_S)} (${pyFixed(aborted, 0)}/${pyFixed(total, 0)}; ` +
      `${pyPercent(runAborted / runTotal, 0)} over the run) — request timeouts are poisoning samples`;
    const groupSize = num(args.n_samples_per_prompt);
    if (groupSize) {
      message +=
        `; one aborted sample discards its whole ${pyG(groupSize)}-sample group, ` +
        'and backfill resubmission amplifies the engine load';
    }
    // The engines that aborted within the window; every engine that reports counters is the whole fleet.
    const aborting = engine.abortsTotal.filter((s) => counterDelta([s], since) > 0).map((s) => s.addr);
    const reporting = new Set([...engine.requestsTotal, ...engine.abortsTotal].map((s) => s.addr));
    const lanes = new Set(aborting).size < reporting.size ? engineLanes(aborting) : null;
    out.push(located('warning', message, Number.isFinite(edge) ? { t0: since, t1: edge } : null, lanes));
  }

  const peakRunning = aggregate(engine.running, 'max');
  const tokenUsage = aggregate(engine.tokenUsage, 'mean');
  const maxRunning = num(args.sglang_max_running_requests);
  if (tokenUsage !== null && tokenUsage > KV_BOUND_TOKEN_USAGE) {
    if (maxRunning && peakRunning !== null && peakRunning < KV_BOUND_RUNNING_RATIO * maxRunning) {
      const memFraction = num(args.sglang_mem_fraction_static);
      out.push(
        located(
          'warning',
          `KV cache usage is pegged at ${pyPercent(tokenUsage, 0)} while peak concurrency ` +
            `(${pyFixed(peakRunning, 0)}) stays far below --sglang-max-running-requests (${pyG(maxRunning)}): ` +
            'concurrency is KV-pool-bound, not cap-bound; raise --sglang-mem-fraction-static' +
            (memFraction !== null ? ` (currently ${pyG(memFraction)})` : '') +
            ' — do NOT lower the request cap',
          summaryExtent(engine.tokenUsage),
        ),
      );
    } else if (tokenUsage > HIGH_TOKEN_USAGE) {
      out.push(
        located(
          'warning',
          `KV cache usage is consistently high (${pyPercent(tokenUsage, 1)}) — likely a throughput ` +
            'bottleneck; consider more GPUs or a smaller rollout batch',
          summaryExtent(engine.tokenUsage),
        ),
      );
    }
  }
  return out;
}

function rolloutAlarms(rollout: RolloutInputs, args: Record<string, unknown>, step: AdvisoryWindow | null): LocatedAdvisory[] {
  const { rolloutId } = rollout;
  const out: LocatedAdvisory[] = [];
  const withRewards = rollout.groups.filter((g) => g.reward_mean !== null && g.reward_mean !== undefined);
  if (withRewards.length) {
    const zeroStd = withRewards.filter((g) => g.zero_std === true).length;
    if (zeroStd / withRewards.length >= ZERO_STD_FRAC_WARN) {
      let message =
        `${zeroStd}/${withRewards.length} groups in rollout ${rolloutId} have zero reward std — ` +
        'those groups contribute zero policy gradient';
      if (Math.max(...withRewards.map((g) => Math.abs(g.reward_mean as number))) < 1e-12) {
        message += '; every reward is 0, pointing at systematic failure (timeouts/truncation), not task difficulty';
      }
      out.push(located('warning', message, step));
    }
  }

  const truncated = rollout.summary.map((r) => r.truncated).filter((t): t is boolean => t !== null && t !== undefined);
  if (truncated.length) {
    const frac = truncated.filter(Boolean).length / truncated.length;
    if (frac >= TRUNCATED_FRAC_WARN) {
      let message = `${pyPercent(frac, 0)} of samples in rollout ${rolloutId} are truncated`;
      const cap = num(args.rollout_max_response_len);
      if (cap) {
        message +=
          ` — check --rollout-max-response-len (${pyG(cap)}): in multi-turn agentic runs ` +
          'the per-turn cap is usually the binding limit, not the context length';
      }
      out.push(located('warning', message, step));
    }
  }

  const unaligned = rollout.summary.filter((r) => r.alignment_failed === true).length;
  if (unaligned > 0) {
    out.push(
      located(
        'info',
        `per-token columns are blank for ${unaligned} samples in rollout ${rolloutId}: their context-parallel slices ` +
          'could not be placed, because this dump predates the cp_rank/cp_size fields. Blank here means unreadable, not undumped',
        step,
      ),
    );
  }
  return out;
}

function mfuAdvice(summary: MfuSummary | null, lowMfu: number, window: AdvisoryWindow | null): LocatedAdvisory[] {
  if (lowMfu <= 0 || summary === null || summary.steps < MFU_MIN_STEPS) return [];
  if (summary.mean >= lowMfu) return [];
  // The reference crashes when MFU is logged without its peak; say so instead of citing a number.
  const device = summary.peak === null ? "the device's peak" : `the device's ${pyG(summary.peak)} TFLOP/s`;
  return [
    located(
      'warning',
      `Model FLOPs utilization averaged ${pyPercent(summary.mean, 1)} of ${device} ` +
        `over ${summary.steps} train steps — ` +
        'the training step is computing slowly, not waiting: this ratio counts actor train time only, ' +
        'so rollout stalls cannot depress it. Usual causes are activation recompute, a parallel split ' +
        'that leaves ranks idle, and small or ragged micro-batches',
      window,
      'role:train',
    ),
  ];
}

function tuningAdvice({ engine, args, mfu, lowMfu, metricsRecords }: AdvisoryInputs): LocatedAdvisory[] {
  const out = mfuAdvice(mfu, lowMfu, mfuWindow(metricsRecords ?? []));
  if (!engine) return out;
  const peakRunning = aggregate(engine.running, 'max');
  const cacheHit = aggregate(engine.cacheHitRate, 'mean');
  const colocate = Boolean(args.colocate);
  const maxRunning = num(args.sglang_max_running_requests);
  if (maxRunning && peakRunning !== null && peakRunning < LOW_CONCURRENCY_RATIO * maxRunning) {
    out.push(
      located(
        'info',
        `Peak concurrency (${pyFixed(peakRunning, 0)}) stayed under ${pyPercent(LOW_CONCURRENCY_RATIO, 0)} of ` +
          `--sglang-max-running-requests (${pyG(maxRunning)}); consider lowering it` +
          (colocate ? ' to free memory for training (colocate)' : ''),
        summaryExtent(engine.running),
      ),
    );
  }
  if (!colocate && cacheHit !== null && cacheHit < LOW_CACHE_HIT_RATE) {
    const memFraction = num(args.sglang_mem_fraction_static);
    out.push(
      located(
        'info',
        `Prefix cache hit rate is low (${pyPercent(cacheHit, 1)})` +
          (memFraction !== null
            ? `; consider raising --sglang-mem-fraction-static (currently ${pyG(memFraction)}) for a bigger KV cache`
            : ''),
        summaryExtent(engine.cacheHitRate),
      ),
    );
  }
  const perAddr = new Map<string, Map<string, number>>();
  for (const s of engine.runningPerDpRank) {
    const rank = s.labels.dp_rank;
    if (rank === undefined || s.n === 0) continue;
    if (!perAddr.has(s.addr)) perAddr.set(s.addr, new Map());
    perAddr.get(s.addr)!.set(rank, s.sum.value() / s.n);
  }
  for (const addr of [...perAddr.keys()].sort(strAsc)) {
    const means = perAddr.get(addr)!;
    if (means.size < 2) continue;
    const values = [...means.values()];
    const busiest = Math.max(...values);
    const idlest = Math.min(...values);
    if (busiest >= DP_IMBALANCE_MIN_RUNNING && idlest < DP_IMBALANCE_RATIO * busiest) {
      const detail = [...means.entries()]
        .sort((a, b) => Number.parseInt(a[0], 10) - Number.parseInt(b[0], 10))
        .map(([rank, mean]) => `dp${rank}=${pyFixed(mean, 1)}`)
        .join(', ');
      out.push(
        located(
          'warning',
          `${addr}: dp ranks imbalanced (mean running reqs ${detail}) — requests pile onto ` +
            `few ranks while others idle; ${dpSpreadHint(args)}`,
          summaryExtent(engine.runningPerDpRank.filter((s) => s.addr === addr && s.labels.dp_rank !== undefined)),
          engineLanes([addr]),
        ),
      );
    }
  }
  return out;
}

/** Which knob decides how requests spread over dp ranks: only a dp-aware router routes per rank. */
function dpSpreadHint(args: Record<string, unknown>): string {
  if (args.use_miles_router) {
    return 'the miles router routes per engine; --sglang-load-balance-method decides the rank';
  }
  if (!args.router_dp_aware) {
    return 'the router sees one worker per engine; --router-dp-aware makes it route per rank';
  }
  const policy = args.sglang_router_policy || args.router_policy;
  if (policy === 'manual') {
    return (
      `manual routing pins each key to a rank via --router-assignment-mode ` +
      `(${pyStr(args.router_assignment_mode)}); min_load spreads by load`
    );
  }
  return `--router-policy (${pyStr(policy)}) picks the rank`;
}

/** The max or the mean of every point of the series (the mean from their exact sum: no order dependence). */
function aggregate(series: readonly EngineSeriesSummary[], agg: 'max' | 'mean'): number | null {
  let n = 0;
  const total = new ExactSum();
  let max = -Infinity;
  for (const s of series) {
    n += s.n;
    total.addSum(s.sum);
    if (s.max > max) max = s.max;
  }
  if (n === 0) return null;
  return agg === 'max' ? max : total.value() / n;
}

function median(values: number[]): number {
  const s = [...values].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
}

function sum(values: number[]): number {
  let t = 0;
  for (const v of values) t += v;
  return t;
}

function push<K, V>(map: Map<K, V[]>, key: K, value: V): void {
  const list = map.get(key);
  if (list) list.push(value);
  else map.set(key, [value]);
}

/** Number equality as the reference's JSON-keyed twin test sees it (NaN matches NaN). */
function sameNumber(a: number, b: number): boolean {
  return a === b || (a !== a && b !== b);
}


/** A numeric arg from the snapshot (bools count as Python ints would), else null. */
function num(v: unknown): number | null {
  if (typeof v === 'number' && Number.isFinite(v)) return v;
  if (typeof v === 'boolean') return v ? 1 : 0;
  return null;
}

/** Python `str()` of a snapshot value in an f-string. */
function pyStr(v: unknown): string {
  if (v === null || v === undefined) return 'None';
  if (v === true) return 'True';
  if (v === false) return 'False';
  return String(v);
}
