// The columnar frame the server sends for large series (Accept: application/vnd.rlsight.columns):
// "RLC1", u32 LE header length, header JSON, then each column's little-endian values 8-byte aligned.
// Columns become typed-array views over the received bytes, never copied; series i of a per-series
// answer is `[offsets[i], offsets[i+1])` of every column.
import type { EngineSeries, GpuSeries } from '../src/wire/index.ts';

const TYPES = { f64: Float64Array, f32: Float32Array, i32: Int32Array, u32: Uint32Array, i16: Int16Array, u16: Uint16Array, i8: Int8Array, u8: Uint8Array } as const;
type Column = InstanceType<(typeof TYPES)[keyof typeof TYPES]>;

export const COLUMNS_ACCEPT = 'application/vnd.rlsight.columns';

export interface Frame<H> {
  header: H;
  columns: Record<string, Column>;
}

export function decodeColumns<H>(buf: ArrayBuffer): Frame<H> {
  const bytes = new Uint8Array(buf);
  if (bytes.length < 8 || String.fromCharCode(bytes[0], bytes[1], bytes[2], bytes[3]) !== 'RLC1') throw new Error('not a columnar frame');
  const len = new DataView(buf).getUint32(4, true);
  const header = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + len))) as H & { columns: { name: string; type: keyof typeof TYPES; length: number }[] };
  const columns: Record<string, Column> = {};
  let at = (8 + len + 7) & ~7;
  for (const c of header.columns) {
    const T = TYPES[c.type];
    columns[c.name] = new T(buf, at, c.length);
    at += (c.length * T.BYTES_PER_ELEMENT + 7) & ~7;
  }
  return { header, columns };
}

/** Series `i`'s slice of a column. */
function slice(col: Column, offsets: Column, i: number): Float64Array {
  return (col as Float64Array).subarray(offsets[i], offsets[i + 1]);
}

/**
 * A gpu answer's lanes over the frame's columns. The views are typed arrays, read by index like the
 * JSON arrays they stand for (a JSON null is NaN here).
 */
export function gpuLanes(f: Frame<{ lanes: string[] }>): Record<string, GpuSeries> {
  const { offsets, ts, util, mem_mb, power_w } = f.columns;
  const out: Record<string, GpuSeries> = {};
  f.header.lanes.forEach((key, i) => {
    out[key] = { ts: slice(ts, offsets, i), util: slice(util, offsets, i), mem_mb: slice(mem_mb, offsets, i), power_w: slice(power_w, offsets, i) } as unknown as GpuSeries;
  });
  return out;
}

export function engineSeriesOf(f: Frame<{ series: { addr: string; labels: Record<string, string> }[] }>): EngineSeries[] {
  const { offsets, ts, value } = f.columns;
  return f.header.series.map((s, i) => ({ addr: s.addr, labels: s.labels, ts: slice(ts, offsets, i), value: slice(value, offsets, i) }) as unknown as EngineSeries);
}
