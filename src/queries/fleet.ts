// Fleet overview: per time bucket, the phase mix across all lanes and the util quantile band — O(buckets), never O(lanes).
import { FLAT_STREAMS, PARTITIONED_STREAMS, type GpuUtilHour } from '../run/model.ts';
import { windowPass } from './gpuWindowPass.ts';
import { phaseComposition, utilBand, type FleetBand } from './fleetBand.ts';
import { heatmapLaneRows, phaseHeatmapMatrix, resolveHeatmapWindow, type HeatmapSource } from './heatmap.ts';
import { FLEET_X_BUCKETS, checkLimit } from './limits.ts';
import type { Fleet } from '../wire/timeline.ts';

export type FleetSource = HeatmapSource;

export interface FleetQuery {
  t0?: number | null;
  t1?: number | null;
  /** Within FLEET_X_BUCKETS. */
  xBuckets?: number;
}

export type { Fleet };

/** Answers per store, keyed by the resolved window, bucket count and every stream's version. */
const answers = new WeakMap<object, Map<string, Fleet>>();
const ANSWERS_KEPT = 8;

/**
 * Per-lane max util per bucket over rows in `[t0, t1]`, bucket-major `[xb × laneCount]` (NaN = no sample):
 * `bucket = clip(floor((ts - t0)/span*xb), 0, xb-1)`. Whole rollup cells stand in for their rows where a
 * column falls in one bucket (see `windowPass`); the answer is identical to a pass over every row.
 */
export function laneBucketMax(hours: Iterable<GpuUtilHour>, lanes: { readonly size: number }, t0: number, t1: number, xb: number): { max: Float64Array; laneCount: number } {
  // lane ids are interned as hours are read: the matrix widens when an hour brings new ones
  let laneCount = lanes.size;
  let out = new Float64Array(xb * laneCount).fill(NaN);
  const widen = (): void => {
    const wider = lanes.size;
    const next = new Float64Array(xb * wider).fill(NaN);
    for (let x = 0; x < xb; x++) next.set(out.subarray(x * laneCount, (x + 1) * laneCount), x * wider);
    out = next;
    laneCount = wider;
  };
  windowPass(hours, t0, t1, xb, {
    hour: () => {
      if (lanes.size > laneCount) widen();
    },
    cell: (x, lane, cells, k) => {
      const c = x * laneCount + lane;
      const v = cells.maxUtil[k];
      if (!(out[c] >= v)) out[c] = v;
    },
    row: (x, lane, rows, i) => {
      const c = x * laneCount + lane;
      const v = rows.util[i];
      if (!(out[c] >= v)) out[c] = v;
    },
  });
  return { max: out, laneCount };
}

function versionKey(store: FleetSource): string {
  const parts: (string | number)[] = [];
  for (const s of [...PARTITIONED_STREAMS, ...FLAT_STREAMS]) parts.push(store.streamVersion(s));
  parts.push(JSON.stringify(store.timeRange()), store.meta()?.start_ts ?? 'none', store.laneIndex().length);
  return parts.join(',');
}

/**
 * `GET /api/timeline/fleet`: the phase heatmap of every lane reduced to per-bucket fractions
 * (`composition`, palette id 0 as `"none"`, 4 decimals), and per bucket the p10/p50/p90/min over lanes
 * of each lane's max util (`band`, null where no lane has a sample). Missing bounds default to the
 * run's time range.
 */
export function fleet(store: FleetSource, q: FleetQuery = {}): Fleet {
  const xb = checkLimit(FLEET_X_BUCKETS, q.xBuckets ?? FLEET_X_BUCKETS.fallback);
  const w = resolveHeatmapWindow(store, q.t0, q.t1);
  const t0 = w?.t0 ?? 0.0;
  const t1 = w?.t1 ?? 0.0;
  const key = `${t0}|${t1}|${xb}|${versionKey(store)}`;
  let cache = answers.get(store);
  if (cache === undefined) answers.set(store, (cache = new Map()));
  const hit = cache.get(key);
  if (hit !== undefined) return structuredClone(hit);

  let answer: Fleet;
  if (w === null) {
    const nulls = (): null[] => new Array(xb).fill(null);
    answer = { t0, t1, x_buckets: xb, lanes: 0, palette: [], composition: {}, band: { p10: nulls(), p50: nulls(), p90: nulls(), min: nulls() } };
  } else {
    const rows = heatmapLaneRows(store.laneIndex(), null);
    const { palette, matrix } = phaseHeatmapMatrix(store, rows, null, t0, t1, xb);
    const { max, laneCount } = laneBucketMax(store.gpuUtilHours(t0, t1), store.lanes, t0, t1, xb);
    const band = utilBand(max, laneCount, xb);
    answer = { t0, t1, x_buckets: xb, lanes: rows.length, palette, composition: phaseComposition(matrix, rows.length, xb, palette), band };
  }
  if (cache.size >= ANSWERS_KEPT) cache.delete(cache.keys().next().value!);
  cache.set(key, answer);
  return structuredClone(answer);
}
