// Fleet overview: per time bucket, the phase mix across all lanes and the util quantile band — O(buckets), never O(lanes).
import type { GpuUtilBlock } from '../run/telemetry/store.ts';
import { PARTITIONED_STREAMS, FLAT_STREAMS } from '../run/telemetry/records.ts';
import { phaseComposition, utilBand, type FleetBand } from './fleetBand.ts';
import { heatmapLaneRows, phaseHeatmapMatrix, resolveHeatmapWindow, type HeatmapSource } from './heatmap.ts';
import { FLEET_X_BUCKETS, checkLimit } from './limits.ts';
import { UTIL_CELL_S, utilCellsOf } from './utilCells.ts';
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
 * `bucket = clip(floor((ts - t0)/span*xb), 0, xb-1)`. When buckets are at least 10 s wide, a block's
 * 10-s cells stand in for its rows wherever a whole column falls in one bucket (bucketing is monotone
 * in ts, so both column ends agreeing proves it); only columns cut by a bucket edge or the window
 * re-read raw rows. The answer is identical to a pass over every row.
 */
export function laneBucketMax(blocks: Iterable<GpuUtilBlock>, lanes: { readonly size: number }, t0: number, t1: number, xb: number): { max: Float64Array; laneCount: number } {
  // lane ids are interned as blocks are parsed: the matrix widens when a block brings new ones
  let laneCount = lanes.size;
  let out = new Float64Array(xb * laneCount).fill(NaN);
  const widen = (): void => {
    const wider = lanes.size;
    const next = new Float64Array(xb * wider).fill(NaN);
    for (let x = 0; x < xb; x++) next.set(out.subarray(x * laneCount, (x + 1) * laneCount), x * wider);
    out = next;
    laneCount = wider;
  };
  const span = t1 - t0;
  const bucket = (t: number): number => {
    const x = Math.floor(((t - t0) / span) * xb);
    return x >= xb ? xb - 1 : x < 0 ? 0 : x;
  };
  const raw = (b: GpuUtilBlock, from: number, to: number): void => {
    const ts = b.ts;
    const lane = b.lane;
    const util = b.util;
    // Samplers stamp a node's GPUs with one ts: reuse the bucket while ts repeats.
    let lastT = NaN;
    let x = 0;
    for (let i = from; i < to; i++) {
      const t = ts[i];
      if (t !== lastT) {
        if (!(t >= t0 && t <= t1)) {
          lastT = NaN;
          continue;
        }
        x = bucket(t);
        lastT = t;
      }
      const c = x * laneCount + lane[i];
      const v = util[i];
      if (!(out[c] >= v)) out[c] = v;
    }
  };
  for (const b of blocks) {
    if (b.length === 0 || b.tsMax < t0 || b.tsMin > t1) continue;
    if (lanes.size > laneCount) widen();
    const cells = span / xb >= UTIL_CELL_S ? utilCellsOf(b, laneCount) : null;
    if (cells === null) {
      raw(b, 0, b.length);
      continue;
    }
    const L = cells.laneCount;
    for (let c = 0; c < cells.columns; c++) {
      const from = cells.colStart[c];
      const to = cells.colStart[c + 1];
      if (from === to) continue;
      const cs = cells.lo + c * UTIL_CELL_S;
      const ce = cs + UTIL_CELL_S; // samples of the column are < ce
      if (ce <= t0 || cs > t1) continue;
      if (cs >= t0 && ce <= t1) {
        const x = bucket(cs);
        if (x === bucket(ce)) {
          const base = c * L;
          const o = x * laneCount;
          for (let l = 0; l < L; l++) {
            const v = cells.max[base + l];
            if (v === v && !(out[o + l] >= v)) out[o + l] = v;
          }
          continue;
        }
      }
      raw(b, from, to);
    }
  }
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
    const { max, laneCount } = laneBucketMax(store.gpuUtilPass(t0, t1), store.lanes, t0, t1, xb);
    const band = utilBand(max, laneCount, xb);
    answer = { t0, t1, x_buckets: xb, lanes: rows.length, palette, composition: phaseComposition(matrix, rows.length, xb, palette), band };
  }
  if (cache.size >= ANSWERS_KEPT) cache.delete(cache.keys().next().value!);
  cache.set(key, answer);
  return structuredClone(answer);
}
