// Each stream's line back into its record, strictly as miles' reader takes it (`cls(**data)`): every
// declared key present, no other key, values of the declared types. A failure names the field.
import * as z from 'zod';
import { PyFloat, parsePyJson, PyJsonError, type PyJson } from '../pythonJson.ts';
import type { StreamName } from './layout.ts';
import type { MetricValue, StreamRecord } from './records.ts';

const finite = z.number({ error: 'expected a finite number' });
/** A float field that may be NaN or ±Infinity (Python writes them as `NaN`/`Infinity`). */
const anyFloat = z.custom<number>((v) => typeof v === 'number', { message: 'expected a number' });
const int = z.int({ error: 'expected an integer' });
/**
 * A step: an integer, also beyond ±2^53 (a TensorBoard global step can be), where JSON's digits are read as
 * the nearest double, as the TensorBoard reader reads such a step (whoever reads a file says so once).
 */
const step = z.custom<number>((v) => typeof v === 'number' && Number.isInteger(v), { message: 'expected an integer' });
const str = z.string({ error: 'expected a string' });

const engineInfo = z.strictObject({
  addr: str,
  worker_type: str,
  engine_rank: int,
  gpus: z.array(z.tuple([str, int])),
  gpu_uuids: z.array(z.union([str, z.null()])),
});

const metricValue = z.union([anyFloat, str, z.boolean()], { message: 'expected a number, a string or a boolean' });

/** One zod schema per stream; key order is the order of `FIELDS`. */
export const RECORD_SCHEMAS = {
  metrics: z.strictObject({ ts: finite, step_key: z.union([str, z.null()]), step: z.union([step, z.null()], { message: 'expected an integer or null' }), metrics: z.record(str, metricValue) }),
  topology: z.strictObject({ ts: finite, engines: z.array(engineInfo) }),
  data_buffer: z.strictObject({ ts: finite, length: int }),
  // power_w may be fractional: nvidia-smi reports watts with two decimals
  gpu_util: z.strictObject({ ts: finite, node: str, gpu: int, util: int, mem_mb: int, power_w: finite }),
  engine_series: z.strictObject({ ts: finite, addr: str, metric: str, labels: z.record(str, str), value: anyFloat }),
  phases: z.strictObject({ name: str, t0: finite, t1: finite, node: str, gpus: z.array(int), rank: int, role: str }),
  trajectories: z.strictObject({ ts: finite, kind: str, sample_index: int, group_index: int, turn: int, weight_version: str, detail: str }),
  gpu_processes: z.strictObject({ ts: finite, node: str, gpu: int, pid: int, name: str, mem_mb: int }),
} satisfies { [S in StreamName]: z.ZodType<StreamRecord[S]> };

export interface DecodeProblem {
  /** Dotted path of the offending field (`""` for the line itself), e.g. `engines.0.gpus`. */
  field: string;
  message: string;
}

export type Decoded<S extends StreamName> =
  | { ok: true; record: StreamRecord[S]; /** metrics only: keys whose integral values were written as floats. */ floatKeys?: Set<string> }
  | { ok: false; problem: DecodeProblem };

/** Validates an already parsed value as a record of `stream`. */
export function decodeValue<S extends StreamName>(stream: S, value: unknown): Decoded<S> {
  const r = (RECORD_SCHEMAS[stream] as unknown as z.ZodType<StreamRecord[S]>).safeParse(value);
  if (r.success) return { ok: true, record: r.data };
  const issue = r.error.issues[0];
  const field = issue.path.map(String).join('.');
  let message = issue.message;
  if (issue.code === 'unrecognized_keys') message = `unexpected key ${issue.keys.map((k) => `'${k}'`).join(', ')}`;
  else if (issue.code === 'invalid_type' && valueAt(value, issue.path) === undefined) message = 'missing';
  return { ok: false, problem: { field, message } };
}

function valueAt(v: unknown, path: readonly PropertyKey[]): unknown {
  for (const k of path) {
    if (v === null || typeof v !== 'object' || !Object.hasOwn(v, k)) return undefined;
    v = (v as Record<PropertyKey, unknown>)[k];
  }
  return v;
}

/**
 * Parses and validates one line (without its newline). Metrics keep whether an integral value was
 * written as a float, so the line re-encodes to the same text.
 */
export function decodeLine<S extends StreamName>(stream: S, text: string): Decoded<S> {
  let value: PyJson;
  try {
    value = parsePyJson(text, stream === 'metrics');
  } catch (err) {
    const message = err instanceof PyJsonError ? err.message : (err as Error).message;
    return { ok: false, problem: { field: '', message: text.trim() === '' ? 'empty line' : `not JSON: ${message}` } };
  }
  if (stream !== 'metrics') return decodeValue(stream, value);
  const floatKeys = new Set<string>();
  const metrics = (value as { metrics?: unknown } | null)?.metrics;
  if (metrics !== null && typeof metrics === 'object' && !Array.isArray(metrics)) {
    const plain: Record<string, PyJson> = {};
    for (const [k, v] of Object.entries(metrics as Record<string, PyJson>)) {
      if (v instanceof PyFloat) floatKeys.add(k);
      plain[k] = v instanceof PyFloat ? v.value : v;
    }
    (value as { metrics: unknown }).metrics = plain;
  }
  const out = decodeValue(stream, plainFloats(value, 'metrics'));
  if (out.ok) out.floatKeys = floatKeys;
  return out;
}

/** Outside the metrics object a `PyFloat` carries nothing (every other field's type is declared). */
function plainFloats(v: PyJson, skip: string): PyJson {
  if (v instanceof PyFloat) return v.value;
  if (Array.isArray(v)) return v.map((x) => plainFloats(x, ''));
  if (v !== null && typeof v === 'object') {
    const out: Record<string, PyJson> = {};
    for (const [k, x] of Object.entries(v)) out[k] = k === skip ? x : plainFloats(x, '');
    return out;
  }
  return v;
}

export type { MetricValue };
