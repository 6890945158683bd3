// TensorBoard event files (`events.out.tfevents.*`): TFRecord framing around `tensorflow.Event` protobufs
// holding scalar summaries. Written by hand: the framing and the three messages used are small.
//
// TFRecord: u64 LE length, u32 LE masked CRC32C of those 8 bytes, the data, u32 LE masked CRC32C of the data.
// Event: wall_time (1, double), step (2, int64), file_version (3, string) | summary (5, Summary).
// Summary: value (1, repeated Value). Value: tag (1, string), simple_value (2, float), tensor (8, TensorProto),
// metadata (9, SummaryMetadata: plugin_data (1: plugin_name (1)), data_class (4: DATA_CLASS_SCALAR 1)).

const CRC32C_TABLE = (() => {
  const t = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0x82f63b78 ^ (c >>> 1) : c >>> 1;
    t[n] = c >>> 0;
  }
  return t;
})();

/** CRC-32C (Castagnoli), as TFRecord uses it. */
export function crc32c(bytes: Uint8Array): number {
  let c = 0xffffffff;
  for (let i = 0; i < bytes.length; i++) c = CRC32C_TABLE[(c ^ bytes[i]) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

/** TFRecord's masked CRC: rotate right by 15 and add a constant, so CRCs of CRCs stay informative. */
export function maskedCrc32c(bytes: Uint8Array): number {
  const c = crc32c(bytes);
  return ((((c >>> 15) | (c << 17)) >>> 0) + 0xa282ead8) >>> 0;
}

/** A growable protobuf writer for the few wire types these messages use. */
class ProtoWriter {
  private buf = new Uint8Array(64);
  private len = 0;

  private reserve(n: number): void {
    if (this.len + n <= this.buf.length) return;
    const next = new Uint8Array(Math.max(this.buf.length * 2, this.len + n));
    next.set(this.buf.subarray(0, this.len));
    this.buf = next;
  }

  varint(v: bigint | number): this {
    let x = BigInt.asUintN(64, BigInt(v));
    this.reserve(10);
    while (x >= 0x80n) {
      this.buf[this.len++] = Number(x & 0x7fn) | 0x80;
      x >>= 7n;
    }
    this.buf[this.len++] = Number(x);
    return this;
  }

  tag(field: number, wireType: number): this {
    return this.varint((field << 3) | wireType);
  }

  double(field: number, v: number): this {
    this.tag(field, 1);
    this.reserve(8);
    new DataView(this.buf.buffer).setFloat64(this.len, v, true);
    this.len += 8;
    return this;
  }

  int64(field: number, v: number): this {
    return this.tag(field, 0).varint(BigInt(Math.trunc(v)));
  }

  bytes(field: number, b: Uint8Array): this {
    this.tag(field, 2).varint(b.length);
    this.reserve(b.length);
    this.buf.set(b, this.len);
    this.len += b.length;
    return this;
  }

  string(field: number, s: string): this {
    return this.bytes(field, new TextEncoder().encode(s));
  }

  finish(): Uint8Array {
    return this.buf.slice(0, this.len);
  }
}

export interface ScalarEvent {
  step: number;
  wallTime: number;
  /** tag → value of this step. */
  scalars: ReadonlyMap<string, number> | Readonly<Record<string, number>>;
}

/** The `scalars` plugin's metadata (data class DATA_CLASS_SCALAR), as TensorBoard's own scalar summaries carry it. */
const SCALARS_METADATA = new ProtoWriter().bytes(1, new ProtoWriter().string(1, 'scalars').finish()).int64(4, 1).finish();

/**
 * One scalar's Summary.Value: a DT_DOUBLE scalar tensor of the `scalars` plugin, the form TensorBoard reads at
 * full precision (`simple_value` is a float32: 123456789 would come back as 123456792).
 */
function scalarValue(tag: string, v: number): Uint8Array {
  const doubleVal = new Uint8Array(8);
  new DataView(doubleVal.buffer).setFloat64(0, v, true);
  // dtype DT_DOUBLE, an empty shape (a scalar), the value packed in double_val
  const tensor = new ProtoWriter().int64(1, 2).bytes(2, new Uint8Array(0)).bytes(6, doubleVal).finish();
  return new ProtoWriter().string(1, tag).bytes(8, tensor).bytes(9, SCALARS_METADATA).finish();
}

/** One Event message. */
export function encodeEvent(e: { wallTime: number; step: number; fileVersion?: string; scalars?: ScalarEvent['scalars'] }): Uint8Array {
  const w = new ProtoWriter().double(1, e.wallTime).int64(2, e.step);
  if (e.fileVersion !== undefined) w.string(3, e.fileVersion);
  if (e.scalars) {
    const summary = new ProtoWriter();
    const entries = e.scalars instanceof Map ? [...e.scalars.entries()] : Object.entries(e.scalars);
    for (const [tag, v] of entries) summary.bytes(1, scalarValue(tag, v));
    w.bytes(5, summary.finish());
  }
  return w.finish();
}

/** One TFRecord around `data`. */
export function tfRecord(data: Uint8Array): Uint8Array {
  const out = new Uint8Array(12 + data.length + 4);
  const view = new DataView(out.buffer);
  view.setBigUint64(0, BigInt(data.length), true);
  view.setUint32(8, maskedCrc32c(out.subarray(0, 8)), true);
  out.set(data, 12);
  view.setUint32(12 + data.length, maskedCrc32c(data), true);
  return out;
}

/** A whole event file: the `brain.Event:2` version record, then one record per step with its scalars. */
export function encodeEventFile(events: readonly ScalarEvent[], createdAt: number): Uint8Array {
  const records = [tfRecord(encodeEvent({ wallTime: createdAt, step: 0, fileVersion: 'brain.Event:2' }))];
  for (const e of events) records.push(tfRecord(encodeEvent(e)));
  const out = new Uint8Array(records.reduce((n, r) => n + r.length, 0));
  let at = 0;
  for (const r of records) {
    out.set(r, at);
    at += r.length;
  }
  return out;
}

/** The file name TensorBoard looks for: `events.out.tfevents.<seconds>.<host>`. */
export function eventFileName(createdAt: number, host: string): string {
  return `events.out.tfevents.${Math.floor(createdAt)}.${host.replace(/[^A-Za-z0-9._-]/g, '_') || 'rlsight'}`;
}

// ------------------------------------------------------------------------------------------ reading
//
// Summary.Value: tag (1), simple_value (2, float), metadata (9: plugin_data (1): plugin_name (1)), tensor (8).
// TensorProto: dtype (1: DT_FLOAT 1, DT_DOUBLE 2, DT_HALF 19, DT_BFLOAT16 14), tensor_shape (2),
// tensor_content (4, raw little-endian), float_val (5), double_val (6), half_val (13).

/** One record's frame read from `buf` at `at`: the data, or why the bytes there are not a whole record. */
export type TfRecordRead = { data: Uint8Array; next: number } | { partial: true } | { damaged: string };

/** Reads the record at `at`; a record cut short (a file still being written) is `partial`. */
export function readTfRecord(buf: Uint8Array, at: number): TfRecordRead {
  if (buf.length - at < 12) return { partial: true };
  const view = new DataView(buf.buffer, buf.byteOffset + at, 12);
  const len = view.getBigUint64(0, true);
  if (view.getUint32(8, true) !== maskedCrc32c(buf.subarray(at, at + 8))) return { damaged: `bad length checksum at byte ${at}` };
  if (len > BigInt(buf.length - at - 16)) return { partial: true };
  const n = Number(len);
  const data = buf.subarray(at + 12, at + 12 + n);
  const crc = new DataView(buf.buffer, buf.byteOffset + at + 12 + n, 4).getUint32(0, true);
  if (crc !== maskedCrc32c(data)) return { damaged: `bad data checksum of the record at byte ${at}` };
  return { data, next: at + 16 + n };
}

/** A protobuf reader over the wire types events use. */
class ProtoReader {
  at = 0;
  constructor(private readonly b: Uint8Array) {}

  get done(): boolean {
    return this.at >= this.b.length;
  }

  varint(): bigint {
    let x = 0n;
    for (let shift = 0n; shift < 70n; shift += 7n) {
      if (this.at >= this.b.length) throw new Error('truncated varint');
      const byte = this.b[this.at++];
      x |= BigInt(byte & 0x7f) << shift;
      if (byte < 0x80) return x;
    }
    throw new Error('varint too long');
  }

  /** The next field: its number, wire type and, for length-delimited fields, its bytes. */
  field(): { no: number; type: number } {
    const key = Number(this.varint());
    return { no: key >>> 3, type: key & 7 };
  }

  bytes(): Uint8Array {
    const n = Number(this.varint());
    if (this.at + n > this.b.length) throw new Error('truncated field');
    const out = this.b.subarray(this.at, this.at + n);
    this.at += n;
    return out;
  }

  fixed(n: 4 | 8): DataView {
    if (this.at + n > this.b.length) throw new Error('truncated field');
    const v = new DataView(this.b.buffer, this.b.byteOffset + this.at, n);
    this.at += n;
    return v;
  }

  skip(type: number): void {
    if (type === 0) this.varint();
    else if (type === 1) this.fixed(8);
    else if (type === 2) this.bytes();
    else if (type === 5) this.fixed(4);
    else throw new Error(`unsupported wire type ${type}`);
  }
}

const utf8 = new TextDecoder();

function halfToFloat(h: number): number {
  const s = h & 0x8000 ? -1 : 1;
  const e = (h >> 10) & 0x1f;
  const f = h & 0x3ff;
  if (e === 0) return s * 2 ** -14 * (f / 1024);
  if (e === 31) return f ? NaN : s * Infinity;
  return s * 2 ** (e - 15) * (1 + f / 1024);
}

/** The single number of a scalar TensorProto, or null when it holds something else (text, several values). */
function tensorScalar(b: Uint8Array): number | null {
  const r = new ProtoReader(b);
  let dtype = 0;
  let content: Uint8Array | null = null;
  const values: number[] = [];
  while (!r.done) {
    const f = r.field();
    if (f.no === 1 && f.type === 0) dtype = Number(r.varint());
    else if (f.no === 4 && f.type === 2) content = r.bytes();
    else if ((f.no === 5 || f.no === 6) && f.type === 2) {
      const p = r.bytes();
      const w = f.no === 5 ? 4 : 8;
      const v = new DataView(p.buffer, p.byteOffset, p.length);
      for (let i = 0; i + w <= p.length; i += w) values.push(w === 4 ? v.getFloat32(i, true) : v.getFloat64(i, true));
    } else if (f.no === 5 && f.type === 5) values.push(r.fixed(4).getFloat32(0, true));
    else if (f.no === 6 && f.type === 1) values.push(r.fixed(8).getFloat64(0, true));
    else if (f.no === 13 && f.type === 2) {
      const p = new ProtoReader(r.bytes());
      while (!p.done) values.push(halfToFloat(Number(p.varint())));
    } else if (f.no === 13 && f.type === 0) values.push(halfToFloat(Number(r.varint())));
    else r.skip(f.type);
  }
  if (content !== null && values.length === 0) {
    const v = new DataView(content.buffer, content.byteOffset, content.length);
    if (dtype === 1 && content.length === 4) values.push(v.getFloat32(0, true));
    else if (dtype === 2 && content.length === 8) values.push(v.getFloat64(0, true));
    else if (dtype === 19 && content.length === 2) values.push(halfToFloat(v.getUint16(0, true)));
    else if (dtype === 14 && content.length === 2) values.push(new DataView(new Uint32Array([v.getUint16(0, true) << 16]).buffer).getFloat32(0, true));
  }
  if (![1, 2, 14, 19].includes(dtype) || values.length !== 1) return null;
  return values[0];
}

function pluginName(metadata: Uint8Array): string | null {
  const r = new ProtoReader(metadata);
  while (!r.done) {
    const f = r.field();
    if (f.no === 1 && f.type === 2) {
      const p = new ProtoReader(r.bytes());
      while (!p.done) {
        const g = p.field();
        if (g.no === 1 && g.type === 2) return utf8.decode(p.bytes());
        p.skip(g.type);
      }
    } else r.skip(f.type);
  }
  return null;
}

/** One Event's scalars. */
export interface DecodedScalarEvent {
  wallTime: number;
  /** The step, rounded to the nearest double when it is beyond ±2^53 (see `exactStep`). */
  step: number;
  /** The step as written, only when `step` had to be rounded. */
  exactStep?: bigint;
  scalars: { tag: string; value: number }[];
}

/**
 * The scalars of one Event (simple_value, or a scalar tensor of the `scalars` plugin); null when it has none.
 * `plugins` (tag → plugin name) remembers each tag's plugin from its first value carrying metadata and names it
 * for the tag's values without any, as TensorBoard's EventAccumulator does: TF1's `FileWriter` (and MXBoard)
 * write a tag's metadata with its first value only.
 */
export function decodeScalarEvent(data: Uint8Array, plugins: Map<string, string> = new Map()): DecodedScalarEvent | null {
  const r = new ProtoReader(data);
  let wallTime = 0;
  let step = 0n;
  const scalars: { tag: string; value: number }[] = [];
  while (!r.done) {
    const f = r.field();
    if (f.no === 1 && f.type === 1) wallTime = r.fixed(8).getFloat64(0, true);
    else if (f.no === 2 && f.type === 0) step = BigInt.asIntN(64, r.varint());
    else if (f.no === 5 && f.type === 2) {
      const summary = new ProtoReader(r.bytes());
      while (!summary.done) {
        const s = summary.field();
        if (s.no !== 1 || s.type !== 2) {
          summary.skip(s.type);
          continue;
        }
        const v = new ProtoReader(summary.bytes());
        let tag = '';
        let simple: number | null = null;
        let tensor: Uint8Array | null = null;
        let plugin: string | null = null;
        while (!v.done) {
          const g = v.field();
          if (g.no === 1 && g.type === 2) tag = utf8.decode(v.bytes());
          else if (g.no === 2 && g.type === 5) simple = v.fixed(4).getFloat32(0, true);
          else if (g.no === 8 && g.type === 2) tensor = v.bytes();
          else if (g.no === 9 && g.type === 2) plugin = pluginName(v.bytes());
          else v.skip(g.type);
        }
        if (plugin !== null && !plugins.has(tag)) plugins.set(tag, plugin);
        if (simple !== null) scalars.push({ tag, value: simple });
        else if (tensor !== null && plugins.get(tag) === 'scalars') {
          const x = tensorScalar(tensor);
          if (x !== null) scalars.push({ tag, value: x });
        }
      }
    } else r.skip(f.type);
  }
  if (scalars.length === 0) return null;
  const rounded = Number(step);
  return BigInt(rounded) === step ? { wallTime, step: rounded, scalars } : { wallTime, step: rounded, exactStep: step, scalars };
}
