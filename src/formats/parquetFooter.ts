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
const TRUE = 1;
const FALSE = 2;
const BYTE = 3;
const I16 = 4;
const I32 = 5;
const I64 = 6;
const DOUBLE = 7;
const BINARY = 8;
const LIST = 9;
const STRUCT = 12;

const utf8 = new TextDecoder();

class Walker {
  at = 0;
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

  binary(): Uint8Array {
    const n = this.varint();
    if (n < 0 || this.at + n > this.b.length) throw new Error(`thrift binary length ${n} exceeds remaining ${this.b.length - this.at} bytes`);
    const out = this.b.subarray(this.at, this.at + n);
    this.at += n;
    return out;
  }

  /** A list header: element type and count. */
  list(): { type: number; size: number } {
    const x = this.byte();
    const size = x >> 4 === 15 ? this.varint() : x >> 4;
    if (size < 0) throw new Error(`thrift list size ${size}`);
    return { type: x & 0x0f, size };
  }

  skip(type: number): void {
    switch (type) {
      case TRUE:
      case FALSE:
        return;
      case BYTE:
        this.at++;
        return;
      case I16:
      case I32:
      case I64:
        this.varint();
        return;
      case DOUBLE:
        this.at += 8;
        return;
      case BINARY:
        this.binary();
        return;
      case LIST: {
        const { type: t, size } = this.list();
        for (let i = 0; i < size; i++) {
          if (t === TRUE || t === FALSE) this.at++;
          else this.skip(t);
        }
        return;
      }
      case STRUCT:
        this.struct(() => false);
        return;
      default:
        // hyparquet reads no other type either (maps and sets are not in the parquet footer).
        throw new Error(`thrift unhandled type: ${type}`);
    }
    if (this.at > this.b.length) throw new Error('thrift data ends early');
  }

  /** Walks a struct's fields, handing each to `field` (which reads it and returns true, or leaves it to be skipped). */
  struct(field: (id: number, type: number) => boolean): void {
    let id = 0;
    for (;;) {
      const x = this.byte();
      const type = x & 0x0f;
      if (type === 0) return;
      const delta = x >> 4;
      id = delta ? id + delta : this.zigzag();
      if (!field(id, type)) this.skip(type);
      if (this.at > this.b.length) throw new Error('thrift data ends early');
    }
  }
}

/** The layout of a FileMetaData's thrift bytes; throws where hyparquet's decode of them would, structurally. */
export function footerLayout(bytes: Uint8Array): FooterLayout {
  const w = new Walker(bytes);
  let listAt = -1;
  let listEnd = -1;
  const groups: RowGroupLayout[] = [];
  let hasSchema = false;
  w.struct((id, type) => {
    if (id === 2 && type === LIST) hasSchema = true;
    if (id !== 4 || type !== LIST) return false;
    listAt = w.at;
    const { type: t, size } = w.list();
    if (t !== STRUCT && size > 0) throw new Error('parquet row_groups is not a list of structs');
    for (let g = 0; g < size; g++) groups.push(rowGroup(w));
    listEnd = w.at;
    return true;
  });
  if (!hasSchema || listAt < 0) throw new Error('parquet footer has no schema or no row_groups');
  return { bytes, listAt, listEnd, groups };
}

function rowGroup(w: Walker): RowGroupLayout {
  const start = w.at;
  let numRows: number | undefined;
  let columns: RowGroupLayout['columns'] | undefined;
  w.struct((id, type) => {
    if (id === 3 && (type === I64 || type === I32)) {
      numRows = type === I64 ? w.zigzag64() : w.zigzag();
      return true;
    }
    if (id !== 1 || type !== LIST) return false;
    const { type: t, size } = w.list();
    if (t !== STRUCT && size > 0) throw new Error('parquet columns is not a list of structs');
    columns = [];
    for (let k = 0; k < size; k++) columns.push(columnChunk(w));
    return true;
  });
  // What hyparquet's conversion of a row group reads without checking.
  if (columns === undefined || numRows === undefined) throw new Error('parquet row group without columns or num_rows');
  return { start, end: w.at, numRows, columns };
}

function columnChunk(w: Walker): RowGroupLayout['columns'][number] {
  const out: RowGroupLayout['columns'][number] = { codec: undefined, name: null, min: undefined, max: undefined };
  w.struct((id, type) => {
    if (id !== 3 || type !== STRUCT) return false;
    let path = false;
    w.struct((mid, mtype) => {
      if (mid === 4 && mtype === I32) {
        out.codec = w.zigzag();
        return true;
      }
      if (mid === 3 && mtype === LIST) {
        path = true;
        const { type: t, size } = w.list();
        const parts: Uint8Array[] = [];
        for (let i = 0; i < size; i++) {
          if (t === BINARY) parts.push(w.binary());
          else w.skip(t);
        }
        out.name = parts.length === 1 && size === 1 ? utf8.decode(parts[0]) : null;
        return true;
      }
      if (mid === 12 && mtype === STRUCT) {
        w.struct((sid, stype) => {
          if (stype !== BINARY || (sid !== 5 && sid !== 6)) return false;
          if (sid === 5) out.max = w.binary();
          else out.min = w.binary();
          return true;
        });
        return true;
      }
      return false;
    });
    if (!path) throw new Error('parquet column metadata without path_in_schema');
    return true;
  });
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
