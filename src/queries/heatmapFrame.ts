// The heatmap wire frame: `[u32 LE header_len][header JSON][u8 matrix]`, header bytes as Python's json.dumps writes them.
import { pyRepr } from '../formats/pythonFormat.ts';

/** Header keys whose numbers are Python floats (printed `1000000.0`); every other number is an int. */
const FLOAT_KEYS = new Set(['t0', 't1', 'max']);

function pyString(s: string): string {
  let out = '"';
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 0x22) out += '\\"';
    else if (c === 0x5c) out += '\\\\';
    else if (c === 0x0a) out += '\\n';
    else if (c === 0x0d) out += '\\r';
    else if (c === 0x09) out += '\\t';
    else if (c === 0x08) out += '\\b';
    else if (c === 0x0c) out += '\\f';
    else if (c < 0x20 || c > 0x7e) out += `\\u${c.toString(16).padStart(4, '0')}`; // ensure_ascii
    else out += s[i];
  }
  return `${out}"`;
}

function pyNumber(x: number, asFloat: boolean): string {
  if (!Number.isFinite(x)) return 'null'; // non-finite header floats are served as null
  if (asFloat || !Number.isInteger(x)) return pyRepr(x);
  return String(x);
}

/** `json.dumps(value)` with default separators (`", "`, `": "`) and `ensure_ascii`. */
export function pyJsonDumps(value: unknown, floatContext = false): string {
  if (value === null || value === undefined) return 'null';
  if (typeof value === 'number') return pyNumber(value, floatContext);
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  if (typeof value === 'string') return pyString(value);
  if (Array.isArray(value)) return `[${value.map((v) => pyJsonDumps(v, floatContext)).join(', ')}]`;
  const parts: string[] = [];
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
    if (v === undefined) continue;
    parts.push(`${pyString(k)}: ${pyJsonDumps(v, FLOAT_KEYS.has(k))}`);
  }
  return `{${parts.join(', ')}}`;
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
