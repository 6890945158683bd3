// One slime sample as `Sample.to_dict()` dumped it, in plain values; the trace carrier kept as recorded.
import { PyFloat, Tensor } from '../../formats/torch/value.ts';

/**
 * A dumped value after decoding: Python dicts become objects (keys as Python's `str` prints them),
 * tuples and sets become arrays, integral floats stay PyFloat (so `2.0` can be written back as Python
 * writes it), tensors stay lazy and anything else the pickle named stays an inert `Opaque`.
 */
export type SlimeValue =
  | null
  | boolean
  | number
  | bigint
  | string
  | PyFloat
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
  /** The `to_dict()` fields in dump order. */
  fields: { [key: string]: SlimeValue };
  /** `rollout_top_p_token_offsets` read out of its tensor, when the dump has one. */
  topPOffsets: number[] | null;
}

/** The number a Python int or float holds; undefined for anything else (bools included). */
export function pyNumber(v: SlimeValue | undefined): number | undefined {
  if (typeof v === 'number') return v;
  if (v instanceof PyFloat) return v.value;
  if (typeof v === 'bigint') return Number(v);
  return undefined;
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
  return typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof PyFloat) && !(v instanceof Tensor) && !(v instanceof Opaque);
}

export function sampleTrace(s: SlimeSample): TraceCarrier | null {
  const t = s.fields.trace;
  return isRecord(t) ? t : null;
}

export function traceEvents(t: TraceCarrier | null): TraceEventRecord[] {
  const ev = t?.events;
  return Array.isArray(ev) ? (ev.filter((e) => isRecord(e)) as TraceEventRecord[]) : [];
}

/** `sample.index` (null when absent or None). */
export function sampleIndex(s: SlimeSample): number | null {
  return pyNumber(s.fields.index) ?? null;
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
