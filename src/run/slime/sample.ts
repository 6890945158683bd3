// One slime sample as `Sample.to_dict()` dumped it, in plain values; the trace carrier kept as recorded.
import { NumpyScalar, PyFloat, Tensor } from '../../formats/torch/value.ts';

/**
 * A dumped value after decoding: Python dicts become objects (keys as Python's `str` prints them),
 * tuples and sets become arrays, integral floats stay PyFloat (so `2.0` can be written back as Python
 * writes it), numpy scalars keep their dtype (Python's type rules tell them apart), tensors stay lazy and anything else the pickle named stays an inert `Opaque`.
 */
export type SlimeValue =
  | null
  | boolean
  | number
  | bigint
  | string
  | PyFloat
  | NumpyScalar
  | Tensor
  | Opaque
  | SlimeValue[]
  | { [key: string]: SlimeValue };

/** A value Python would print with `str(x)` (an object of a class we never construct, bytes). */
export class Opaque {
  constructor(readonly text: string) {}
}

/** One event of a trace carrier (`span_start` / `span_end` / `event`), exactly as recorded. */
export type TraceEventRecord = { [key: string]: SlimeValue };

/** The trace carrier slime binds to a sample (`version, trace_id, events, sample_id, group_id, attempt`). */
export interface TraceCarrier {
  [key: string]: SlimeValue;
}

export interface SlimeSample {
  /** Position in the dump's `samples` list (slime's viewer calls it row_id). */
  row: number;
  /**
   * The number the sample is addressed by (summary rows, sample routes, trace rows): its `Sample.index` in a
   * training dump; its position in an eval dump, whose indices restart at 0 in every dataset (null: no index).
   */
  key: number | null;
  /** The `to_dict()` fields in dump order. */
  fields: { [key: string]: SlimeValue };
  /** `rollout_top_p_token_offsets` read out of its tensor, when the dump has one. */
  topPOffsets: number[] | null;
}

/**
 * The number a Python int or float holds, or a numeric numpy scalar (what `float(x)` reads); undefined
 * for anything else (bools, numpy bools and strings included).
 */
export function pyNumber(v: SlimeValue | undefined): number | undefined {
  if (typeof v === 'number') return v;
  if (v instanceof PyFloat) return v.value;
  if (typeof v === 'bigint') return Number(v);
  if (v instanceof NumpyScalar && typeof v.value !== 'boolean') return Number(v.value);
  return undefined;
}

/**
 * The number of a value for which Python's `isinstance(v, (int, float)) and not isinstance(v, bool)`
 * holds: a Python int or float, or numpy float64 (a float subclass); not float32, int64, numpy bools,
 * strings. slime's `perf/` filter reads values this way.
 */
export function pyIntOrFloat(v: SlimeValue | undefined): number | undefined {
  if (v instanceof NumpyScalar) return v.dtype === 'float64' ? (v.value as number) : undefined;
  return pyNumber(v);
}

/** Python's `str(x)` of a numpy scalar: float32/float16 in their own shortest digits (`88.5`, not `88.5000…`). */
export function numpyStr(v: NumpyScalar): string {
  if (typeof v.value === 'boolean') return v.value ? 'True' : 'False';
  if (typeof v.value === 'bigint' || v.dtype.startsWith('int') || v.dtype.startsWith('uint')) return String(v.value);
  const x = v.value;
  if (Number.isNaN(x)) return 'nan';
  if (!Number.isFinite(x)) return x > 0 ? 'inf' : '-inf';
  const roundTrips = (s: string): boolean => (v.dtype === 'float32' ? Math.fround(Number(s)) === x : v.dtype === 'float16' ? halfRound(Number(s)) === x : Number(s) === x);
  let digits = String(x);
  for (let p = 1; p <= 17; p++) {
    const s = x.toPrecision(p);
    if (roundTrips(s)) {
      digits = s;
      break;
    }
  }
  return pyFloatText(Number(digits), digits);
}

/** Python's repr layout for a float with the given significant digits: positional in [1e-4, 1e16), else `1e+20`. */
function pyFloatText(x: number, digits: string): string {
  const [mant, expPart] = Number(digits).toExponential().split('e');
  const sig = mant!.replace('.', '').replace('-', '');
  const exp = Number(expPart);
  const neg = x < 0 ? '-' : '';
  if (x === 0) return Object.is(x, -0) ? '-0.0' : '0.0';
  if (Math.abs(x) >= 1e-4 && Math.abs(x) < 1e16) {
    if (exp >= sig.length - 1) return `${neg}${sig}${'0'.repeat(exp - sig.length + 1)}.0`;
    if (exp >= 0) return `${neg}${sig.slice(0, exp + 1)}.${sig.slice(exp + 1)}`;
    return `${neg}0.${'0'.repeat(-exp - 1)}${sig}`;
  }
  const m = sig.length > 1 ? `${sig[0]}.${sig.slice(1)}` : sig;
  return `${neg}${m}e${exp < 0 ? '-' : '+'}${String(Math.abs(exp)).padStart(2, '0')}`;
}

/** The float16 nearest to `x` (round to nearest even), as a number. */
function halfRound(x: number): number {
  if (!Number.isFinite(x) || x === 0) return x;
  const e = Math.max(Math.floor(Math.log2(Math.abs(x))), -14);
  const ulp = 2 ** (e - 10);
  const q = x / ulp;
  const r = Math.round(q);
  const even = Math.abs(q - Math.trunc(q)) === 0.5 ? 2 * Math.round(q / 2) : r;
  const h = even * ulp;
  return Math.abs(h) > 65504 ? Math.sign(h) * Infinity : h;
}

/** A Python `float(v)` conversion as the trace tools do it (numbers, bools, numeric strings). */
export function pyFloatOf(v: SlimeValue | undefined): number | undefined {
  const n = pyNumber(v);
  if (n !== undefined) return n;
  if (typeof v === 'boolean') return v ? 1 : 0;
  if (typeof v === 'string') {
    const t = v.trim().toLowerCase();
    if (t === 'nan' || t === '+nan' || t === '-nan') return NaN;
    if (t === 'inf' || t === '+inf' || t === 'infinity' || t === '+infinity') return Infinity;
    if (t === '-inf' || t === '-infinity') return -Infinity;
    if (t !== '' && /^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/.test(t.replace(/_/g, ''))) return Number(t.replace(/_/g, ''));
  }
  return undefined;
}

export function isRecord(v: SlimeValue | undefined): v is { [key: string]: SlimeValue } {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof PyFloat) && !(v instanceof NumpyScalar) && !(v instanceof Tensor) && !(v instanceof Opaque);
}

export function sampleTrace(s: SlimeSample): TraceCarrier | null {
  const t = s.fields.trace;
  return isRecord(t) ? t : null;
}

export function traceEvents(t: TraceCarrier | null): TraceEventRecord[] {
  const ev = t?.events;
  return Array.isArray(ev) ? (ev.filter((e) => isRecord(e)) as TraceEventRecord[]) : [];
}

/** The number the sample is addressed by (see `SlimeSample.key`). */
export function sampleIndex(s: SlimeSample): number | null {
  return s.key;
}

/** A sample's key: its position in an eval dump (indices restart per dataset there), else its `index` (null when absent or None). */
export function sampleKeyOf(fields: SlimeSample['fields'], row: number, evaluation: boolean): number | null {
  return evaluation ? row : (pyNumber(fields.index) ?? null);
}

export function responseLength(s: SlimeSample): number {
  return pyNumber(s.fields.response_length) ?? 0;
}

/** `Sample.effective_response_length`: Σloss_mask when there is a loss mask, else response_length. */
export function effectiveResponseLength(s: SlimeSample): number {
  const m = s.fields.loss_mask;
  if (Array.isArray(m)) return m.reduce<number>((a, x) => a + (pyNumber(x) ?? (x === true ? 1 : 0)), 0);
  return responseLength(s);
}

/** The scalar reward (`reward[key]` with a reward key), or undefined when it is not a number. */
export function rewardValue(s: SlimeSample, rewardKey?: string | null): number | undefined {
  const r = s.fields.reward;
  if (rewardKey && isRecord(r)) return pyNumber(r[rewardKey]);
  return pyNumber(r);
}

export function sampleStatus(s: SlimeSample): string | null {
  const v = s.fields.status;
  return typeof v === 'string' ? v : null;
}
