// Scalar metrics (`metrics.jsonl`) as series per key, on a step axis or on wall-clock time.
import type { MetricsRecord, MetricValue } from '../run/model.ts';
import { STEP_AGGREGATE_METRICS, type StepAggregate, type StepAggregateMetric } from './rollouts.ts';
import { BadArgument } from './limits.ts';
import type { MetricSeries, MetricsAnswer } from '../wire/metrics.ts';

/** The `x` value that puts points on wall-clock time (`x` = record `ts`) whatever their step key. */
export const WALL_TIME_X = '_time';
export const DUMP_METRIC_PREFIX = 'dump/';

export type { MetricSeries };

export interface MetricQuery {
  /** A step key (`rollout/step`, `train/step`, …): only records logged against it; or `WALL_TIME_X`. */
  x: string;
  t0?: number | null;
  t1?: number | null;
}

/** What the metrics queries read from the telemetry store. */
export interface MetricsSource {
  metricsRecords(): readonly MetricsRecord[];
  metricKeys(): string[];
  stepKeys(): string[];
}

/**
 * One series per requested key (an unknown key gets empty arrays), in file order: on a step key, the
 * records logged against it with a step (`x` = their step); on `WALL_TIME_X`, every record (`x` = its ts). Records
 * outside `t0 <= ts <= t1` are skipped. A key listed twice gets every point twice, like the reference.
 */
export function metricSeries(store: MetricsSource, keys: readonly string[], q: MetricQuery): Record<string, MetricSeries> {
  const out: Record<string, MetricSeries> = {};
  for (const k of keys) out[k] = { x: [], y: [], ts: [] };
  const t0 = q.t0 ?? null;
  const t1 = q.t1 ?? null;
  const wall = q.x === WALL_TIME_X;
  for (const r of store.metricsRecords()) {
    // on a step axis a record needs its step (one logged with a step key and no step is on wall time only)
    if (!wall && (r.step_key !== q.x || r.step === null)) continue;
    if ((t0 !== null && r.ts < t0) || (t1 !== null && r.ts > t1)) continue;
    for (const k of keys) {
      if (!(k in r.metrics)) continue;
      const s = out[k];
      const v = r.metrics[k];
      // a diverged value is a point too, said as what it is (JSON answers it as null)
      if (typeof v === 'number' && !Number.isFinite(v)) (s.nonfinite ??= []).push([s.y.length, Number.isNaN(v) ? 'NaN' : v > 0 ? 'Infinity' : '-Infinity']);
      s.x.push(wall ? r.ts : (r.step as number));
      s.y.push(v);
      s.ts.push(r.ts);
    }
  }
  return out;
}

function isStepAggregateColumn(col: string): col is StepAggregateMetric {
  return (STEP_AGGREGATE_METRICS as readonly string[]).includes(col);
}

/**
 * `dump/<col>` series from the dump reader's step aggregates: `x` = rollout id, null values dropped,
 * `ts` always empty; they ignore the x axis and the window. An unknown column is a 400 on `keys`.
 */
export function dumpMetricSeries(aggregates: readonly StepAggregate[], keys: readonly string[]): Record<string, MetricSeries> {
  const out: Record<string, MetricSeries> = {};
  for (const key of keys) {
    const col = key.slice(DUMP_METRIC_PREFIX.length);
    if (!key.startsWith(DUMP_METRIC_PREFIX) || !isStepAggregateColumn(col)) throw new BadArgument('keys', `unknown dump metric '${key}'`);
    const s: MetricSeries = { x: [], y: [], ts: [] };
    for (const a of aggregates) {
      const v = a[col];
      if (v === null || v === undefined || Number.isNaN(v)) continue;
      s.x.push(a.rollout_id);
      s.y.push(v);
    }
    out[key] = s;
  }
  return out;
}

/** A step series with a point at `y = null` at each of `steps` it has no point at (kept ascending): a chart breaks its line there. */
export function withGapsAt(s: MetricSeries, steps: readonly number[]): MetricSeries {
  const at = new Set(s.x);
  const gaps = steps.filter((x) => !at.has(x));
  if (gaps.length === 0) return s;
  const order = [...s.x.map((x, i) => ({ x, y: s.y[i] })), ...gaps.map((x) => ({ x, y: null }))].sort((a, b) => a.x - b.x);
  return { ...s, x: order.map((p) => p.x), y: order.map((p) => p.y) };
}

/** The requested keys of a comma-separated list (empty items dropped, repeats kept); at least one. */
export function metricKeyList(text: string): string[] {
  const keys = text.split(',').filter((k) => k !== '');
  if (keys.length === 0) throw new BadArgument('keys', 'keys must be a non-empty comma-separated list');
  return keys;
}

/**
 * The `/api/metrics` answer: store keys first (in request order), then `dump/*` keys, whose
 * aggregates are asked of `stepAggregates` only when one is requested.
 */
export async function metricsAnswer(
  store: MetricsSource,
  keys: readonly string[],
  q: MetricQuery,
  stepAggregates: () => Promise<readonly StepAggregate[]> | readonly StepAggregate[],
): Promise<MetricsAnswer> {
  const dumpKeys = keys.filter((k) => k.startsWith(DUMP_METRIC_PREFIX));
  for (const k of dumpKeys) if (!isStepAggregateColumn(k.slice(DUMP_METRIC_PREFIX.length))) throw new BadArgument('keys', `unknown dump metric '${k}'`);
  const out = metricSeries(store, keys.filter((k) => !k.startsWith(DUMP_METRIC_PREFIX)), q);
  if (dumpKeys.length > 0) Object.assign(out, dumpMetricSeries(await stepAggregates(), dumpKeys));
  return out;
}

/** A step's logged values (records logged against its number; the last wins) and its dump/* aggregates. */
export function loggedStepMetrics(records: readonly MetricsRecord[], aggregate: StepAggregate | undefined, step: number): Map<string, number> {
  const out = new Map<string, number>();
  for (const r of records) {
    if (r.step !== step) continue;
    for (const [k, v] of Object.entries(r.metrics)) if (typeof v === 'number' && Number.isFinite(v)) out.set(k, v);
  }
  if (aggregate) for (const m of STEP_AGGREGATE_METRICS) if (aggregate[m] !== null) out.set(DUMP_METRIC_PREFIX + m, aggregate[m]!);
  return out;
}
