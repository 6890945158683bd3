// The columnar frame the server sends for large series (Accept: application/vnd.rlsight.columns), decoded
// by the server's own codec (src/formats/columnFrame.ts): columns become typed-array views over the received
// bytes, never copied; series i of a per-series answer is `[offsets[i], offsets[i+1])` of every column.
import type { Coverage, GpuSeries } from '../src/wire/index.ts';
import { COLUMNS_MEDIA_TYPE, decodeFrame, type DecodedFrame, type FrameColumn } from '../src/formats/columnFrame.ts';

type Column = FrameColumn;

export const COLUMNS_ACCEPT = COLUMNS_MEDIA_TYPE;

export type Frame<H> = DecodedFrame<H>;

/** A frame fetched whole (its columns are views over the buffer). */
export function decodeColumns<H>(buf: ArrayBuffer): Frame<H> {
  return decodeFrame<H>(new Uint8Array(buf));
}

/** Series `i`'s slice of a column (typed as f64: a narrower column's values read alike by index). */
function slice(col: Column, offsets: Column, i: number): Float64Array {
  return col.subarray(offsets[i], offsets[i + 1]) as Float64Array;
}

/**
 * A gpu answer's lanes over the frame's columns. The views are typed arrays, read by index like the
 * JSON arrays they stand for (a JSON null is NaN here); util, mem_mb and power_w may be integer columns.
 */
export function gpuLanes(f: Frame<{ lanes: string[] }>): Record<string, GpuSeries> {
  const { offsets, ts, util, mem_mb, power_w } = f.columns;
  const out: Record<string, GpuSeries> = {};
  f.header.lanes.forEach((key, i) => {
    out[key] = { ts: slice(ts, offsets, i), util: slice(util, offsets, i), mem_mb: slice(mem_mb, offsets, i), power_w: slice(power_w, offsets, i) } as unknown as GpuSeries;
  });
  return out;
}

/** The engine_series frame's header: each series' address and labels, in answer order. */
export interface EngineSeriesHeader {
  series: { addr: string; labels: Record<string, string> }[];
  /** Present on a partial answer (the server still reads the run's history). */
  coverage?: Coverage;
}

/** One engine series over the frame's columns: `ts` and `value` are views (a JSON null is NaN). */
export interface EngineSeriesView {
  addr: string;
  labels: Record<string, string>;
  ts: Float64Array;
  value: Float64Array;
}

/** An engine_series answer's series, in answer order, over the frame's columns. */
export function engineSeriesOf(f: Frame<EngineSeriesHeader>): EngineSeriesView[] {
  const { offsets, ts, value } = f.columns;
  return f.header.series.map((s, i) => ({ addr: s.addr, labels: s.labels, ts: slice(ts, offsets, i), value: slice(value, offsets, i) }));
}

/** The phases frame's header: the string table that the name, node and role columns index. */
export interface PhasesHeader {
  strings: string[];
  /** Rows of phases never closed (a killed trainer's), when there are any. */
  unfinished?: number[];
  /** Rows of phases not closed yet with nothing after them (drawn to the data edge), when there are any. */
  open?: number[];
}

/**
 * One lane's phase intervals as columns: rows `[0, length)` of views over the frame (no copies). Row i
 * is the phase `strings[name[i]]` on `[t0[i], t1[i]]`, of trainer rank `rank[i]` (-1: none) and role
 * `strings[role[i]]`; rows are sorted by t0.
 */
export interface LanePhases {
  readonly length: number;
  readonly t0: Float64Array;
  readonly t1: Float64Array;
  readonly name: Uint32Array;
  readonly role: Uint32Array;
  readonly rank: Int32Array;
  readonly strings: readonly string[];
  /** Lane rows of phases never closed (ended where their rank's next phase began), or null. */
  readonly unfinished: ReadonlySet<number> | null;
  /** Lane rows of phases still open at the data edge (running, or their trainer stopped with nothing after them), or null. */
  readonly open?: ReadonlySet<number> | null;
}

/**
 * A phases answer by lane (`node:gpu`), each lane a slice of the frame's columns: the answer is sorted
 * by (node, gpu, t0), so a lane's rows are contiguous. `names` lists the phase names in order of first
 * appearance.
 */
export function phaseLanes(f: Frame<PhasesHeader>): { byLane: Map<string, LanePhases>; names: string[] } {
  const strings = f.header.strings;
  const unfinished = f.header.unfinished ?? [];
  const stillOpen = f.header.open ?? [];
  /** The frame rows of `rows` within `[start, end)`, as lane rows; null for none. */
  const laneRows = (rows: number[], start: number, end: number): Set<number> | null => {
    const here = rows.filter((r) => r >= start && r < end).map((r) => r - start);
    return here.length ? new Set(here) : null;
  };
  const { name, node, role, t0, t1, gpu, rank } = f.columns as { name: Uint32Array; node: Uint32Array; role: Uint32Array; t0: Float64Array; t1: Float64Array; gpu: Int32Array; rank: Int32Array };
  const byLane = new Map<string, LanePhases>();
  const seen = new Set<number>();
  const names: string[] = [];
  const n = name.length;
  let start = 0;
  for (let i = 1; i <= n; i++) {
    if (i < n && node[i] === node[start] && gpu[i] === gpu[start]) continue;
    const key = `${strings[node[start]!]}:${gpu[start]}`;
    if (byLane.has(key)) throw new Error(`phases frame: the rows of lane ${key} are not contiguous`);
    byLane.set(key, {
      length: i - start,
      t0: t0.subarray(start, i),
      t1: t1.subarray(start, i),
      name: name.subarray(start, i),
      role: role.subarray(start, i),
      rank: rank.subarray(start, i),
      strings,
      unfinished: laneRows(unfinished, start, i),
      open: laneRows(stillOpen, start, i),
    });
    start = i;
  }
  for (let i = 0; i < n; i++) {
    if (seen.has(name[i]!)) continue;
    seen.add(name[i]!);
    names.push(strings[name[i]!]!);
  }
  return { byLane, names };
}
