// The column file of one hour (`.cols.rlc`): a whole-file parse of a partition (exactly what a parse thread
// hands over) as one columnar frame, with a header naming the source file (inode, creation time), the bytes
// and lines parsed and the lines skipped; engine rows grouped by metric so one metric is read alone. Written
// by the reader's partition cache and by the collector beside the hours it writes; read by both.
import { decodeFrame, framePieces, type FrameColumn } from '../columnFrame.ts';
import type { PartitionedStream } from '../dashboard/layout.ts';
import type { EngineSeriesColumns } from './engineSeriesBlock.ts';
import { describesFile } from './gpuUtilRollup.ts';
import type { ParsedColumns, ParseResult } from './parsedColumns.ts';

/** What a column file is checked against: the partition file as it is now. */
export interface FileStat {
  size: number;
  ino: number;
  mtimeMs: number;
  /** Creation time where the file system keeps one (an inode reused by a new file has a new one); 0 when unknown. */
  bornMs?: number;
}

/** Bumped whenever the persisted layout or a parser's output changes: older files are ignored. */
export const PARTITION_CACHE_VERSION = 2;

export interface CacheHeader {
  version: number;
  stream: PartitionedStream;
  key: string;
  ino: number;
  /** The source file's creation time (0 when unknown), so a new file on a reused inode is not taken for it. */
  born?: number;
  /** Bytes of the source file parsed (complete lines), and lines consumed. */
  offset: number;
  lines: number;
  warnings: [number, string][];
  length: number;
  tsMin: number | null;
  tsMax: number | null;
  /** Stream extras: the id tables the columns refer to, counts. */
  extra: Record<string, unknown>;
}

export interface CachedPartition {
  result: ParseResult;
  ino: number;
}

/**
 * One whole-file parse of hour `key` of `stream` as the bytes of a persisted frame: what the partition
 * cache saves and the collector writes beside the partition. `source` names the parsed file (its inode
 * and creation time, 0 when unknown). With `consume` the columns may be reordered in place (a parse that
 * is written and dropped: no second copy of an hour's rows is made).
 */
export function encodePersistedParse(stream: PartitionedStream, key: string, source: { ino: number; born: number }, r: ParseResult, consume = false): Uint8Array[] {
  const { extra, columns } = pack(r.data, consume);
  const c = (r.data as { columns?: { length: number; tsMin: number; tsMax: number } }).columns;
  const header: CacheHeader = {
    version: PARTITION_CACHE_VERSION,
    stream,
    key,
    ino: source.ino,
    born: source.born,
    offset: r.offset,
    lines: r.lines,
    warnings: r.warnings,
    length: c?.length ?? 0,
    tsMin: c && Number.isFinite(c.tsMin) ? c.tsMin : null,
    tsMax: c && Number.isFinite(c.tsMax) ? c.tsMax : null,
    extra,
  };
  // pieces (views over the columns), so an hour's columns are written without a copy of them
  return framePieces(header as unknown as Record<string, unknown>, columns);
}

/** The parse a persisted frame holds, when it is one of hour `key` of `stream` this version wrote, of the file with stat `st`; null otherwise. */
export function decodePersistedParse(bytes: Uint8Array, stream: PartitionedStream, key: string, st: FileStat): CachedPartition | null {
  try {
    const { header, columns } = decodeFrame<CacheHeader>(bytes);
    if (!validHeader(header, stream, key, st)) return null;
    const data = unpack(stream, header, columns);
    return { ino: header.ino, result: { data, offset: header.offset, lines: header.lines, view: null, warnings: header.warnings } };
  } catch {
    return null;
  }
}

/** Whether a persisted header is this version's, of hour `key` of `stream`, and of the file with stat `st` as it is now (not longer than it). */
export function validHeader(h: CacheHeader, stream: PartitionedStream, key: string, st: FileStat): boolean {
  return (
    h !== null &&
    typeof h === 'object' &&
    h.version === PARTITION_CACHE_VERSION &&
    h.stream === stream &&
    h.key === key &&
    Number.isInteger(h.ino) &&
    Number.isInteger(h.offset) &&
    h.offset >= 0 &&
    Number.isInteger(h.lines) &&
    Number.isInteger(h.length) &&
    Array.isArray(h.warnings) &&
    h.extra !== null &&
    typeof h.extra === 'object' &&
    sameFile(h, st) &&
    h.offset <= st.size
  );
}

/** Whether a persisted parse is of the file with stat `st` (its inode, and its creation time where both are known). */
function sameFile(h: { ino: number; born?: number }, st: FileStat): boolean {
  return describesFile({ key: '', offset: 0, ino: h.ino, born: Number(h.born) || 0 }, st);
}

/** Engine rows regrouped by metric (stable), each row keeping its file position in `row`; with `consume` in `c`'s own columns. */
function byMetric(c: EngineSeriesColumns, series: readonly [string, string, string][], consume: boolean): { extra: Record<string, unknown>; columns: [string, FrameColumn][] } {
  const n = c.length;
  const metricOf = new Map<string, number>();
  const seriesMetric = new Int32Array(series.length);
  series.forEach(([, m], i) => {
    let id = metricOf.get(m);
    if (id === undefined) metricOf.set(m, (id = metricOf.size));
    seriesMetric[i] = id;
  });
  const counts = new Uint32Array(metricOf.size + 1);
  const sid = c.cols.series;
  for (let i = 0; i < n; i++) counts[seriesMetric[sid[i]] + 1]++;
  for (let m = 0; m < metricOf.size; m++) counts[m + 1] += counts[m];
  const segments: Record<string, [number, number]> = {};
  for (const [name, m] of metricOf) if (counts[m + 1] > counts[m]) segments[name] = [counts[m], counts[m + 1]];
  const cursor = counts.slice(0, metricOf.size);
  const row = new Uint32Array(n);
  for (let i = 0; i < n; i++) row[cursor[seriesMetric[sid[i]]]++] = i;
  if (consume) {
    const ts = c.cols.ts.subarray(0, n);
    const out = sid.subarray(0, n);
    const value = c.cols.value.subarray(0, n);
    gatherInPlace(row, ts, out, value);
    return { extra: { series, segments }, columns: [['ts', ts], ['series', out], ['value', value], ['row', row]] };
  }
  const ts = new Float64Array(n);
  const out = new Uint32Array(n);
  const value = new Float64Array(n);
  for (let k = 0; k < n; k++) {
    const i = row[k];
    ts[k] = c.cols.ts[i];
    out[k] = sid[i];
    value[k] = c.cols.value[i];
  }
  return { extra: { series, segments }, columns: [['ts', ts], ['series', out], ['value', value], ['row', row]] };
}

/**
 * `a[k] = a[perm[k]]` for every `k` of three columns, through one scratch column: a third of the memory of
 * reordering into new columns, and each metric group's rows are read in file order.
 */
function gatherInPlace(perm: Uint32Array, a: Float64Array, b: Uint32Array, c: Float64Array): void {
  const n = perm.length;
  const scratch = new Float64Array(n);
  for (const col of [a, c]) {
    for (let k = 0; k < n; k++) scratch[k] = col[perm[k]];
    col.set(scratch);
  }
  const scratch32 = new Uint32Array(scratch.buffer, 0, n);
  for (let k = 0; k < n; k++) scratch32[k] = b[perm[k]];
  b.set(scratch32);
}

/**
 * Rows picked from metric groups back in file order (by their `row`): each group (`sizes[g]` rows, one
 * after another) is in file order already, so a k-way merge of the groups restores it.
 */
export function inFileOrder(p: { ts: Float64Array; series: Uint32Array; value: Float64Array; row: Uint32Array }, n: number, sizes: readonly number[]): EngineSeriesColumns {
  const ts = new Float64Array(n);
  const series = new Uint32Array(n);
  const value = new Float64Array(n);
  const at = new Int32Array(sizes.length);
  const end = new Int32Array(sizes.length);
  let start = 0;
  sizes.forEach((size, g) => {
    at[g] = start;
    end[g] = start += size;
  });
  let tsMin = NaN;
  let tsMax = NaN;
  for (let k = 0; k < n; k++) {
    // the group whose next row comes first in the file (few groups: a linear pick is cheapest)
    let best = -1;
    for (let g = 0; g < sizes.length; g++) if (at[g] < end[g] && (best < 0 || p.row[at[g]] < p.row[at[best]])) best = g;
    const i = at[best]++;
    ts[k] = p.ts[i];
    series[k] = p.series[i];
    value[k] = p.value[i];
    if (!(ts[k] >= tsMin)) tsMin = ts[k];
    if (!(ts[k] <= tsMax)) tsMax = ts[k];
  }
  return { length: n, tsMin, tsMax, cols: { ts, series, value } };
}

/** A whole engine file back in file order from its metric groups. */
function unpermuted(columns: Record<string, FrameColumn>, length: number, tsMin: number, tsMax: number): EngineSeriesColumns {
  const row = columns.row as Uint32Array;
  const ts = new Float64Array(length);
  const series = new Uint32Array(length);
  const value = new Float64Array(length);
  const sts = columns.ts as Float64Array;
  const sse = columns.series as Uint32Array;
  const sva = columns.value as Float64Array;
  for (let k = 0; k < length; k++) {
    const i = row[k];
    ts[i] = sts[k];
    series[i] = sse[k];
    value[i] = sva[k];
  }
  return { length, tsMin, tsMax, cols: { ts, series, value } };
}

function pack(d: ParsedColumns, consume: boolean): { extra: Record<string, unknown>; columns: [string, FrameColumn][] } {
  if (d.stream === 'engine_series') return byMetric(d.columns, d.series, consume);
  if (d.stream === 'gpu_util' || d.stream === 'phases') {
    const columns = Object.entries(d.columns.cols as Record<string, FrameColumn>).map(([n, c]) => [n, c.subarray(0, d.columns.length)] as [string, FrameColumn]);
    if (d.stream === 'gpu_util') return { extra: { lanes: d.lanes }, columns };
    columns.push(['gpuList', d.columns.gpuList.subarray(0, d.columns.gpuLen)]);
    return { extra: { strings: d.strings, openCount: d.columns.openCount }, columns };
  }
  throw new Error(`${d.stream} is not persisted`);
}

function unpack(stream: PartitionedStream, h: CacheHeader, columns: Record<string, FrameColumn>): ParsedColumns {
  const base = { length: h.length, tsMin: h.tsMin ?? NaN, tsMax: h.tsMax ?? NaN };
  const cols = { ...columns };
  if (stream === 'gpu_util') return { stream, columns: { ...base, cols: cols as any }, lanes: h.extra.lanes as [string, number][] };
  if (stream === 'engine_series') return { stream, columns: unpermuted(cols, h.length, base.tsMin, base.tsMax), series: h.extra.series as [string, string, string][] };
  if (stream === 'phases') {
    const gpuList = cols.gpuList as Int32Array;
    delete cols.gpuList;
    return { stream, columns: { ...base, cols: cols as any, openCount: h.extra.openCount as number, gpuLen: gpuList.length, gpuList }, strings: h.extra.strings as string[] };
  }
  throw new Error(`${stream} is not persisted`);
}
