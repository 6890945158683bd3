// TensorBoard event files (`events.out.tfevents.*`): TFRecord framing around `tensorflow.Event` protobufs
// holding scalar summaries. Written by hand: the framing and the three messages used are small.
//
// TFRecord: u64 LE length, u32 LE masked CRC32C of those 8 bytes, the data, u32 LE masked CRC32C of the data.
// Event: wall_time (1, double), step (2, int64), file_version (3, string) | summary (5, Summary).
// Summary: value (1, repeated Value). Value: tag (1, string), simple_value (2, float).

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

  float(field: number, v: number): this {
    this.tag(field, 5);
    this.reserve(4);
    new DataView(this.buf.buffer).setFloat32(this.len, v, true);
    this.len += 4;
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

/** One Event message. */
export function encodeEvent(e: { wallTime: number; step: number; fileVersion?: string; scalars?: ScalarEvent['scalars'] }): Uint8Array {
  const w = new ProtoWriter().double(1, e.wallTime).int64(2, e.step);
  if (e.fileVersion !== undefined) w.string(3, e.fileVersion);
  if (e.scalars) {
    const summary = new ProtoWriter();
    const entries = e.scalars instanceof Map ? [...e.scalars.entries()] : Object.entries(e.scalars);
    for (const [tag, v] of entries) summary.bytes(1, new ProtoWriter().string(1, tag).float(2, v).finish());
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
