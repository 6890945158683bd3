// Per hour block of gpu_util: 10-second columns of per-lane max util, built once per (block, row count),
// so whole-run overviews read ~1/10 of the rows and only re-read raw rows where a bucket edge cuts a column.
import type { GpuUtilBlock } from '../run/telemetry/store.ts';

export const UTIL_CELL_S = 10;

export interface UtilCells {
  /** Block row count when built (blocks only grow; a longer block is rebuilt). */
  n: number;
  lo: number;
  columns: number;
  laneCount: number;
  /** Column-major `[columns × laneCount]` max util; NaN where the lane has no sample in the column. */
  max: Float64Array;
  /** Rows of column c are block rows `[colStart[c], colStart[c+1])`. */
  colStart: Uint32Array;
}

const built = new WeakMap<GpuUtilBlock, { n: number; laneCount: number; cells: UtilCells | null }>();

/**
 * The block's cells, or null when they cannot stand in for its rows: the legacy flat file (no hour
 * bounds), a row outside the block's hour, or rows not in column order (file order must be time order
 * at 10 s granularity). Lane ids must be below `laneCount`.
 */
export function utilCellsOf(b: GpuUtilBlock, laneCount: number): UtilCells | null {
  const prev = built.get(b);
  if (prev !== undefined && prev.n === b.length && prev.laneCount >= laneCount) return prev.cells;
  const cells = buildCells(b, laneCount);
  built.set(b, { n: b.length, laneCount, cells });
  return cells;
}

function buildCells(b: GpuUtilBlock, laneCount: number): UtilCells | null {
  if (!Number.isFinite(b.lo) || !Number.isFinite(b.hi)) return null;
  const lo = b.lo;
  const columns = Math.ceil((b.hi - lo) / UTIL_CELL_S);
  const n = b.length;
  const ts = b.ts;
  const lane = b.lane;
  const util = b.util;
  const max = new Float64Array(columns * laneCount).fill(NaN);
  const colStart = new Uint32Array(columns + 1);
  let col = 0;
  for (let i = 0; i < n; i++) {
    const c = Math.floor((ts[i] - lo) / UTIL_CELL_S);
    if (!(c >= col && c < columns)) return null; // out of the hour, out of order, or NaN
    while (col < c) colStart[++col] = i;
    const l = lane[i];
    if (l >= laneCount) return null;
    const k = c * laneCount + l;
    const v = util[i];
    if (!(max[k] >= v)) max[k] = v;
  }
  while (col < columns) colStart[++col] = n;
  return { n, lo, columns, laneCount, max, colStart };
}
