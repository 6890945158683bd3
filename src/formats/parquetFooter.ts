// Where a parquet footer's row groups lie, found by walking its thrift bytes (compact protocol) without
// decoding them: a reader that needs one row group has hyparquet decode a footer holding only that one
// (`footerWith`), instead of every row group of a file written with many small ones.

/** What a walk of the footer learns of one row group. */
export interface RowGroupLayout {
  /** Its bytes in the footer: `[start, end)`. */
  start: number;
  end: number;
  numRows: number;
  /** Per column chunk (in order): the codec number, and the raw min/max statistics of a single-name column. */
  columns: { codec: number | undefined; name: string | null; min: Uint8Array | undefined; max: Uint8Array | undefined }[];
}

export interface FooterLayout {
  /** The FileMetaData's thrift bytes. */
  bytes: Uint8Array;
  /** Where the row group list's header begins and where the list ends (absent: no row_groups field). */
  listAt: number;
  listEnd: number;
  groups: RowGroupLayout[];
}

// Compact protocol types.
export const TRUE = 1;
export const FALSE = 2;
const BYTE = 3;
const I16 = 4;
export const I32 = 5;
export const I64 = 6;
const DOUBLE = 7;
const BINARY = 8;
const LIST = 9;
export const STRUCT = 12;

const utf8 = new TextDecoder();

/** A walk over compact-protocol thrift bytes (a footer, a page header), skipping what it does not read. */
export class Walker {
  at = 0;
  /** The id of the field last read by `field()` in the struct being walked. */
  id = 0;
  /** Per column position, its last name and the bytes it was decoded from (row groups repeat them). */
  private readonly names: { bytes: Uint8Array; name: string }[] = [];
  constructor(readonly b: Uint8Array) {}

  byte(): number {
    if (this.at >= this.b.length) throw new Error('thrift data ends early');
    return this.b[this.at++];
  }

  /** A varint read as hyparquet reads it (32-bit arithmetic), so that the same bytes mean the same lengths. */
  varint(): number {
    let v = 0;
    let shift = 0;
    for (;;) {
      const x = this.byte();
      v |= (x & 0x7f) << shift;
      if (!(x & 0x80)) return v;
      shift += 7;
    }
  }

  zigzag(): number {
    const v = this.varint();
    return (v >>> 1) ^ -(v & 1);
  }

  /** A 64-bit zigzag varint, as a number. */
  zigzag64(): number {
    let v = 0n;
    let shift = 0n;
    for (;;) {
      const x = this.byte();
      v |= BigInt(x & 0x7f) << shift;
      if (!(x & 0x80)) return Number((v >> 1n) ^ -(v & 1n));
      shift += 7n;
    }
  }

  /** Skips a binary value, returning where it starts (its length is `at` minus that). */
  binary(): number {
    const n = this.varint();
    if (n < 0 || this.at + n > this.b.length) throw new Error(`thrift binary length ${n} exceeds remaining ${this.b.length - this.at} bytes`);
    const start = this.at;
    this.at += n;
    return start;
  }

  /** A list header: its element type (its size is left in `size`). */
  size = 0;
  list(): number {
    const x = this.byte();
    const size = x >> 4 === 15 ? this.varint() : x >> 4;
    if (size < 0) throw new Error(`thrift list size ${size}`);
    this.size = size;
    return x & 0x0f;
  }

  /** The next field header of the struct being walked: its type (0 at the struct's end), its id in `id`. */
  field(): number {
    const x = this.byte();
    const type = x & 0x0f;
    if (type === 0) return 0;
    const delta = x >> 4;
    this.id = delta ? this.id + delta : this.zigzag();
    return type;
  }

  skip(type: number): void {
    switch (type) {
      case TRUE:
      case FALSE:
        break;
      case BYTE:
        this.at++;
        break;
      case I16:
      case I32:
      case I64:
        this.varint();
        break;
      case DOUBLE:
        this.at += 8;
        break;
      case BINARY:
        this.binary();
        break;
      case LIST: {
        const t = this.list();
        const size = this.size;
        for (let i = 0; i < size; i++) {
          if (t === TRUE || t === FALSE) this.at++;
          else this.skip(t);
        }
        break;
      }
      case STRUCT: {
        const outer = this.id;
        this.id = 0;
        for (let t = this.field(); t !== 0; t = this.field()) this.skip(t);
        this.id = outer;
        break;
      }
      default:
        // hyparquet reads no other type either (maps and sets are not in the parquet footer).
        throw new Error(`thrift unhandled type: ${type}`);
    }
    if (this.at > this.b.length) throw new Error('thrift data ends early');
  }

  /** The name of column `k` from its bytes `[start, end)`, decoded once while row groups repeat it. */
  name(k: number, start: number, end: number): string {
    const bytes = this.b.subarray(start, end);
    const known = this.names[k];
    if (known && known.bytes.length === bytes.length) {
      let same = true;
      for (let i = 0; i < bytes.length && same; i++) same = known.bytes[i] === bytes[i];
      if (same) return known.name;
    }
    const name = utf8.decode(bytes);
    this.names[k] = { bytes, name };
    return name;
  }
}

/** The layout of a FileMetaData's thrift bytes; throws where hyparquet's decode of them would, structurally. */
export function footerLayout(bytes: Uint8Array): FooterLayout {
  const w = new Walker(bytes);
  let listAt = -1;
  let listEnd = -1;
  const groups: RowGroupLayout[] = [];
  let hasSchema = false;
  for (let type = w.field(); type !== 0; type = w.field()) {
    if (w.id === 2 && type === LIST) hasSchema = true;
    if (w.id !== 4 || type !== LIST) {
      w.skip(type);
      continue;
    }
    listAt = w.at;
    const t = w.list();
    const size = w.size;
    if (t !== STRUCT && size > 0) throw new Error('parquet row_groups is not a list of structs');
    w.id = 0;
    for (let g = 0; g < size; g++) groups.push(rowGroup(w));
    w.id = 4;
    listEnd = w.at;
  }
  if (!hasSchema || listAt < 0) throw new Error('parquet footer has no schema or no row_groups');
  return { bytes, listAt, listEnd, groups };
}

function rowGroup(w: Walker): RowGroupLayout {
  const start = w.at;
  let numRows: number | undefined;
  let columns: RowGroupLayout['columns'] | undefined;
  w.id = 0;
  for (let type = w.field(); type !== 0; type = w.field()) {
    if (w.id === 3 && (type === I64 || type === I32)) {
      numRows = type === I64 ? w.zigzag64() : w.zigzag();
    } else if (w.id === 1 && type === LIST) {
      const t = w.list();
      const size = w.size;
      if (t !== STRUCT && size > 0) throw new Error('parquet columns is not a list of structs');
      columns = [];
      for (let k = 0; k < size; k++) {
        w.id = 0;
        columns.push(columnChunk(w, k));
      }
      w.id = 1;
    } else {
      w.skip(type);
    }
  }
  w.id = 0;
  // What hyparquet's conversion of a row group reads without checking.
  if (columns === undefined || numRows === undefined) throw new Error('parquet row group without columns or num_rows');
  return { start, end: w.at, numRows, columns };
}

function columnChunk(w: Walker, k: number): RowGroupLayout['columns'][number] {
  const out: RowGroupLayout['columns'][number] = { codec: undefined, name: null, min: undefined, max: undefined };
  for (let type = w.field(); type !== 0; type = w.field()) {
    if (w.id !== 3 || type !== STRUCT) {
      w.skip(type);
      continue;
    }
    // ColumnMetaData
    let path = false;
    w.id = 0;
    for (let mtype = w.field(); mtype !== 0; mtype = w.field()) {
      const mid = w.id;
      if (mid === 4 && mtype === I32) {
        out.codec = w.zigzag();
      } else if (mid === 3 && mtype === LIST) {
        path = true;
        const t = w.list();
        const size = w.size;
        let named = -1;
        let namedEnd = -1;
        for (let i = 0; i < size; i++) {
          if (t === BINARY) {
            named = w.binary();
            namedEnd = w.at;
          } else {
            w.skip(t);
          }
        }
        out.name = size === 1 && named >= 0 ? w.name(k, named, namedEnd) : null;
      } else if (mid === 12 && mtype === STRUCT) {
        w.id = 0;
        for (let stype = w.field(); stype !== 0; stype = w.field()) {
          if (stype === BINARY && (w.id === 5 || w.id === 6)) {
            const sid = w.id;
            const at = w.binary();
            if (sid === 5) out.max = w.b.subarray(at, w.at);
            else out.min = w.b.subarray(at, w.at);
          } else {
            w.skip(stype);
          }
        }
      } else {
        w.skip(mtype);
      }
      w.id = mid;
    }
    if (!path) throw new Error('parquet column metadata without path_in_schema');
    w.id = 3;
  }
  return out;
}

/**
 * A footer (FileMetaData bytes, length, `PAR1`) like the file's with only row groups `[from, to)`: hyparquet
 * decodes it into the same metadata, those row groups alone.
 */
export function footerWith(layout: FooterLayout, from: number, to: number): Uint8Array {
  const { bytes, listAt, listEnd, groups } = layout;
  const n = Math.max(0, to - from);
  const header: number[] = [];
  if (n < 15) header.push((n << 4) | STRUCT);
  else {
    header.push(0xf0 | STRUCT);
    for (let v = n; ; v = Math.floor(v / 128)) {
      if (v < 128) {
        header.push(v);
        break;
      }
      header.push((v & 0x7f) | 0x80);
    }
  }
  const body = n > 0 ? bytes.subarray(groups[from].start, groups[to - 1].end) : new Uint8Array(0);
  const length = listAt + header.length + body.length + (bytes.length - listEnd);
  const out = new Uint8Array(length + 8);
  out.set(bytes.subarray(0, listAt), 0);
  out.set(header, listAt);
  out.set(body, listAt + header.length);
  out.set(bytes.subarray(listEnd), listAt + header.length + body.length);
  new DataView(out.buffer).setUint32(length, length, true);
  out.set([0x50, 0x41, 0x52, 0x31], length + 4);
  return out;
}

const hex = (b: Uint8Array | undefined): string | null => (b === undefined ? null : Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('hex'));
const NIBBLE = new Int8Array(128).fill(-1);
for (let i = 0; i < 16; i++) NIBBLE['0123456789abcdef'.charCodeAt(i)] = i;
const unhex = (h: unknown): Uint8Array | undefined => {
  if (typeof h !== 'string' || h.length % 2 !== 0) return undefined;
  const out = new Uint8Array(h.length / 2);
  for (let i = 0; i < out.length; i++) {
    const hi = NIBBLE[h.charCodeAt(2 * i)] ?? -1;
    const lo = NIBBLE[h.charCodeAt(2 * i + 1)] ?? -1;
    if (hi < 0 || lo < 0) return undefined;
    out[i] = (hi << 4) | lo;
  }
  return out;
};

/**
 * A layout as text (everything but the footer's bytes), for `layoutFromText` in a later process; the
 * statistics only of the columns `withStats` names by position (the others' are never used).
 */
export function layoutText(layout: FooterLayout, withStats: (column: number) => boolean = () => true): string {
  return JSON.stringify({
    length: layout.bytes.length,
    listAt: layout.listAt,
    listEnd: layout.listEnd,
    groups: layout.groups.map((g) =>
      [g.start, g.end, g.numRows, g.columns.map((c, k) => (withStats(k) ? [c.codec ?? null, c.name, hex(c.min), hex(c.max)] : [c.codec ?? null, c.name, null, null]))],
    ),
  });
}

/**
 * The layout `layoutText` wrote, over the footer bytes of the same file; null when the text is not one
 * (damaged, or of a footer of another length), so that the footer is walked instead.
 */
export function layoutFromText(text: string, bytes: Uint8Array): FooterLayout | null {
  try {
    const kept = JSON.parse(text) as { length?: unknown; listAt?: unknown; listEnd?: unknown; groups?: unknown };
    const { listAt, listEnd } = kept;
    if (kept.length !== bytes.length || !Number.isSafeInteger(listAt) || !Number.isSafeInteger(listEnd) || !Array.isArray(kept.groups)) return null;
    if ((listAt as number) < 0 || (listEnd as number) < (listAt as number) || (listEnd as number) > bytes.length) return null;
    const groups: RowGroupLayout[] = [];
    let at = (listAt as number) + 1;
    for (const g of kept.groups as unknown[]) {
      if (!Array.isArray(g) || g.length !== 4 || !Array.isArray(g[3])) return null;
      const [start, end, numRows] = g as number[];
      // Row groups follow one another inside the list, the first after its header (1 to 6 bytes).
      const placed = groups.length === 0 ? start >= at && start <= at + 5 : start === at;
      if (!Number.isSafeInteger(start) || !Number.isSafeInteger(end) || !Number.isSafeInteger(numRows) || !placed || end <= start || end > (listEnd as number)) return null;
      at = end;
      const columns: RowGroupLayout['columns'] = [];
      for (const c of g[3] as unknown[]) {
        if (!Array.isArray(c) || c.length !== 4) return null;
        const [codec, name, min, max] = c;
        if ((codec !== null && !Number.isSafeInteger(codec)) || (name !== null && typeof name !== 'string')) return null;
        columns.push({ codec: codec ?? undefined, name, min: unhex(min), max: unhex(max) });
      }
      groups.push({ start, end, numRows, columns });
    }
    if (at !== listEnd && groups.length > 0) return null;
    return { bytes, listAt: listAt as number, listEnd: listEnd as number, groups };
  } catch {
    return null;
  }
}
