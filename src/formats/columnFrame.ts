// The columnar frame: one JSON header and typed-array columns in one little-endian buffer, so a reader
// (a browser, a cache load) gets its columns as views over the bytes it received, without copies.
//
//   offset 0   4 bytes   magic "RLC1"
//          4   u32 LE    header length H (bytes of UTF-8 JSON)
//          8   H bytes   header JSON: { ...caller's fields, "columns": [{ "name", "type", "length" }, ...] }
//              padding   zero bytes up to a multiple of 8
//              columns   each column's values (little-endian), in header order, each padded to 8 bytes
//
// Column types: f64, f32, i32, u32, i16, u16, i8, u8 (`length` counts values, not bytes). Floats keep
// NaN and ±Infinity exactly; JSON `null` has no float form, so series with gaps send NaN for null.
// Browser-safe (no Node modules): the app decodes the frames it fetches with this same module.

export type FrameColumn = Float64Array | Float32Array | Int32Array | Uint32Array | Int16Array | Uint16Array | Int8Array | Uint8Array;

const TYPES = {
  f64: Float64Array,
  f32: Float32Array,
  i32: Int32Array,
  u32: Uint32Array,
  i16: Int16Array,
  u16: Uint16Array,
  i8: Int8Array,
  u8: Uint8Array,
} as const;
export type FrameColumnType = keyof typeof TYPES;

export const FRAME_MAGIC = 'RLC1';
/** The media type of a frame served over HTTP. */
export const COLUMNS_MEDIA_TYPE = 'application/vnd.rlsight.columns';

export interface FrameColumnInfo {
  name: string;
  type: FrameColumnType;
  length: number;
}

function typeOf(col: FrameColumn): FrameColumnType {
  for (const [name, T] of Object.entries(TYPES)) if (col instanceof T) return name as FrameColumnType;
  throw new Error('unsupported column type');
}

const pad8 = (n: number): number => (n + 7) & ~7;

// Every platform Node and current browsers run on is little-endian; the frame says so rather than
// byte-swapping, and a big-endian reader is refused.
const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/**
 * The bytes of a frame as pieces, written one after another: the head (magic, length, header JSON and
 * its padding), then each column's bytes (a view over the column, not a copy) and its padding. A writer
 * hands them to the file as they are, so a large frame is never built in memory.
 */
export function framePieces(header: Record<string, unknown>, columns: Record<string, FrameColumn> | [string, FrameColumn][]): Uint8Array[] {
  if (!LITTLE_ENDIAN) throw new Error('columnar frames need a little-endian platform');
  const entries = Array.isArray(columns) ? columns : Object.entries(columns);
  const infos: FrameColumnInfo[] = entries.map(([name, col]) => ({ name, type: typeOf(col), length: col.length }));
  const json = new TextEncoder().encode(JSON.stringify({ ...header, columns: infos }));
  const head = new Uint8Array(pad8(8 + json.length));
  head.set(new TextEncoder().encode(FRAME_MAGIC), 0);
  new DataView(head.buffer).setUint32(4, json.length, true);
  head.set(json, 8);
  const pieces: Uint8Array[] = [head];
  const zeros = new Uint8Array(8);
  for (const [, col] of entries) {
    pieces.push(new Uint8Array(col.buffer, col.byteOffset, col.byteLength));
    const pad = pad8(col.byteLength) - col.byteLength;
    if (pad > 0) pieces.push(zeros.subarray(0, pad));
  }
  return pieces;
}

/** Encodes `header` (any JSON object) and named columns into one frame (the pieces of `framePieces`, joined). */
export function encodeFrame(header: Record<string, unknown>, columns: Record<string, FrameColumn> | [string, FrameColumn][]): Uint8Array {
  return joinPieces(framePieces(header, columns));
}

/** The pieces of a frame as one buffer. */
export function joinPieces(pieces: readonly Uint8Array[]): Uint8Array {
  let size = 0;
  for (const p of pieces) size += p.length;
  const out = new Uint8Array(size);
  let at = 0;
  for (const p of pieces) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** Where a frame's columns start, from its first bytes: what a reader needs to read column slices itself. */
export interface FrameLayout<H = Record<string, unknown>> {
  header: H & { columns: FrameColumnInfo[] };
  /** Byte offset of each column's first value within the frame, by name. */
  offsets: Record<string, number>;
}

/** The header length a frame's first 8 bytes announce (so a reader knows how much to read for `frameLayout`). */
export function frameHeaderLength(first8: Uint8Array): number {
  if (first8.length < 8 || String.fromCharCode(first8[0], first8[1], first8[2], first8[3]) !== FRAME_MAGIC) throw new Error('not a columnar frame (bad magic)');
  return new DataView(first8.buffer, first8.byteOffset, 8).getUint32(4, true);
}

/** The layout of a frame from its first `8 + header length` bytes. */
export function frameLayout<H = Record<string, unknown>>(head: Uint8Array): FrameLayout<H> {
  const headerLength = frameHeaderLength(head);
  if (8 + headerLength > head.length) throw new Error('columnar frame header runs past the end');
  const header = JSON.parse(new TextDecoder().decode(head.subarray(8, 8 + headerLength))) as H & { columns: FrameColumnInfo[] };
  if (!Array.isArray(header.columns)) throw new Error('columnar frame header has no column list');
  const offsets: Record<string, number> = {};
  let at = pad8(8 + headerLength);
  for (const info of header.columns) {
    const T = TYPES[info.type];
    if (T === undefined || !Number.isInteger(info.length) || info.length < 0) throw new Error(`columnar frame column ${JSON.stringify(info.name)} has a bad type or length`);
    offsets[info.name] = at;
    at += pad8(info.length * T.BYTES_PER_ELEMENT);
  }
  return { header, offsets };
}

/** The typed-array constructor of a column type. */
export function columnArrayType(type: FrameColumnType): (typeof TYPES)[FrameColumnType] {
  return TYPES[type];
}

export interface DecodedFrame<H = Record<string, unknown>> {
  header: H & { columns: FrameColumnInfo[] };
  /** Views over the frame's bytes (no copies) when the bytes sit 8-byte aligned, else aligned copies. */
  columns: Record<string, FrameColumn>;
}

/** Decodes a frame; throws a message naming what is wrong with a damaged one. */
export function decodeFrame<H = Record<string, unknown>>(bytes: Uint8Array): DecodedFrame<H> {
  if (!LITTLE_ENDIAN) throw new Error('columnar frames need a little-endian platform');
  const { header, offsets } = frameLayout<H>(bytes);
  const columns: Record<string, FrameColumn> = {};
  for (const info of header.columns) {
    const T = TYPES[info.type];
    const at = offsets[info.name];
    const byteLength = info.length * T.BYTES_PER_ELEMENT;
    if (at + byteLength > bytes.length) throw new Error(`columnar frame column ${JSON.stringify(info.name)} runs past the end`);
    const start = bytes.byteOffset + at;
    columns[info.name] = start % T.BYTES_PER_ELEMENT === 0 ? new T(bytes.buffer as ArrayBuffer, start, info.length) : new T(bytes.slice(at, at + byteLength).buffer);
  }
  return { header, columns };
}
