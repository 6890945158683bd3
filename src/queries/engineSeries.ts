// Engine series: raw sglang gauges/counters per (addr, labels), DP ranks folded, derived rates and means.
import { strAsc, type EngineSeriesBlock, type EngineSeriesTable, type OutsideEngineQuery, type StreamName } from '../run/model.ts';
import { strideIndices, pick } from './downsample.ts';
import {
  ENGINE_MEAN_METRICS,
  ENGINE_RATE_METRICS,
  buildEngineParts,
  dpFoldFor,
  meanParts,
  parseLabels,
  rateParts,
  type EnginePart,
  type EngineRows,
  type EngineSeriesIdentity,
} from './engineParts.ts';
import { SERIES_MAX_POINTS, checkLimit, checkTimelineWindow } from './limits.ts';
import { DEFAULT_ENGINE_METRICS } from '../formats/dashboard/index.ts';
import type { EngineSeries, EngineSeriesAnswer } from '../wire/timeline.ts';

export { ENGINE_MEAN_METRICS, ENGINE_RATE_METRICS, ENGINE_MEAN_AGGREGATED_METRICS } from './engineParts.ts';

/** What the engine queries read from the telemetry store. */
export interface EngineSeriesSource {
  /** With `metrics`, cold hours may be read for those metrics only (rows of others may remain). */
  engineSeriesBlocks(t0?: number | null, t1?: number | null, metrics?: readonly string[]): EngineSeriesBlock[];
  readonly engineSeries: EngineSeriesTable;
  streamVersion(stream: StreamName): number;
}

export interface EngineSeriesQuery {
  metric: string;
  t0?: number | null;
  t1?: number | null;
  /** At least 2; default 2000. */
  maxPoints?: number;
  /** Keep one series per DP rank instead of folding them (default false). */
  perDpRank?: boolean;
}


/** Per block: its rows grouped by metric id (file order), rebuilt when the block grows. */
interface MetricRowIndex {
  n: number;
  byMetric: Map<number, Uint32Array>;
}

const rowIndexCache = new WeakMap<EngineSeriesBlock, MetricRowIndex>();

/** Full-window parts per `(metric, perDpRank)`, valid for one engine_series stream version, least recently used first. */
interface PartsCache {
  version: number;
  parts: Map<string, EnginePart[]>;
  bytes: number;
}

/** Bytes the kept whole-run parts of one store may hold together (a long run's series are not all kept). */
export const WHOLE_RUN_PARTS_BYTES = 32 * 2 ** 20;

const partsBytes = (parts: readonly EnginePart[]): number => parts.reduce((b, p) => b + p.ts.byteLength + p.value.byteLength, 0);

const partsCache = new WeakMap<EngineSeriesSource, PartsCache>();

function metricOfSeries(table: EngineSeriesTable): Int32Array {
  const out = new Int32Array(table.size);
  for (let s = 0; s < table.size; s++) out[s] = table.key(s).metricId;
  return out;
}

function metricRows(block: EngineSeriesBlock, seriesMetric: Int32Array, metricCount: number): MetricRowIndex {
  const cached = rowIndexCache.get(block);
  if (cached !== undefined && cached.n === block.length) return cached;
  const n = block.length;
  const series = block.series;
  // Metric ids are dense: count per id, then place each row with a per-id cursor.
  const counts = new Uint32Array(metricCount);
  for (let i = 0; i < n; i++) counts[seriesMetric[series[i]]]++;
  const byMetric = new Map<number, Uint32Array>();
  const targets: Uint32Array[] = new Array(metricCount);
  for (let m = 0; m < metricCount; m++) {
    if (counts[m] === 0) continue;
    targets[m] = new Uint32Array(counts[m]);
    byMetric.set(m, targets[m]);
  }
  const cursor = new Uint32Array(metricCount);
  for (let i = 0; i < n; i++) {
    const m = seriesMetric[series[i]];
    targets[m][cursor[m]++] = i;
  }
  const index = { n, byMetric };
  rowIndexCache.set(block, index);
  return index;
}

/**
 * Rows of `metric` with `t0 <= ts <= t1` across the window's blocks (block order, then file order).
 * `read` names every raw metric the answer needs, so one selective read of each cold hour serves them all.
 */
function rowsOfMetric(store: EngineSeriesSource, metric: string, t0: number | null, t1: number | null, read: readonly string[]): EngineRows {
  return metricRowsOf(store.engineSeries, store.engineSeriesBlocks(t0, t1, read), metric, t0, t1);
}

/** Rows of `metric` with `t0 <= ts <= t1` in `blocks` (block order, then file order). */
export function metricRowsOf(table: EngineSeriesTable, blocks: readonly EngineSeriesBlock[], metric: string, t0: number | null, t1: number | null): EngineRows {
  const metricId = table.metrics.find(metric);
  if (metricId < 0) return { ts: new Float64Array(0), series: new Uint32Array(0), value: new Float64Array(0), length: 0 };
  const seriesMetric = metricOfSeries(table);
  const lo = t0 ?? -Infinity;
  const hi = t1 ?? Infinity;
  const picked = blocks.map((b) => metricRows(b, seriesMetric, table.metrics.size).byMetric.get(metricId) ?? new Uint32Array(0));
  let total = 0;
  for (const p of picked) total += p.length;
  const ts = new Float64Array(total);
  const series = new Uint32Array(total);
  const value = new Float64Array(total);
  let n = 0;
  blocks.forEach((b, k) => {
    const bts = b.ts;
    const bseries = b.series;
    const bvalue = b.value;
    const rowsK = picked[k];
    for (let j = 0; j < rowsK.length; j++) {
      const i = rowsK[j];
      const t = bts[i];
      if (!(t >= lo && t <= hi)) continue;
      ts[n] = t;
      series[n] = bseries[i];
      value[n] = bvalue[i];
      n++;
    }
  });
  return { ts: ts.subarray(0, n), series: series.subarray(0, n), value: value.subarray(0, n), length: n };
}

export function identities(table: EngineSeriesTable): EngineSeriesIdentity[] {
  const out: EngineSeriesIdentity[] = new Array(table.size);
  for (let s = 0; s < table.size; s++) {
    const k = table.key(s);
    out[s] = { addr: k.addr, labelsJson: k.labelsJson };
  }
  return out;
}

function rawParts(store: EngineSeriesSource, metric: string, perDpRank: boolean, t0: number | null, t1: number | null, read: readonly string[] = [metric]): EnginePart[] {
  const rows = rowsOfMetric(store, metric, t0, t1, read);
  if (rows.length === 0) return [];
  return buildEngineParts(rows, identities(store.engineSeries), dpFoldFor(metric, perDpRank));
}

/** The parts served for `metric` (raw, rate or mean), before downsampling. */
export function partsOf(store: EngineSeriesSource, metric: string, perDpRank: boolean, t0: number | null, t1: number | null): EnginePart[] {
  const rateBase = ENGINE_RATE_METRICS[metric];
  if (rateBase !== undefined) return rateParts(rawParts(store, rateBase, perDpRank, t0, t1));
  const meanBase = ENGINE_MEAN_METRICS[metric];
  if (meanBase !== undefined) {
    const read = [`${meanBase}_sum`, `${meanBase}_count`];
    return meanParts(rawParts(store, read[0], perDpRank, t0, t1, read), rawParts(store, read[1], perDpRank, t0, t1, read));
  }
  return rawParts(store, metric, perDpRank, t0, t1);
}

/** Whole-run parts, cached per `(metric, perDpRank)` until the engine_series stream changes. */
function wholeRunParts(store: EngineSeriesSource, metric: string, perDpRank: boolean): EnginePart[] {
  const version = store.streamVersion('engine_series');
  let cache = partsCache.get(store);
  if (cache === undefined || cache.version !== version) {
    cache = { version, parts: new Map(), bytes: 0 };
    partsCache.set(store, cache);
  }
  const key = `${perDpRank ? 1 : 0}\u0000${metric}`;
  let parts = cache.parts.get(key);
  if (parts !== undefined) {
    cache.parts.delete(key);
    cache.parts.set(key, parts);
    return parts;
  }
  parts = partsOf(store, metric, perDpRank, null, null);
  const bytes = partsBytes(parts);
  // Stored only if the stream did not move while computing, so a torn rebuild is never served twice.
  if (store.streamVersion('engine_series') === version && bytes <= WHOLE_RUN_PARTS_BYTES / 2) {
    cache.parts.set(key, parts);
    cache.bytes += bytes;
    for (const [k, p] of cache.parts) {
      if (cache.bytes <= WHOLE_RUN_PARTS_BYTES) break;
      cache.parts.delete(k);
      cache.bytes -= partsBytes(p);
    }
  }
  return parts;
}

/**
 * `GET /api/timeline/engine_series`: one series per `(addr, labels)` sorted by that key, each
 * stride-downsampled to `maxPoints`. DP ranks fold per scrape tick (mean for intensive gauges, sum
 * otherwise) unless `perDpRank`; `*_per_s` rates and `*_mean_s` means derive from their counters after
 * folding, leaving gaps at counter resets and idle intervals. An unknown metric gives no series.
 */
export function engineSeries(store: EngineSeriesSource, q: EngineSeriesQuery): EngineSeriesAnswer {
  const maxPoints = checkLimit(SERIES_MAX_POINTS, q.maxPoints ?? SERIES_MAX_POINTS.fallback);
  const t0 = q.t0 ?? null;
  const t1 = q.t1 ?? null;
  checkTimelineWindow(t0, t1);
  const perDpRank = q.perDpRank ?? false;
  const parts = t0 === null && t1 === null ? wholeRunParts(store, q.metric, perDpRank) : partsOf(store, q.metric, perDpRank, t0, t1);
  return {
    series: parts.map((p) => {
      const idx = strideIndices(p.ts.length, maxPoints);
      return withNonfinite({ addr: p.addr, labels: { ...p.labels }, ts: pick(p.ts, idx), value: pick(p.value, idx) });
    }),
  };
}

/** `s` with its NaN and ±Infinity points listed in `nonfinite` (JSON answers them as null). */
export function withNonfinite(s: EngineSeries): EngineSeries {
  const v = s.value;
  for (let i = 0; i < v.length; i++) {
    if (!Number.isFinite(v[i])) (s.nonfinite ??= []).push([i, Number.isNaN(v[i]) ? 'NaN' : v[i] > 0 ? 'Infinity' : '-Infinity']);
  }
  return s;
}

/**
 * How an outside source (Prometheus) computes `metric` the way `engineSeries` does from a collected run:
 * a stored name the collector scrapes as it is, a `*_per_s` rate, a `*_mean_s` mean; null when the
 * collector would hold no such series.
 */
export function outsideEngineQuery(metric: string, perDpRank: boolean): OutsideEngineQuery | null {
  const rateBase = ENGINE_RATE_METRICS[metric];
  if (rateBase !== undefined) return { kind: 'rate', base: rateBase, fold: dpFoldFor(rateBase, perDpRank) };
  const meanBase = ENGINE_MEAN_METRICS[metric];
  if (meanBase !== undefined) return { kind: 'mean', base: meanBase, fold: dpFoldFor(`${meanBase}_sum`, perDpRank) };
  if (DEFAULT_ENGINE_METRICS.includes(metric)) return { kind: 'gauge', base: metric, fold: dpFoldFor(metric, perDpRank) };
  return null;
}

/** What the engine metric catalog reads: the store's cheap presence check (no block is parsed). */
export interface EngineMetricPresence {
  engineMetricsPresent(): readonly string[];
}

/**
 * The engine metric catalog (`/api/meta.engine_metric_keys`): raw names minus cumulative
 * `_total`/`_sum`/`_count` ones, plus each rate whose counter exists and each mean whose `_sum` and
 * `_count` both exist; sorted.
 */
export function engineMetricNames(store: EngineMetricPresence): string[] {
  const present = new Set(store.engineMetricsPresent());
  const names = new Set<string>();
  for (const m of present) if (!/(_total|_sum|_count)$/.test(m)) names.add(m);
  for (const [derived, base] of Object.entries(ENGINE_RATE_METRICS)) if (present.has(base)) names.add(derived);
  for (const [derived, base] of Object.entries(ENGINE_MEAN_METRICS)) {
    if (present.has(`${base}_sum`) && present.has(`${base}_count`)) names.add(derived);
  }
  return [...names].sort(strAsc);
}

/** Whether any series of `metric` carries a `dp_rank` label (only those can show a DP imbalance). */
export function hasDpRankSeries(store: Pick<EngineSeriesSource, 'engineSeries'>, metric: string): boolean {
  const table = store.engineSeries;
  for (let id = 0; id < table.size; id++) {
    const k = table.key(id);
    if (k.metric === metric && 'dp_rank' in parseLabels(k.labelsJson)) return true;
  }
  return false;
}
