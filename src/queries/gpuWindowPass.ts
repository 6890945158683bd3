// One pass over a window of gpu_util, bucket by bucket, for the whole-window answers (fleet, magnitude
// heatmaps, outliers): where a 10-s rollup column falls whole inside one bucket, its cells stand in for
// its rows; only columns a bucket edge or the window cuts read their rows. Bucketing is monotone in ts,
// so a column whose start and end fall in one bucket holds only rows of that bucket: the visits are the
// same as a pass over every row, with a cell's maximum or sum in place of its rows'.
import { rowsOfBlock, UTIL_CELL_S, type GpuUtilBlock, type GpuUtilCells, type GpuUtilHour, type GpuUtilRows } from '../run/model.ts';

export { rowMem, rowPower } from '../run/model.ts';

/** What a pass does with what it visits (bucket `x`, store lane id `lane`). */
export interface WindowVisitor {
  /** A whole cell `k` of `cells` (it has at least one sample). */
  cell(x: number, lane: number, cells: GpuUtilCells, k: number): void;
  /** Row `i` of `rows`. */
  row(x: number, lane: number, rows: GpuUtilRows, i: number): void;
  /** Called before each hour (e.g. to widen per-lane arrays after new lane ids were interned). */
  hour?(): void;
}

export interface WindowPassOptions {
  /** Cells are used only when a bucket is at least this many seconds wide (default one column). */
  minBucketS?: number;
  /** Whether an hour's cells can serve (e.g. sums need a compact hour); default any hour with cells. */
  usable?: (cells: GpuUtilCells) => boolean;
}

/**
 * Visits every row with `t0 <= ts <= t1` (null bounds: unbounded) of `hours` in bucket
 * `clip(floor((ts - t0) / (t1 - t0) * xb), 0, xb - 1)` (bucket 0 when `xb` is 1), taking whole cells where
 * they fit one bucket.
 */
export function windowPass(hours: Iterable<GpuUtilHour>, t0: number | null, t1: number | null, xb: number, v: WindowVisitor, opts: WindowPassOptions = {}): void {
  const lo = t0 ?? -Infinity;
  const hi = t1 ?? Infinity;
  const span = hi - lo;
  const single = xb === 1;
  const bucket = (t: number): number => {
    if (single) return 0;
    const x = Math.floor(((t - lo) / span) * xb);
    return x >= xb ? xb - 1 : x < 0 ? 0 : x;
  };
  const cellsFit = single || span / xb >= (opts.minBucketS ?? UTIL_CELL_S);
  const rows = (r: GpuUtilRows, column: number, hourLo: number): void => {
    const ts = r.ts;
    const lane = r.lane;
    // samplers stamp a node's GPUs with one ts: reuse the bucket while ts repeats
    let lastT = NaN;
    let x = 0;
    for (let i = 0; i < r.length; i++) {
      const t = ts[i];
      if (t !== lastT) {
        if (!(t >= lo && t <= hi) || (column >= 0 && Math.floor((t - hourLo) / UTIL_CELL_S) !== column)) {
          lastT = NaN;
          continue;
        }
        x = bucket(t);
        lastT = t;
      }
      v.row(x, lane[i], r, i);
    }
  };
  for (const h of hours) {
    if (h.hi <= lo || h.lo > hi) continue;
    const cells = h.cells;
    if (cells === null || !cellsFit || (opts.usable !== undefined && !opts.usable(cells))) {
      const b = h.block();
      v.hour?.();
      if (b.length === 0 || b.tsMax < lo || b.tsMin > hi) continue;
      rows(rowsOfBlock(b, 0, b.length), -1, 0);
      continue;
    }
    v.hour?.();
    const L = cells.lanes;
    const ids = h.laneIds;
    const count = cells.count;
    for (let c = 0; c < cells.columns; c++) {
      const from = cells.rowLo[c];
      const to = cells.rowHi[c];
      if (from >= to) continue;
      const cs = cells.lo + c * UTIL_CELL_S;
      const ce = cs + UTIL_CELL_S; // the column's samples are < ce
      if (ce <= lo || cs > hi) continue;
      if (cs >= lo && ce <= hi) {
        const x = bucket(cs);
        if (x === bucket(ce)) {
          const base = c * L;
          for (let l = 0; l < L; l++) if (count[base + l] > 0) v.cell(x, ids[l], cells, base + l);
          continue;
        }
      }
      rows(h.column(c), c, cells.lo);
    }
  }
}


/** Raw blocks (e.g. a selective read of a few lanes) as hours without cells, for `windowPass`. */
export function* blockHours(blocks: Iterable<GpuUtilBlock>): Generator<GpuUtilHour> {
  for (const b of blocks) {
    yield { key: b.key, lo: b.lo, hi: b.hi, cells: null, laneIds: new Uint16Array(0), column: () => rowsOfBlock(b, 0, b.length), block: () => b };
  }
}
