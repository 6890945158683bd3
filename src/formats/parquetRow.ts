// One row of one column chunk, decoding only that row's levels and values: data pages before it are passed
// by their row counts (a v2 header's, else the page's repetition levels), and within its page the values
// before it are skipped by count (plain values by offset, dictionary indices run by run). Values equal
// hyparquet's decode of the whole chunk for that row; a column of a shape or encoding not read here answers
// `UNSUPPORTED` (the caller decodes the row group instead).
import { snappyUncompress } from 'hyparquet';
import type { ColumnMetaData, Compressors, SchemaTree } from 'hyparquet';
import { FALSE, I32, I64, STRUCT, TRUE, Walker } from './parquetFooter.ts';

/** A column this reader leaves to the whole-row-group decode. */
export const UNSUPPORTED: unique symbol = Symbol('unsupported');

// Page types and encodings (parquet.thrift).
const DATA_PAGE = 0;
const DICTIONARY_PAGE = 2;
const DATA_PAGE_V2 = 3;
const PLAIN = 0;
const PLAIN_DICTIONARY = 2;
const RLE = 3;
const RLE_DICTIONARY = 8;

/** Byte width of the plain value types read here. */
const WIDTH: Record<string, number> = { INT32: 4, FLOAT: 4, INT64: 8, DOUBLE: 8 };

/** A column's shape: a primitive, or the standard three-level list of primitives. */
export interface RowShape {
  type: 'INT32' | 'INT64' | 'FLOAT' | 'DOUBLE';
  list: boolean;
  /** Definition level of a present value; of a present (possibly empty) list: `listDef`. */
  maxDef: number;
  listDef: number;
  /** Whether an element (or the flat value) may be null. */
  nullable: boolean;
}

/** Signed integer annotations hyparquet leaves as plain numbers. */
const PLAIN_INTEGER = new Set(['INT_8', 'INT_16', 'INT_32', 'INT_64']);

function leafType(node: SchemaTree): RowShape['type'] | null {
  const e = node.element;
  if (node.children.length > 0 || e.type === undefined || !(e.type in WIDTH)) return null;
  const lt = e.logical_type;
  if (lt !== undefined && !(lt.type === 'INTEGER' && lt.isSigned)) return null;
  if (e.converted_type !== undefined && !PLAIN_INTEGER.has(e.converted_type)) return null;
  return e.type as RowShape['type'];
}

/** The shape of top-level column `node`, or null when it is not one read here. */
export function rowShape(node: SchemaTree): RowShape | null {
  const e = node.element;
  if (e.repetition_type === 'REPEATED') return null;
  const outer = e.repetition_type === 'OPTIONAL' ? 1 : 0;
  const flat = leafType(node);
  if (flat) return { type: flat, list: false, maxDef: outer, listDef: 0, nullable: outer === 1 };
  const isList = e.converted_type === 'LIST' || e.logical_type?.type === 'LIST';
  if (!isList || node.children.length !== 1) return null;
  const rep = node.children[0];
  if (rep.element.repetition_type !== 'REPEATED' || rep.children.length !== 1) return null;
  const leaf = rep.children[0];
  const type = leafType(leaf);
  if (!type || leaf.element.repetition_type === 'REPEATED') return null;
  const inner = leaf.element.repetition_type === 'OPTIONAL' ? 1 : 0;
  return { type, list: true, maxDef: outer + 1 + inner, listDef: outer, nullable: inner === 1 };
}

/** Where the last `runHeader` read ended. */
let afterHeader = 0;

/** The ULEB128 header of a hybrid run at `at` (exact past 32 bits), `afterHeader` set past it. */
function runHeader(b: Uint8Array, at: number, end: number): number {
  let h = 0;
  let shift = 0;
  let x: number;
  do {
    x = b[at++];
    h += (x & 0x7f) * 2 ** shift;
    shift += 7;
  } while (x & 0x80 && at < end);
  afterHeader = at;
  return h;
}

/**
 * Values `[skip, skip + out.length)` of the RLE / bit-packed hybrid encoding in `[at, end)`, `width` bits each
 * (at most 32), into `out` (zeros, as made); the runs before them are passed whole. `what` names the values in
 * errors. Levels are read from 0, dictionary indices from the first value a row needs.
 */
function hybrid(b: Uint8Array, at: number, end: number, width: number, skip: number, out: Uint8Array | Uint32Array, what: string): void {
  if (width === 0) return;
  if (width > 32) throw new Error(`parquet ${what} width ${width}`);
  const want = skip + out.length;
  let pos = 0;
  while (pos < want) {
    if (at >= end) throw new Error(`parquet ${what} end early`);
    const h = runHeader(b, at, end);
    at = afterHeader;
    if (h % 2 === 1) {
      const groups = Math.floor(h / 2);
      const n = groups * 8;
      if (pos + n > skip) {
        const mask = 2 ** width - 1;
        for (let i = Math.max(0, skip - pos); i < n && pos + i < want; i++) {
          const bit = i * width;
          const k = at + (bit >>> 3);
          if (width <= 24) {
            // four bytes hold any value of up to 24 bits at any bit offset
            out[pos + i - skip] = ((b[k] | (b[k + 1] << 8) | (b[k + 2] << 16) | (b[k + 3] << 24)) >>> (bit & 7)) & mask;
            continue;
          }
          let v = 0;
          for (let j = Math.ceil(((bit % 8) + width) / 8) - 1; j >= 0; j--) v = v * 256 + (b[k + j] ?? 0);
          out[pos + i - skip] = Math.floor(v / 2 ** (bit % 8)) % 2 ** width;
        }
      }
      pos += n;
      at += groups * width;
    } else {
      const n = Math.floor(h / 2);
      let v = 0;
      for (let j = (width + 7) >> 3; j > 0; j--) v = v * 256 + b[at + j - 1];
      at += (width + 7) >> 3;
      if (pos + n > skip) out.fill(v, Math.max(pos, skip) - skip, Math.min(pos + n, want) - skip);
      pos += n;
    }
  }
}

/** Levels `[0, count)` of a hybrid run over `[at, end)` (`width` ≤ 8 bits). */
function levels(b: Uint8Array, at: number, end: number, width: number, count: number): Uint8Array {
  const out = new Uint8Array(count);
  hybrid(b, at, end, width, 0, out, 'levels');
  return out;
}

/** Plain values `[from, from + count)` of `type` in `bytes` from byte `base`, as a typed array (little-endian, as parquet writes them). */
function plainValues(bytes: Uint8Array, base: number, from: number, count: number, type: RowShape['type']): Int32Array | Float32Array | BigInt64Array | Float64Array {
  const width = WIDTH[type];
  const start = base + from * width;
  if (start + count * width > bytes.length) throw new Error('parquet page values end early');
  // a view where the values are aligned, else a copy of just them
  const aligned = (bytes.byteOffset + start) % width === 0 ? bytes : bytes.slice(start, start + count * width);
  const at = aligned === bytes ? bytes.byteOffset + start : 0;
  switch (type) {
    case 'INT32':
      return new Int32Array(aligned.buffer, at, count);
    case 'FLOAT':
      return new Float32Array(aligned.buffer, at, count);
    case 'INT64':
      return new BigInt64Array(aligned.buffer, at, count);
    default:
      return new Float64Array(aligned.buffer, at, count);
  }
}

interface PageHeader {
  type: number;
  uncompressed: number;
  compressed: number;
  numValues: number;
  encoding: number;
  /** v1: the levels' encodings. */
  defEncoding: number;
  repEncoding: number;
  /** v2 only. */
  numNulls: number;
  numRows: number;
  defBytes: number;
  repBytes: number;
  isCompressed: boolean;
}

/** A page header at `w.at` (the walker left after it). */
function pageHeader(w: Walker): PageHeader {
  const h: PageHeader = { type: -1, uncompressed: -1, compressed: -1, numValues: -1, encoding: -1, defEncoding: RLE, repEncoding: RLE, numNulls: 0, numRows: -1, defBytes: 0, repBytes: 0, isCompressed: true };
  w.id = 0;
  for (let t = w.field(); t !== 0; t = w.field()) {
    const id = w.id;
    if (t === I32 && id <= 3) {
      const v = w.zigzag();
      if (id === 1) h.type = v;
      else if (id === 2) h.uncompressed = v;
      else h.compressed = v;
    } else if (t === STRUCT && (id === 5 || id === 7 || id === 8)) {
      w.id = 0;
      for (let s = w.field(); s !== 0; s = w.field()) {
        const sid = w.id;
        if (s === I32) {
          const v = w.zigzag();
          if (sid === 1) h.numValues = v;
          else if (id === 5 && sid === 2) h.encoding = v;
          else if (id === 5 && sid === 3) h.defEncoding = v;
          else if (id === 5 && sid === 4) h.repEncoding = v;
          else if (id === 7 && sid === 2) h.encoding = v;
          else if (id === 8 && sid === 2) h.numNulls = v;
          else if (id === 8 && sid === 3) h.numRows = v;
          else if (id === 8 && sid === 4) h.encoding = v;
          else if (id === 8 && sid === 5) h.defBytes = v;
          else if (id === 8 && sid === 6) h.repBytes = v;
        } else if (id === 8 && sid === 7 && (s === TRUE || s === FALSE)) {
          h.isCompressed = s === TRUE;
        } else {
          w.skip(s);
        }
        w.id = sid;
      }
      w.id = id;
    } else {
      w.skip(t);
    }
  }
  if (h.compressed < 0 || h.uncompressed < 0 || h.numValues < 0) throw new Error('parquet page header without sizes or value count');
  return h;
}

function decompress(bytes: Uint8Array, size: number, codec: string, compressors: Compressors | undefined): Uint8Array {
  let page: Uint8Array;
  const custom = compressors?.[codec as keyof Compressors];
  if (codec === 'UNCOMPRESSED') page = bytes;
  else if (custom) page = custom(bytes, size);
  else if (codec === 'SNAPPY') {
    page = new Uint8Array(size);
    snappyUncompress(bytes, page);
  } else throw new Error(`parquet unsupported compression codec: ${codec}`);
  if (page.length !== size) throw new Error(`parquet decompressed page length ${page.length} does not match header ${size}`);
  return page;
}

/** A data page made ready for reading: its levels and where its values start. */
interface OpenPage {
  rep: Uint8Array | null;
  def: Uint8Array | null;
  values: Uint8Array;
  valuesAt: number;
  encoding: number;
}

function openPage(page: Uint8Array, h: PageHeader, shape: RowShape, codec: string, compressors: Compressors | undefined): OpenPage | typeof UNSUPPORTED {
  const repWidth = shape.list ? 1 : 0;
  const defWidth = 32 - Math.clz32(shape.maxDef);
  if (h.type === DATA_PAGE_V2) {
    const levelBytes = h.repBytes + h.defBytes;
    if (levelBytes > page.length) throw new Error('parquet page levels exceed the page');
    const rep = repWidth ? levels(page, 0, h.repBytes, repWidth, h.numValues) : null;
    const def = defWidth ? levels(page, h.repBytes, levelBytes, defWidth, h.numValues) : null;
    const rest = page.subarray(levelBytes);
    const values = h.isCompressed ? decompress(rest, h.uncompressed - levelBytes, codec, compressors) : rest;
    return { rep, def, values, valuesAt: 0, encoding: h.encoding };
  }
  if ((repWidth && h.repEncoding !== RLE) || (defWidth && h.defEncoding !== RLE)) return UNSUPPORTED;
  const data = decompress(page, h.uncompressed, codec, compressors);
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  let at = 0;
  const prefixed = (width: number): Uint8Array | null => {
    if (!width) return null;
    if (at + 4 > data.length) throw new Error('parquet page levels end early');
    const n = view.getUint32(at, true);
    const out = levels(data, at + 4, Math.min(data.length, at + 4 + n), width, h.numValues);
    at += 4 + n;
    return out;
  };
  const rep = prefixed(repWidth);
  const def = prefixed(defWidth);
  return { rep, def, values: data, valuesAt: at, encoding: h.encoding };
}

/** Rows that begin in a page: the zeros of its repetition levels (every level, for a flat column). */
function rowsIn(p: OpenPage, numValues: number): number {
  if (!p.rep) return numValues;
  let n = 0;
  for (let i = p.rep.indexOf(0); i >= 0; i = p.rep.indexOf(0, i + 1)) n++;
  return n;
}

/** The values of levels `[a, b)` of a page (`null` where a level has none), in order. */
function pageValues(p: OpenPage, a: number, b: number, shape: RowShape, dictionary: ArrayLike<number | bigint> | null): (number | bigint | null)[] | typeof UNSUPPORTED {
  const def = p.def;
  let skip = a;
  let take = b - a;
  if (def) {
    skip = 0;
    take = 0;
    for (let i = 0; i < a; i++) if (def[i] === shape.maxDef) skip++;
    for (let i = a; i < b; i++) if (def[i] === shape.maxDef) take++;
  }
  let values: ArrayLike<number | bigint>;
  if (p.encoding === PLAIN) {
    values = plainValues(p.values, p.valuesAt, skip, take, shape.type);
  } else if (p.encoding === RLE_DICTIONARY || p.encoding === PLAIN_DICTIONARY) {
    if (!dictionary) throw new Error('parquet dictionary-encoded page without a dictionary');
    const keys = new Uint32Array(take);
    if (take > 0) hybrid(p.values, p.valuesAt + 1, p.values.length, p.values[p.valuesAt], skip, keys, 'dictionary indices');
    const looked: (number | bigint)[] = new Array(keys.length);
    for (let i = 0; i < keys.length; i++) {
      const k = keys[i];
      if (k >= dictionary.length) throw new Error(`parquet dictionary index ${k} out of ${dictionary.length}`);
      looked[i] = dictionary[k];
    }
    values = looked;
  } else {
    return UNSUPPORTED;
  }
  const out: (number | bigint | null)[] = new Array(b - a);
  if (!def) {
    for (let i = 0; i < take; i++) out[i] = values[i];
    return out;
  }
  for (let i = a, v = 0; i < b; i++) out[i - a] = def[i] === shape.maxDef ? values[v++] : null;
  return out;
}

/** A data page of a column chunk, opened on demand, with the dictionary read before it. */
interface DataPage {
  h: PageHeader;
  open(): OpenPage | typeof UNSUPPORTED;
  dictionary: ArrayLike<number | bigint> | null;
  /** No page follows it in the chunk. */
  last: boolean;
}

/** The data pages of a column chunk in order (its dictionary page read on the way); `UNSUPPORTED` at a page not read here. */
function* dataPages(chunk: Uint8Array, meta: ColumnMetaData, shape: RowShape, compressors: Compressors | undefined): Generator<DataPage | typeof UNSUPPORTED> {
  const w = new Walker(chunk);
  const width = WIDTH[shape.type];
  let dictionary: ArrayLike<number | bigint> | null = null;
  while (w.at < chunk.length) {
    const h = pageHeader(w);
    const start = w.at;
    const end = start + h.compressed;
    if (end > chunk.length) throw new Error('parquet page exceeds its column chunk');
    w.at = end;
    if (h.type === DICTIONARY_PAGE) {
      if (h.encoding !== PLAIN && h.encoding !== PLAIN_DICTIONARY) return yield UNSUPPORTED;
      const d = decompress(chunk.subarray(start, end), h.uncompressed, meta.codec, compressors);
      if (d.length < h.numValues * WIDTH[shape.type]) throw new Error('parquet dictionary page shorter than its values');
      dictionary = plainValues(d, 0, 0, h.numValues, shape.type);
      continue;
    }
    if (h.type !== DATA_PAGE && h.type !== DATA_PAGE_V2) return yield UNSUPPORTED;
    const open = () => openPage(chunk.subarray(start, end), h, shape, meta.codec, compressors);
    yield { h, open, dictionary, last: w.at >= chunk.length };
  }
}

/** Every value of a flat column chunk, null where absent (for a search over a column). */
export function chunkColumn(chunk: Uint8Array, meta: ColumnMetaData, shape: RowShape, compressors: Compressors | undefined): (number | bigint | null)[] | typeof UNSUPPORTED {
  if (shape.list) return UNSUPPORTED;
  const out: (number | bigint | null)[] = [];
  for (const page of dataPages(chunk, meta, shape, compressors)) {
    const p = page === UNSUPPORTED ? page : page.open();
    if (page === UNSUPPORTED || p === UNSUPPORTED) return UNSUPPORTED;
    const values = pageValues(p, 0, page.h.numValues, shape, page.dictionary);
    if (values === UNSUPPORTED) return UNSUPPORTED;
    for (const v of values) out.push(v);
  }
  return out;
}

/**
 * Row `row` (counted from the chunk's first) of a column chunk's bytes `chunk` (from its first page), as
 * hyparquet assembles it: a value (null when absent), or for a list an array (null elements as null),
 * `undefined` for a null list.
 */
export function chunkRow(chunk: Uint8Array, meta: ColumnMetaData, shape: RowShape, row: number, compressors: Compressors | undefined): unknown {
  let before = 0;
  for (const page of dataPages(chunk, meta, shape, compressors)) {
    if (page === UNSUPPORTED) return UNSUPPORTED;
    const { h } = page;
    // A v2 page names its rows (a flat v1 page's values are its rows): one wholly before the row is passed unread.
    const rows = h.type === DATA_PAGE_V2 && h.numRows >= 0 ? h.numRows : shape.list ? -1 : h.numValues;
    if (rows >= 0 && before + rows <= row) {
      before += rows;
      continue;
    }
    const p = page.open();
    if (p === UNSUPPORTED) return UNSUPPORTED;
    const inPage = rowsIn(p, h.numValues);
    if (before + inPage <= row) {
      before += inPage;
      continue;
    }
    // The row's levels [a, b): from the (row - before)th level of repetition 0 to the next.
    let a = row - before;
    let b = a + 1;
    if (p.rep) {
      a = p.rep.indexOf(0);
      for (let k = 0; k < row - before; k++) a = p.rep.indexOf(0, a + 1);
      const next = p.rep.indexOf(0, a + 1);
      b = next < 0 ? h.numValues : next;
      // A v2 page ends on a row's end; a v1 page's last row may go on in the next page: left to the whole decode.
      if (next < 0 && h.type === DATA_PAGE && !page.last) return UNSUPPORTED;
    }
    const values = pageValues(p, a, b, shape, page.dictionary);
    if (values === UNSUPPORTED || !shape.list) return values === UNSUPPORTED ? values : values[0] ?? null;
    // A single level below an element's definition: an empty list, or below that a null one.
    const first = p.def ? p.def[a] : shape.maxDef;
    if (b - a === 1 && first <= shape.listDef) return first < shape.listDef ? undefined : [];
    return values;
  }
  throw new Error(`parquet row ${row} lies past the column chunk's pages`);
}
