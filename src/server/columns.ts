// Binary columnar answers: the large series (gpu, engine_series, phases) as one columnar frame (see
// src/formats/columnFrame.ts) when the client asks with `Accept: application/vnd.rlsight.columns` or
// `?format=columns`; JSON stays the default. Each series' values are concatenated per column, with
// `offsets` (u32, series + 1 entries) marking where series i lies: `[offsets[i], offsets[i+1])`.
// A JSON null (a non-finite float) is NaN in the frame.
//
//   gpu            header {kind: "gpu", lanes: ["<node>:<gpu>", …]}; columns offsets, ts (f64), util, mem_mb, power_w
//                  (each the narrowest type that holds all its values exactly: u8, u16, i32 or u32 when they are
//                  integers, f32 when every value is one, else f64; a column with a gap is a float column)
//   engine_series  header {kind: "engine_series", series: [{addr, labels}, …], coverage?}; columns offsets, ts, value (f64)
//   phases         header {kind: "phases", strings: […], unfinished?: [row…], open?: [row…]}; columns name, node, role (u32 ids into strings),
//                  t0, t1 (f64), gpu, rank (i32): one row per phase
import type { Context } from 'hono';
import { COLUMNS_MEDIA_TYPE, framePieces, type FrameColumn } from '../formats/columnFrame.ts';
import type { EngineSeriesAnswer, GpuAnswer, PhasesAnswer } from '../wire/index.ts';
import { BadArgument } from '../queries/limits.ts';

/** Whether the request asks for the columnar frame instead of JSON. */
export function wantsColumns(c: Context): boolean {
  const format = c.req.query('format');
  if (format === 'columns') return true;
  if (format === 'json') return false;
  // asked for by name, a format not served is refused rather than answered as JSON
  if (format !== undefined) throw new BadArgument('format', `format: expected columns or json, got ${JSON.stringify(format.slice(0, 40))}`);
  // the frame's media type among those accepted, unless with q=0 (`not this one`)
  return (c.req.header('accept') ?? '').split(',').some((part) => {
    const [type, ...params] = part.split(';').map((p) => p.trim());
    if (type.toLowerCase() !== COLUMNS_MEDIA_TYPE) return false;
    const q = params.find((p) => /^q=/i.test(p));
    return q === undefined || Number(q.slice(2)) > 0;
  });
}

/** A frame's pieces as the body, handed to the response one after another (never joined into one buffer). */
export function columnsResponse(c: Context, pieces: readonly Uint8Array[]): Response {
  let next = 0;
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (next < pieces.length) controller.enqueue(pieces[next++]!);
      else controller.close();
    },
  });
  return c.body(body, 200, { 'Content-Type': COLUMNS_MEDIA_TYPE });
}

/** Values of a JSON-shaped number list (null = a non-finite float) as floats. */
function floats(values: ArrayLike<number | null>, into: Float64Array | Float32Array, at: number): void {
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    into[at + i] = v === null ? NaN : v;
  }
}

type NumberColumn = new (n: number) => FrameColumn;

/**
 * The narrowest column type that holds every value of `parts` exactly (a null is NaN, which only a float
 * column holds; -0 only a float column keeps).
 */
export function narrowestType(parts: readonly ArrayLike<number | null>[]): NumberColumn {
  let ints = true;
  let f32 = true;
  let min = 0;
  let max = 0;
  for (const values of parts) {
    for (let i = 0; i < values.length; i++) {
      const v = values[i];
      if (v === null || v !== v) {
        ints = false;
        continue;
      }
      if (ints && (!Number.isInteger(v) || Object.is(v, -0))) ints = false;
      if (ints) {
        if (v < min) min = v;
        if (v > max) max = v;
      }
      if (f32 && Math.fround(v) !== v) f32 = false;
      if (!ints && !f32) return Float64Array;
    }
  }
  if (ints) {
    if (min >= 0 && max <= 0xff) return Uint8Array;
    if (min >= 0 && max <= 0xffff) return Uint16Array;
    if (min >= -(2 ** 31) && max < 2 ** 31) return Int32Array;
    if (min >= 0 && max < 2 ** 32) return Uint32Array;
  }
  return f32 ? Float32Array : Float64Array;
}

/** Concatenates one field of every series, with the offsets of each; `narrow` fields get `narrowestType`, the others f64. */
function concat<S>(series: readonly S[], fields: readonly (keyof S)[], narrow: readonly (keyof S)[] = []): [string, FrameColumn][] {
  const offsets = new Uint32Array(series.length + 1);
  series.forEach((s, i) => (offsets[i + 1] = offsets[i] + (s[fields[0]] as ArrayLike<number>).length));
  const out: [string, FrameColumn][] = [['offsets', offsets]];
  for (const field of fields) {
    const parts = series.map((s) => s[field] as ArrayLike<number | null>);
    const T = narrow.includes(field) ? narrowestType(parts) : Float64Array;
    const col = new T(offsets[series.length]);
    if (col instanceof Float64Array || col instanceof Float32Array) parts.forEach((p, i) => floats(p, col, offsets[i]));
    else parts.forEach((p, i) => col.set(p as ArrayLike<number>, offsets[i]));
    out.push([String(field), col]);
  }
  return out;
}

export function gpuFrame(a: GpuAnswer): Uint8Array[] {
  const lanes = Object.keys(a.lanes);
  return framePieces({ kind: 'gpu', lanes }, concat(lanes.map((k) => a.lanes[k]), ['ts', 'util', 'mem_mb', 'power_w'], ['util', 'mem_mb', 'power_w']));
}

export function engineSeriesFrame(a: EngineSeriesAnswer): Uint8Array[] {
  const header = { kind: 'engine_series', series: a.series.map((s) => ({ addr: s.addr, labels: s.labels })), ...(a.coverage ? { coverage: a.coverage } : {}) };
  return framePieces(header, concat(a.series, ['ts', 'value']));
}

export function phasesFrame(a: PhasesAnswer): Uint8Array[] {
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
  // the rows of phases never closed, listed in the header (few, if any)
  const unfinished = a.phases.flatMap((p, i) => (p.unfinished ? [i] : []));
  const open = a.phases.flatMap((p, i) => (p.open ? [i] : []));
  return framePieces({ kind: 'phases', strings: [...ids.keys()], ...(unfinished.length ? { unfinished } : {}), ...(open.length ? { open } : {}) }, { name, node, role, t0, t1, gpu, rank });
}
