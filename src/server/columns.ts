// Binary columnar answers: the large series (gpu, engine_series, phases) as one columnar frame (see
// src/formats/columnFrame.ts) when the client asks with `Accept: application/vnd.rlsight.columns` or
// `?format=columns`; JSON stays the default. Each series' values are concatenated per column, with
// `offsets` (u32, series + 1 entries) marking where series i lies: `[offsets[i], offsets[i+1])`.
// A JSON null (a non-finite float) is NaN in the frame.
//
//   gpu            header {kind: "gpu", lanes: ["<node>:<gpu>", …]}; columns offsets, ts, util, mem_mb, power_w (f64)
//   engine_series  header {kind: "engine_series", series: [{addr, labels}, …]}; columns offsets, ts, value (f64)
//   phases         header {kind: "phases", strings: […]}; columns name, node, role (u32 ids into strings),
//                  t0, t1 (f64), gpu, rank (i32): one row per phase
import type { Context } from 'hono';
import { COLUMNS_MEDIA_TYPE, encodeFrame, type FrameColumn } from '../formats/columnFrame.ts';
import type { EngineSeriesAnswer, GpuAnswer, PhasesAnswer } from '../wire/index.ts';

/** Whether the request asks for the columnar frame instead of JSON. */
export function wantsColumns(c: Context): boolean {
  return c.req.query('format') === 'columns' || (c.req.header('accept') ?? '').includes(COLUMNS_MEDIA_TYPE);
}

export function columnsResponse(c: Context, frame: Uint8Array): Response {
  return c.body(frame as Uint8Array<ArrayBuffer>, 200, { 'Content-Type': COLUMNS_MEDIA_TYPE });
}

/** Values of a JSON-shaped number list (null = a non-finite float) as f64. */
function f64(values: ArrayLike<number | null>, into: Float64Array, at: number): void {
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    into[at + i] = v === null ? NaN : v;
  }
}

/** Concatenates one field of every series, with the offsets of each. */
function concat<S>(series: readonly S[], fields: readonly (keyof S)[]): [string, FrameColumn][] {
  const offsets = new Uint32Array(series.length + 1);
  series.forEach((s, i) => (offsets[i + 1] = offsets[i] + (s[fields[0]] as ArrayLike<number>).length));
  const out: [string, FrameColumn][] = [['offsets', offsets]];
  for (const field of fields) {
    const col = new Float64Array(offsets[series.length]);
    series.forEach((s, i) => f64(s[field] as ArrayLike<number | null>, col, offsets[i]));
    out.push([String(field), col]);
  }
  return out;
}

export function gpuFrame(a: GpuAnswer): Uint8Array {
  const lanes = Object.keys(a.lanes);
  return encodeFrame({ kind: 'gpu', lanes }, concat(lanes.map((k) => a.lanes[k]), ['ts', 'util', 'mem_mb', 'power_w']));
}

export function engineSeriesFrame(a: EngineSeriesAnswer): Uint8Array {
  return encodeFrame({ kind: 'engine_series', series: a.series.map((s) => ({ addr: s.addr, labels: s.labels })) }, concat(a.series, ['ts', 'value']));
}

export function phasesFrame(a: PhasesAnswer): Uint8Array {
  const ids = new Map<string, number>();
  const id = (s: string): number => {
    let v = ids.get(s);
    if (v === undefined) ids.set(s, (v = ids.size));
    return v;
  };
  const n = a.phases.length;
  const name = new Uint32Array(n);
  const node = new Uint32Array(n);
  const role = new Uint32Array(n);
  const t0 = new Float64Array(n);
  const t1 = new Float64Array(n);
  const gpu = new Int32Array(n);
  const rank = new Int32Array(n);
  a.phases.forEach((p, i) => {
    name[i] = id(p.name);
    node[i] = id(p.node);
    role[i] = id(p.role);
    t0[i] = p.t0 ?? NaN;
    t1[i] = p.t1 ?? NaN;
    gpu[i] = p.gpu;
    rank[i] = p.rank;
  });
  return encodeFrame({ kind: 'phases', strings: [...ids.keys()] }, { name, node, role, t0, t1, gpu, rank });
}
