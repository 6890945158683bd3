// The rollup of one gpu_util hour: per 10-second column and lane, the sample count, the maxima of util,
// mem_mb and power_w, and the util sum, plus where each column's rows lie in the file. Whole-run answers
// (fleet, long heatmaps, outliers) read these cells instead of the hour's rows; only a column a bucket
// edge or the window cuts needs its rows, and the row range says which to read. Maxima and integer sums
// do not depend on row order, so a cell equals a pass over its rows exactly, and a grown hour extends
// its cells by folding in the new rows only.
import { decodeFrame, encodeFrame, type FrameColumn } from '../columnFrame.ts';
import { MEM_BITS, MEM_MASK, type GpuUtilColumns } from './gpuUtilBlock.ts';

/** Width of a rollup column, seconds. */
export const UTIL_CELL_S = 10;

/** Bumped whenever the persisted rollup layout changes: older files are ignored. */
export const GPU_ROLLUP_VERSION = 1;

/** A cell counts at most this many samples (u16); an hour beyond it has no rollup. */
const MAX_COUNT = 0xffff;

/**
 * Cells of one hour, column-major `[columns × lanes]` (`cell = column * lanes + lane`, lanes local to
 * the rollup: `laneKeys[l]` = `[node, gpu]`). A cell with `count` 0 has no sample (its maxima are 0).
 * `compact`: every value is a small integer (util ≤ 255, mem < 2^20, power < 4096). The util sums are kept
 * while every util folded in is an integer in [0, 255] (a wide hour's fractional power or negative mem does
 * not matter to them), so they are exact whatever the order they were added in; else `sumUtil` is null.
 */
export interface GpuUtilCells {
  /** Hour start (column 0 starts here). */
  lo: number;
  columns: number;
  lanes: number;
  laneKeys: [string, number][];
  compact: boolean;
  /** Rows folded in (the hour's first `rows` rows in file order). */
  rows: number;
  count: Uint16Array;
  maxUtil: Float64Array | Uint8Array;
  maxMem: Float64Array | Uint32Array;
  maxPower: Float64Array | Uint16Array;
  sumUtil: Uint32Array | null;
  /** Rows of column `c` lie within file rows `[rowLo[c], rowHi[c])` (mixed with other columns' rows when the file is not in time order); empty when `rowLo >= rowHi`. */
  rowLo: Uint32Array;
  rowHi: Uint32Array;
  /**
   * Where each column's rows lie in the partition file, bytes `[byteLo[c], byteHi[c])` (whole lines), when
   * the writer of the rollup knew it (the collector does); null otherwise.
   */
  byteLo: Float64Array | null;
  byteHi: Float64Array | null;
}

/** How the rows handed to `foldGpuUtilRows` sit in the file, when they are not the file's rows from 0. */
export interface FoldPlace {
  /** File row number of the first folded row (default: its index, i.e. rows are the file's from 0). */
  rowBase?: number;
  /** Byte span of each handed row in the file (tracked as the columns' byte ranges). */
  bytes?: { start: Float64Array; end: Float64Array };
}

/** The columns of an hour's rows the rollup reads (lane ids index `laneKeys`). */
export interface GpuUtilRowsIn {
  length: number;
  ts: Float64Array;
  lane: Uint16Array;
  util: Uint8Array | Float64Array;
  /** Compact schema: mem | power << 20. */
  memPower?: Uint32Array;
  mem?: Float64Array;
  power?: Float64Array;
}

/** mem_mb of row `i`. */
export function rowMem(r: GpuUtilRowsIn, i: number): number {
  return r.memPower !== undefined ? r.memPower[i] & MEM_MASK : r.mem![i];
}

/** power_w of row `i`. */
export function rowPower(r: GpuUtilRowsIn, i: number): number {
  return r.memPower !== undefined ? r.memPower[i] >>> MEM_BITS : r.power![i];
}

export function rowsOfColumns(c: GpuUtilColumns): GpuUtilRowsIn {
  const cols = c.cols as unknown as Record<string, FrameColumn>;
  return {
    length: c.length,
    ts: cols.ts as Float64Array,
    lane: cols.lane as Uint16Array,
    util: cols.util as Uint8Array | Float64Array,
    memPower: cols.memPower as Uint32Array | undefined,
    mem: cols.mem as Float64Array | undefined,
    power: cols.power as Float64Array | undefined,
  };
}

/**
 * Folds rows `[from, rows.length)` into `prev` (or builds new cells when `prev` is null or cannot take
 * them: another schema, a lane it does not have room for). `rowLanes[id]` is `[node, gpu]` of row lane
 * id `id`. Null when the hour cannot be rolled up: rows outside `[lo, hi)`, a non-finite hour (the
 * legacy flat file) or a cell with more than 65,535 samples.
 */
export function foldGpuUtilRows(
  prev: GpuUtilCells | null,
  rows: GpuUtilRowsIn,
  rowLanes: readonly (readonly [string, number])[],
  lo: number,
  hi: number,
  from = 0,
  place: FoldPlace = {},
): GpuUtilCells | null {
  if (!Number.isFinite(lo) || !Number.isFinite(hi) || hi <= lo) return null;
  // rows are either the file's from row 0 (extended from `from`) or a batch whose first row is file row `rowBase`
  const batch = place.rowBase !== undefined;
  const bytes = place.bytes ?? null;
  // the cells must end where these rows start, in the same hour, tracking bytes alike; else start over
  if (prev !== null && (!sameHour(prev, lo, hi) || prev.rows !== (batch ? place.rowBase : from) || (prev.byteLo === null) !== (bytes === null))) prev = null;
  if (prev === null) {
    if (batch && place.rowBase! > 0) return null; // the earlier rows are not at hand
    from = 0;
  }
  const rowBase = batch ? place.rowBase! : from;
  let compact = isCompact(rows);
  // a compact rollup taking wide rows becomes wide; a wide one takes compact rows as they are
  if (prev !== null && prev.compact && !compact) prev = widened(prev);
  else if (prev !== null && !prev.compact) compact = false;
  // lanes the rows use, local to the rollup (the previous cells' lanes keep their places)
  const keys: [string, number][] = prev ? [...prev.laneKeys] : [];
  const localOf = new Map<string, number>(keys.map(([n, g], i) => [`${n}:${g}`, i]));
  const rowLocal = new Int32Array(rowLanes.length).fill(-1);
  const n = rows.length;
  const lane = rows.lane;
  for (let i = from; i < n; i++) {
    const id = lane[i];
    if (rowLocal[id] >= 0) continue;
    const [node, gpu] = rowLanes[id];
    const k = `${node}:${gpu}`;
    let l = localOf.get(k);
    if (l === undefined) {
      l = keys.length;
      keys.push([node, gpu]);
      localOf.set(k, l);
    }
    rowLocal[id] = l;
  }
  const columns = Math.ceil((hi - lo) / UTIL_CELL_S);
  const L = keys.length;
  let cells: GpuUtilCells;
  if (prev !== null && prev.lanes === L) {
    cells = prev;
  } else {
    cells = emptyCells(lo, columns, L, keys, compact, bytes !== null);
    if (prev !== null) copyCells(prev, cells);
  }
  cells.laneKeys = keys;
  // cells extended from ones without sums (a fractional util seen before) stay without
  if (prev !== null && prev.sumUtil === null) cells.sumUtil = null;
  const { count, maxUtil, maxMem, maxPower, rowLo, rowHi, byteLo, byteHi } = cells;
  let sumUtil = cells.sumUtil;
  const { ts, util, memPower, mem, power } = rows;
  for (let i = from; i < n; i++) {
    const c = Math.floor((ts[i] - lo) / UTIL_CELL_S);
    if (!(c >= 0 && c < columns)) return null; // outside the hour (or NaN)
    const k = c * L + rowLocal[lane[i]];
    const cnt = count[k];
    if (cnt === MAX_COUNT) return null;
    count[k] = cnt + 1;
    const u = util[i];
    let m: number;
    let p: number;
    if (memPower !== undefined) {
      m = memPower[i] & MEM_MASK;
      p = memPower[i] >>> MEM_BITS;
    } else {
      m = mem![i];
      p = power![i];
    }
    if (cnt === 0) {
      maxUtil[k] = u;
      maxMem[k] = m;
      maxPower[k] = p;
    } else {
      if (u > maxUtil[k]) maxUtil[k] = u;
      if (m > maxMem[k]) maxMem[k] = m;
      if (p > maxPower[k]) maxPower[k] = p;
    }
    if (sumUtil !== null) {
      if (u >= 0 && u <= 255 && Math.floor(u) === u) sumUtil[k] += u;
      else sumUtil = cells.sumUtil = null; // a fractional util: sums would depend on the order of addition
    }
    const r = rowBase + (i - from);
    if (rowLo[c] >= rowHi[c]) {
      rowLo[c] = r;
      rowHi[c] = r + 1;
      if (byteLo !== null) {
        byteLo[c] = bytes!.start[i];
        byteHi![c] = bytes!.end[i];
      }
    } else {
      if (r < rowLo[c]) rowLo[c] = r;
      if (r + 1 > rowHi[c]) rowHi[c] = r + 1;
      if (byteLo !== null) {
        if (bytes!.start[i] < byteLo[c]) byteLo[c] = bytes!.start[i];
        if (bytes!.end[i] > byteHi![c]) byteHi![c] = bytes!.end[i];
      }
    }
  }
  cells.rows = rowBase + (n - from);
  return cells;
}

function isCompact(rows: GpuUtilRowsIn): boolean {
  return rows.memPower !== undefined && !(rows.util instanceof Float64Array);
}

function sameHour(prev: GpuUtilCells, lo: number, hi: number): boolean {
  return prev.lo === lo && prev.columns === Math.ceil((hi - lo) / UTIL_CELL_S);
}

/** Whether `prev` can take the rows after its own (same hour layout, no more rows than there are). */
export function extendable(prev: GpuUtilCells, rows: GpuUtilRowsIn, lo: number, hi: number): boolean {
  return sameHour(prev, lo, hi) && prev.rows <= rows.length;
}

/** A compact rollup as a wide one (its maxima as floats; the integer util sums stay). */
function widened(c: GpuUtilCells): GpuUtilCells {
  return { ...c, compact: false, maxUtil: Float64Array.from(c.maxUtil), maxMem: Float64Array.from(c.maxMem), maxPower: Float64Array.from(c.maxPower) };
}

function emptyCells(lo: number, columns: number, lanes: number, laneKeys: [string, number][], compact: boolean, withBytes = false): GpuUtilCells {
  const size = columns * lanes;
  return {
    lo,
    columns,
    lanes,
    laneKeys,
    compact,
    rows: 0,
    count: new Uint16Array(size),
    maxUtil: compact ? new Uint8Array(size) : new Float64Array(size),
    maxMem: compact ? new Uint32Array(size) : new Float64Array(size),
    maxPower: compact ? new Uint16Array(size) : new Float64Array(size),
    sumUtil: new Uint32Array(size),
    rowLo: new Uint32Array(columns),
    rowHi: new Uint32Array(columns),
    byteLo: withBytes ? new Float64Array(columns) : null,
    byteHi: withBytes ? new Float64Array(columns) : null,
  };
}

/** Copies `from`'s cells into `to`, which has at least its lanes (same columns, same local ids). */
function copyCells(from: GpuUtilCells, to: GpuUtilCells): void {
  const L0 = from.lanes;
  const L1 = to.lanes;
  for (let c = 0; c < from.columns; c++) {
    for (let l = 0; l < L0; l++) {
      const a = c * L0 + l;
      const b = c * L1 + l;
      to.count[b] = from.count[a];
      to.maxUtil[b] = from.maxUtil[a];
      to.maxMem[b] = from.maxMem[a];
      to.maxPower[b] = from.maxPower[a];
      if (to.sumUtil !== null && from.sumUtil !== null) to.sumUtil[b] = from.sumUtil[a];
    }
  }
  to.rowLo.set(from.rowLo);
  to.rowHi.set(from.rowHi);
  if (to.byteLo !== null && from.byteLo !== null) {
    to.byteLo.set(from.byteLo);
    to.byteHi!.set(from.byteHi!);
  }
}

/** Resident bytes of the cells. */
export function cellsBytes(c: GpuUtilCells): number {
  return (
    c.count.byteLength + c.maxUtil.byteLength + c.maxMem.byteLength + c.maxPower.byteLength + (c.sumUtil?.byteLength ?? 0) + c.rowLo.byteLength + c.rowHi.byteLength + 32 * c.lanes
  );
}

/** The persisted header fields of a rollup (the frame carries the arrays as columns). */
export interface GpuRollupHeader {
  rollup: 'gpu_util';
  version: number;
  lo: number;
  /** The cells' column count (the frame's own `columns` lists its arrays). */
  cellColumns: number;
  lanes: number;
  laneKeys: [string, number][];
  compact: boolean;
  rows: number;
}

export function rollupToFrame(c: GpuUtilCells): { header: GpuRollupHeader; columns: [string, FrameColumn][] } {
  const columns: [string, FrameColumn][] = [
    ['count', c.count],
    ['maxUtil', c.maxUtil],
    ['maxMem', c.maxMem],
    ['maxPower', c.maxPower],
    ['rowLo', c.rowLo],
    ['rowHi', c.rowHi],
  ];
  if (c.sumUtil !== null) columns.push(['sumUtil', c.sumUtil]);
  if (c.byteLo !== null) columns.push(['byteLo', c.byteLo], ['byteHi', c.byteHi!]);
  return {
    header: { rollup: 'gpu_util', version: GPU_ROLLUP_VERSION, lo: c.lo, cellColumns: c.columns, lanes: c.lanes, laneKeys: c.laneKeys, compact: c.compact, rows: c.rows },
    columns,
  };
}

/** The cells of a persisted rollup, or null when the frame is not one this version wrote or is inconsistent. */
export function rollupFromFrame(h: GpuRollupHeader, cols: Record<string, FrameColumn>): GpuUtilCells | null {
  if (h.rollup !== 'gpu_util' || h.version !== GPU_ROLLUP_VERSION) return null;
  const size = h.cellColumns * h.lanes;
  const T = h.compact ? { maxUtil: Uint8Array, maxMem: Uint32Array, maxPower: Uint16Array } : { maxUtil: Float64Array, maxMem: Float64Array, maxPower: Float64Array };
  const ok = (name: string, type: Function, length: number): boolean => cols[name] instanceof type && cols[name].length === length;
  if (!Array.isArray(h.laneKeys) || h.laneKeys.length !== h.lanes || !Number.isFinite(h.lo) || !(h.rows >= 0)) return null;
  if (!ok('count', Uint16Array, size) || !ok('maxUtil', T.maxUtil, size) || !ok('maxMem', T.maxMem, size) || !ok('maxPower', T.maxPower, size)) return null;
  if (!ok('rowLo', Uint32Array, h.cellColumns) || !ok('rowHi', Uint32Array, h.cellColumns)) return null;
  // a compact rollup always has its sums; a wide one has them while every util was an integer
  const withSums = cols.sumUtil !== undefined;
  if ((h.compact || withSums) && !ok('sumUtil', Uint32Array, size)) return null;
  const withBytes = cols.byteLo !== undefined;
  if (withBytes && (!ok('byteLo', Float64Array, h.cellColumns) || !ok('byteHi', Float64Array, h.cellColumns))) return null;
  // copies, so cells can be extended in place (frame columns are views over the file's bytes)
  const copy = <A extends FrameColumn>(a: A): A => a.slice() as A;
  return {
    lo: h.lo,
    columns: h.cellColumns,
    lanes: h.lanes,
    laneKeys: h.laneKeys,
    compact: h.compact,
    rows: h.rows,
    count: copy(cols.count as Uint16Array),
    maxUtil: copy(cols.maxUtil as Uint8Array | Float64Array),
    maxMem: copy(cols.maxMem as Uint32Array | Float64Array),
    maxPower: copy(cols.maxPower as Uint16Array | Float64Array),
    sumUtil: withSums ? copy(cols.sumUtil as Uint32Array) : null,
    rowLo: copy(cols.rowLo as Uint32Array),
    rowHi: copy(cols.rowHi as Uint32Array),
    byteLo: withBytes ? copy(cols.byteLo as Float64Array) : null,
    byteHi: withBytes ? copy(cols.byteHi as Float64Array) : null,
  };
}

/** Which file a persisted rollup describes: the hour, the file's inode and the bytes it covers. */
export interface RollupSource {
  key: string;
  ino: number;
  /** The file's creation time (0 when unknown): an inode reused by a new file is not the file described. */
  born: number;
  offset: number;
}

/** Whether a rollup's source is the file with stat `st` (same inode and, where both are known, creation time). */
export function describesFile(source: RollupSource, st: { ino: number; bornMs?: number }): boolean {
  return source.ino === st.ino && (source.born === 0 || !st.bornMs || source.born === st.bornMs);
}

/** A rollup as the bytes of one frame (written by the partition cache and by the collector). */
export function encodeGpuRollup(c: GpuUtilCells, source: RollupSource): Uint8Array {
  const { header, columns } = rollupToFrame(c);
  return encodeFrame({ ...header, ...source }, columns);
}

/** The cells and source of a rollup frame, or null when the bytes are not a valid rollup of hour `key` this version wrote. */
export function decodeGpuRollup(bytes: Uint8Array, key: string): { cells: GpuUtilCells; source: RollupSource } | null {
  try {
    const { header, columns } = decodeFrame<GpuRollupHeader & RollupSource>(bytes);
    if (header.key !== key || !Number.isInteger(header.ino) || !(header.offset >= 0)) return null;
    const cells = rollupFromFrame(header, columns);
    return cells === null ? null : { cells, source: { key: header.key, ino: header.ino, born: Number(header.born) || 0, offset: header.offset } };
  } catch {
    return null;
  }
}
