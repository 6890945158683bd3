// What the advisory rules read, gathered from a run: phases, engine gauges and counters, the newest step's
// tables, MFU. The engine reads are selective (only the metrics and hours the rules use).
import { damageOf, DumpStillWriting } from '../run/errors.ts';
import type { RunModel, TelemetrySource } from '../run/model.ts';
import type { LocatedAdvisoryAnswer } from '../wire/metrics.ts';
import {
  ABORT_WINDOW_S,
  type AdvisoryInputs,
  type EngineInputs,
  type EngineSeriesData,
  type RawPhase,
  MFU_KEY,
  MFU_PEAK_KEY,
  MFU_STEP_KEY,
  advisoryEngineGauges,
  advisoryRules,
  mfuSummary,
  whole,
} from './advisory.ts';
import { engineSeries, hasDpRankSeries } from './engineSeries.ts';
import { engineSummaries, type EngineSeriesSummary } from './engineSummary.ts';
import { metricSeries } from './metrics.ts';
import { stepTables } from './rollouts.ts';

/** The engine counters the advisory rules read (the gauges depend on the run's args). */
const ADVISORY_COUNTERS = ['sglang_num_requests_total', 'sglang_num_aborted_requests_total'];
/** Slack before the abort window for the first counter read, so the point before the window is kept. */
const COUNTER_SLACK_S = 600;
/** How far each retry of the recent counter read widens it. */
const COUNTER_WIDEN_S = 3600;

interface Window {
  t0?: number;
  t1?: number;
}

/** Every point of one engine metric (no downsampling). */
function engineValues(store: TelemetrySource, metric: string, w: Window, perDpRank = false): EngineSeriesData[] {
  return engineSeries(store, { ...w, metric, maxPoints: Number.MAX_SAFE_INTEGER, perDpRank }).series;
}

/** Every raw phase event, read off the columns without the fields the stall rule does not use. */
function rawPhases(store: TelemetrySource): RawPhase[] {
  const out: RawPhase[] = [];
  const s = store.strings;
  for (const b of store.phaseBlocks()) {
    const { name, node, t0, t1, rank } = b;
    for (let i = 0; i < b.length; i++) out.push({ name: s.str(name[i]), t0: t0[i], t1: t1[i], node: s.str(node[i]), rank: rank[i] });
  }
  return out;
}

/** Where the first read of the recent counters starts (-Infinity without engine data). */
function recentCountersFrom(store: TelemetrySource): number {
  const newest = store.engineSeriesBounds()?.newestStamp ?? null;
  return newest === null ? -Infinity : newest - ABORT_WINDOW_S - COUNTER_SLACK_S;
}

/**
 * The abort counters over the recent past only: from just before the abort window ending at the newest
 * scrape, widened until every series reaches back past the window (else the whole run), so a cold advisory
 * does not parse hours of engine history. The run-wide counters are read only if the alarm fires.
 */
function recentCounters(store: TelemetrySource): Pick<EngineInputs, 'requestsTotal' | 'abortsTotal' | 'runCounters'> {
  const whole = (): { requests: EngineSeriesData[]; aborts: EngineSeriesData[] } => {
    store.engineSeriesBlocks(null, null, ADVISORY_COUNTERS);
    return { requests: engineValues(store, 'sglang_num_requests_total', {}), aborts: engineValues(store, 'sglang_num_aborted_requests_total', {}) };
  };
  const firstHour = store.engineSeriesBounds()?.firstHour ?? -Infinity;
  let from = recentCountersFrom(store);
  for (let attempt = 0; attempt < 3 && Number.isFinite(from) && from > firstHour; attempt++) {
    store.engineSeriesBlocks(from, null, ADVISORY_COUNTERS);
    const requests = engineValues(store, 'sglang_num_requests_total', { t0: from });
    const aborts = engineValues(store, 'sglang_num_aborted_requests_total', { t0: from });
    const all = [...requests, ...aborts].filter((s) => s.ts.length > 0);
    if (all.length === 0) break;
    const since = Math.max(...all.map((s) => s.ts[s.ts.length - 1])) - ABORT_WINDOW_S;
    if (all.every((s) => s.ts[0] < since)) return { requestsTotal: requests, abortsTotal: aborts, runCounters: whole };
    from = since - COUNTER_WIDEN_S;
  }
  const run = whole();
  return { requestsTotal: run.requests, abortsTotal: run.aborts };
}

/** The newest train step's groups and per-sample flags, or `writing` while its dump is still being written. */
async function rolloutVerdictInputs(run: RunModel, rolloutId: number): Promise<AdvisoryInputs['rollout'] | 'writing'> {
  let tables;
  try {
    tables = stepTables(await run.step(rolloutId, false, 'background'));
  } catch (err) {
    // A step still being written has no verdict yet; the other rules still answer (the reference 503s).
    if (err instanceof DumpStillWriting) return 'writing';
    // A damaged newest step gives no verdict either (the model lists it in the run's warnings).
    if (damageOf(err) !== null) return null;
    throw err;
  }
  return {
    rolloutId,
    groups: tables.groups.rows.map((g) => ({ reward_mean: g.reward_mean as number | null, zero_std: g.zero_std as boolean | null })),
    summary: tables.summary.rows.map((r) => ({ truncated: r.truncated as boolean | null, alignment_failed: r.alignment_failed as boolean | null })),
  };
}

/**
 * The advisories over a window and the MFU summary. `complete` is false while the newest step is still
 * being written (the answer then lacks its verdict and must not be kept). With `pause` (only over the store
 * itself, never a partial view), the telemetry after the decode is read a part at a time, `pause` awaited
 * between parts (other requests answered meanwhile; it may throw to stop the work).
 */
export async function advisoryAnswer(
  run: RunModel,
  w: Window & { lowMfu: number },
  newestTrainId: number | undefined,
  within: <T>(read: (store: TelemetrySource) => T) => T,
  pause?: () => Promise<void>,
): Promise<{ body: LocatedAdvisoryAnswer; complete: boolean }> {
  // the telemetry is read in two synchronous parts around the newest step's decode (a partial answer's view
  // of the store holds only within them)
  const before = within((store) => advisoryTelemetryAhead(store, w));
  const rollout = newestTrainId === undefined ? null : await rolloutVerdictInputs(run, newestTrainId);
  const complete = rollout !== 'writing';
  const verdict = rollout === 'writing' ? null : rollout;
  if (pause === undefined) return within((store) => ({ body: whole(advisoryFrom(store, w, before, verdict)), complete }));
  const parts = within((store) => advisoryFrom(store, w, before, verdict));
  for (;;) {
    const part = parts.next();
    if (part.done) return { body: part.value, complete };
    await pause();
  }
}

/** What the advisory reads before the newest step's decode: the MFU summary and the run's args (meta.json read once). */
interface AdvisoryAhead {
  mfu: LocatedAdvisoryAnswer['mfu'];
  gauges: string[];
  args: Record<string, unknown>;
  startTs: number | null;
}

/** The MFU summary and the args; reads the engine hours ahead (one selective read of each cold hour for every gauge and counter). */
function advisoryTelemetryAhead(store: TelemetrySource, w: Window): AdvisoryAhead {
  const series = metricSeries(store, [MFU_KEY, MFU_PEAK_KEY], { x: MFU_STEP_KEY });
  const numeric = (ys: readonly unknown[] = []): number[] => ys.map((v) => (typeof v === 'number' ? v : Number.NaN));
  const mfu = mfuSummary(numeric(series[MFU_KEY]?.y), numeric(series[MFU_PEAK_KEY]?.y));
  const meta = store.meta();
  const args = (meta?.args as Record<string, unknown> | undefined) ?? {};
  const gauges = advisoryEngineGauges(args);
  // One selective read of each cold hour for every gauge the rules can use and, in the recent hours, the
  // abort counters too, all parse threads sharing the hours (each series is then cut from these reads).
  const hasEngine = store.hasStream('engine_series');
  if (hasEngine) {
    const from = recentCountersFrom(store);
    store.engineSeriesReadAhead([
      { t0: w.t0, t1: w.t1, metrics: gauges },
      ...(Number.isFinite(from) ? [{ t0: from, t1: null, metrics: ADVISORY_COUNTERS }] : []),
    ]);
  }
  return { mfu, gauges, args, startTs: meta?.start_ts ?? null };
}

/** The advisories, from the telemetry and the newest step's verdict inputs: a part at a time (each gauge, the phases, the rules). */
function* advisoryFrom(store: TelemetrySource, w: Window & { lowMfu: number }, ahead: AdvisoryAhead, rollout: AdvisoryInputs['rollout']): Generator<void, LocatedAdvisoryAnswer> {
  const { mfu, gauges, args, startTs } = ahead;
  // Each gauge summarised hour by hour (the hours read once for every gauge): memory holds an hour, not the run.
  const gauge = (metric: string, perDpRank = false): EngineSeriesSummary[] => engineSummaries(store, metric, perDpRank, w.t0 ?? null, w.t1 ?? null, gauges);
  const hasEngine = store.hasStream('engine_series');
  const edge = store.timeRange()?.[1] ?? null;
  const phases = rawPhases(store);
  yield;
  let engine: AdvisoryInputs['engine'] = null;
  if (hasEngine) {
    const counters = recentCounters(store);
    yield;
    const running = gauge('sglang_num_running_reqs');
    yield;
    const tokenUsage = gauge('sglang_token_usage');
    yield;
    const cacheHitRate = gauges.includes('sglang_cache_hit_rate') ? gauge('sglang_cache_hit_rate') : [];
    yield;
    // Only series labelled with a dp rank can show an imbalance; a run without them skips the second cut.
    const runningPerDpRank = hasDpRankSeries(store, 'sglang_num_running_reqs') ? gauge('sglang_num_running_reqs', true) : [];
    yield;
    engine = { ...counters, running, tokenUsage, cacheHitRate, runningPerDpRank };
  }
  const inputs: AdvisoryInputs = { args, edge, startTs, phases, engine, rollout, mfu, lowMfu: w.lowMfu, metricsRecords: store.metricsRecords() };
  return { advisories: yield* advisoryRules(inputs), mfu };
}
