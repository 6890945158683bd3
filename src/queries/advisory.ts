// Run-health alarms and sglang tuning advice: liveness alarms first, tuning only on a run without alarms.
import { pyFixed, pyG, pyPercent } from './pythonFormat.ts';

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

export type AdvisoryLevel = 'critical' | 'warning' | 'info';

export interface Advisory {
  level: AdvisoryLevel;
  message: string;
}

/** One engine series as `engineSeries` answers it. */
export interface EngineSeriesData {
  addr: string;
  labels: Record<string, string>;
  ts: number[];
  value: number[];
}

/** A raw phase event; `t1 === -1` marks a phase still open. */
export interface RawPhase {
  name: string;
  t0: number;
  t1: number;
  node: string;
  rank: number;
}

export interface MfuSummary {
  latest: number;
  mean: number;
  steps: number;
  /** The last logged peak TFLOP/s, or null when MFU is logged without one. */
  peak: number | null;
}

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
  /** Over the query window, dp-folded. */
  running: EngineSeriesData[];
  tokenUsage: EngineSeriesData[];
  cacheHitRate: EngineSeriesData[];
  /** Over the query window, one series per dp rank. */
  runningPerDpRank: EngineSeriesData[];
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

export function computeAdvisories(inputs: AdvisoryInputs): Advisory[] {
  const alarms = [
    ...stallAlarms(inputs),
    ...engineAlarms(inputs),
    ...(inputs.rollout ? rolloutAlarms(inputs.rollout, inputs.args) : []),
  ];
  return alarms.length ? alarms : tuningAdvice(inputs);
}

export function fmtDuration(seconds: number): string {
  if (seconds >= 3600) return `${pyFixed(seconds / 3600, 1)}h`;
  if (seconds >= 60) return `${pyFixed(seconds / 60, 0)}min`;
  return `${pyFixed(seconds, 0)}s`;
}

function stallAlarms({ edge, startTs, phases }: AdvisoryInputs): Advisory[] {
  if (edge === null) return [];
  // The previous attempt's never-closed markers (a resumed run) are not this attempt's stall.
  const attemptStart = startTs ?? -Infinity;
  const events = phases.filter((e) => e.t0 >= attemptStart);
  const key = (e: RawPhase): string => JSON.stringify([e.node, e.rank, e.name, e.t0]);
  const closedKeys = new Set(events.filter((e) => e.t1 !== OPEN_T1).map(key));
  const durations = new Map<string, number[]>();
  const openAges = new Map<string, number[]>();
  for (const e of events) {
    if (e.t1 === OPEN_T1) {
      if (!closedKeys.has(key(e))) push(openAges, e.name, edge - e.t0);
    } else {
      push(durations, e.name, e.t1 - e.t0);
    }
  }
  const out: Advisory[] = [];
  for (const name of [...openAges.keys()].sort(byCodePoint)) {
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
    out.push({ level: 'critical', message });
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

function engineAlarms({ engine, args }: AdvisoryInputs): Advisory[] {
  if (!engine) return [];
  const out: Advisory[] = [];
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
    out.push({ level: 'warning', message });
  }

  const peakRunning = aggregate(engine.running, 'max');
  const tokenUsage = aggregate(engine.tokenUsage, 'mean');
  const maxRunning = num(args.sglang_max_running_requests);
  if (tokenUsage !== null && tokenUsage > KV_BOUND_TOKEN_USAGE) {
    if (maxRunning && peakRunning !== null && peakRunning < KV_BOUND_RUNNING_RATIO * maxRunning) {
      const memFraction = num(args.sglang_mem_fraction_static);
      out.push({
        level: 'warning',
        message:
          `KV cache usage is pegged at ${pyPercent(tokenUsage, 0)} while peak concurrency ` +
          `(${pyFixed(peakRunning, 0)}) stays far below --sglang-max-running-requests (${pyG(maxRunning)}): ` +
          'concurrency is KV-pool-bound, not cap-bound; raise --sglang-mem-fraction-static' +
          (memFraction !== null ? ` (currently ${pyG(memFraction)})` : '') +
          ' — do NOT lower the request cap',
      });
    } else if (tokenUsage > HIGH_TOKEN_USAGE) {
      out.push({
        level: 'warning',
        message:
          `KV cache usage is consistently high (${pyPercent(tokenUsage, 1)}) — likely a throughput ` +
          'bottleneck; consider more GPUs or a smaller rollout batch',
      });
    }
  }
  return out;
}

function rolloutAlarms(rollout: RolloutInputs, args: Record<string, unknown>): Advisory[] {
  const { rolloutId } = rollout;
  const out: Advisory[] = [];
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
      out.push({ level: 'warning', message });
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
      out.push({ level: 'warning', message });
    }
  }

  const unaligned = rollout.summary.filter((r) => r.alignment_failed === true).length;
  if (unaligned > 0) {
    out.push({
      level: 'info',
      message:
        `per-token columns are blank for ${unaligned} samples in rollout ${rolloutId}: their context-parallel slices ` +
        'could not be placed, because this dump predates the cp_rank/cp_size fields. Blank here means unreadable, not undumped',
    });
  }
  return out;
}

function mfuAdvice(summary: MfuSummary | null, lowMfu: number): Advisory[] {
  if (lowMfu <= 0 || summary === null || summary.steps < MFU_MIN_STEPS) return [];
  if (summary.mean >= lowMfu) return [];
  // The reference crashes when MFU is logged without its peak; say so instead of citing a number.
  const device = summary.peak === null ? "the device's peak" : `the device's ${pyG(summary.peak)} TFLOP/s`;
  return [
    {
      level: 'warning',
      message:
        `Model FLOPs utilization averaged ${pyPercent(summary.mean, 1)} of ${device} ` +
        `over ${summary.steps} train steps — ` +
        'the training step is computing slowly, not waiting: this ratio counts actor train time only, ' +
        'so rollout stalls cannot depress it. Usual causes are activation recompute, a parallel split ' +
        'that leaves ranks idle, and small or ragged micro-batches',
    },
  ];
}

function tuningAdvice({ engine, args, mfu, lowMfu }: AdvisoryInputs): Advisory[] {
  const out = mfuAdvice(mfu, lowMfu);
  if (!engine) return out;
  const peakRunning = aggregate(engine.running, 'max');
  const cacheHit = aggregate(engine.cacheHitRate, 'mean');
  const colocate = Boolean(args.colocate);
  const maxRunning = num(args.sglang_max_running_requests);
  if (maxRunning && peakRunning !== null && peakRunning < LOW_CONCURRENCY_RATIO * maxRunning) {
    out.push({
      level: 'info',
      message:
        `Peak concurrency (${pyFixed(peakRunning, 0)}) stayed under ${pyPercent(LOW_CONCURRENCY_RATIO, 0)} of ` +
        `--sglang-max-running-requests (${pyG(maxRunning)}); consider lowering it` +
        (colocate ? ' to free memory for training (colocate)' : ''),
    });
  }
  if (!colocate && cacheHit !== null && cacheHit < LOW_CACHE_HIT_RATE) {
    const memFraction = num(args.sglang_mem_fraction_static);
    out.push({
      level: 'info',
      message:
        `Prefix cache hit rate is low (${pyPercent(cacheHit, 1)})` +
        (memFraction !== null
          ? `; consider raising --sglang-mem-fraction-static (currently ${pyG(memFraction)}) for a bigger KV cache`
          : ''),
    });
  }
  const perAddr = new Map<string, Map<string, number>>();
  for (const s of engine.runningPerDpRank) {
    const rank = s.labels.dp_rank;
    if (rank === undefined || s.value.length === 0) continue;
    if (!perAddr.has(s.addr)) perAddr.set(s.addr, new Map());
    perAddr.get(s.addr)!.set(rank, sum(s.value) / s.value.length);
  }
  for (const addr of [...perAddr.keys()].sort(byCodePoint)) {
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
      out.push({
        level: 'warning',
        message:
          `${addr}: dp ranks imbalanced (mean running reqs ${detail}) — requests pile onto ` +
          `few ranks while others idle; ${dpSpreadHint(args)}`,
      });
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

function aggregate(series: EngineSeriesData[], agg: 'max' | 'mean'): number | null {
  let n = 0;
  let total = 0;
  let max = -Infinity;
  for (const s of series) {
    for (const v of s.value) {
      n++;
      total += v;
      if (v > max) max = v;
    }
  }
  if (n === 0) return null;
  return agg === 'max' ? max : total / n;
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

function byCodePoint(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
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
