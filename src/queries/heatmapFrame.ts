// The heatmap wire frame: `[u32 LE header_len][header JSON][u8 matrix]`, header bytes as Python's json.dumps writes them.
import { pyDumps, PyFloat, type PyJson } from '../formats/pythonJson.ts';

/** Header keys whose numbers are Python floats (printed `1000000.0`); every other number is an int. */
const FLOAT_KEYS = new Set(['t0', 't1', 'max']);

/** A header value as Python holds it: numbers under FLOAT_KEYS are floats, non-finite numbers are served as null. */
function headerValue(v: unknown, floatContext: boolean): PyJson {
  if (v === null || v === undefined) return null;
  if (typeof v === 'number') return !Number.isFinite(v) ? null : floatContext ? new PyFloat(v) : v;
  if (typeof v === 'boolean' || typeof v === 'string') return v;
  if (Array.isArray(v)) return v.map((x) => headerValue(x, floatContext));
  const out: Record<string, PyJson> = Object.create(null);
  for (const [k, x] of Object.entries(v as Record<string, unknown>)) if (x !== undefined) out[k] = headerValue(x, FLOAT_KEYS.has(k));
  return out;
}

/** `json.dumps(value)` with default separators (`", "`, `": "`) and `ensure_ascii`. */
export function pyJsonDumps(value: unknown, floatContext = false): string {
  return pyDumps(headerValue(value, floatContext));
}

/** The framed bytes of a heatmap: header length (u32 LE), header JSON, then the row-major u8 matrix. */
export function encodeHeatmapFrame(header: object, matrix: Uint8Array): Uint8Array {
  const head = Buffer.from(pyJsonDumps(header), 'utf8');
  const out = new Uint8Array(4 + head.length + matrix.length);
  new DataView(out.buffer).setUint32(0, head.length, true);
  out.set(head, 4);
  out.set(matrix, 4 + head.length);
  return out;
}

/** Splits a frame back into its header object and matrix (for clients and tests). */
export function decodeHeatmapFrame(frame: Uint8Array): { header: any; matrix: Uint8Array } {
  if (frame.length < 4) throw new Error(`heatmap frame of ${frame.length} bytes has no header length`);
  const len = new DataView(frame.buffer, frame.byteOffset, frame.byteLength).getUint32(0, true);
  if (4 + len > frame.length) throw new Error(`heatmap header length ${len} exceeds the ${frame.length}-byte frame`);
  const header = JSON.parse(Buffer.from(frame.subarray(4, 4 + len)).toString('utf8'));
  return { header, matrix: frame.subarray(4 + len) };
}
