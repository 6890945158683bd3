// Writes values as torch.save does (zip of `<root>/data.pkl` protocol 2 + 64-byte-aligned storages), streaming to disk.
import { closeSync, openSync, writeSync } from 'node:fs';
import { basename } from 'node:path';
import { crc32 } from 'node:zlib';
import { PickleError } from './errors.ts';
import { DTYPE_BYTES, PyEnum, PyFloat, PyObject, PyTuple, Storage, Tensor, type DType, type PyValue } from './value.ts';

export { PyFloat };

/**
 * What the writer accepts: any PyValue, PyFloat, and numeric typed arrays (written as Python lists:
 * Float32/Float64Array of floats, integer arrays of ints).
 */
export type Picklable =
  | PyValue
  | PyFloat
  | Float64Array
  | Float32Array
  | Int32Array
  | Int16Array
  | Int8Array
  | Uint16Array
  | Uint32Array
  | BigInt64Array
  | Picklable[]
  | Map<Picklable, Picklable>
  | Set<Picklable>
  | { [key: string]: Picklable };

export interface SaveOptions {
  /** Archive root folder; torch uses the file's stem. */
  root?: string;
}

const STORAGE_CLASS: Record<DType, string> = {
  float64: 'DoubleStorage', float32: 'FloatStorage', float16: 'HalfStorage', bfloat16: 'BFloat16Storage',
  int64: 'LongStorage', int32: 'IntStorage', int16: 'ShortStorage', int8: 'CharStorage', uint8: 'ByteStorage', bool: 'BoolStorage',
};

const CHUNK = 1 << 20;
const BATCH = 1000;
const encoder = new TextEncoder();

/** Byte sink with a running CRC32 and length; `flush` hands full chunks to `out`. */
class Sink {
  buf = new Uint8Array(CHUNK);
  dv = new DataView(this.buf.buffer);
  pos = 0;
  crc = 0;
  length = 0;
  constructor(private readonly out: (chunk: Uint8Array) => void) {}

  ensure(n: number): void {
    if (this.pos + n > this.buf.length) this.flush();
  }
  flush(): void {
    if (this.pos === 0) return;
    const chunk = this.buf.subarray(0, this.pos);
    this.crc = crc32(chunk, this.crc);
    this.length += this.pos;
    this.out(chunk);
    this.pos = 0;
  }
  /** Writes bytes that may exceed the chunk size. */
  bytes(b: Uint8Array): void {
    if (b.length <= this.buf.length - this.pos) {
      this.buf.set(b, this.pos);
      this.pos += b.length;
      return;
    }
    this.flush();
    if (b.length < this.buf.length) {
      this.buf.set(b, 0);
      this.pos = b.length;
      return;
    }
    this.crc = crc32(b, this.crc);
    this.length += b.length;
    this.out(b);
  }
}

/** Protocol-2 pickler; tensors' storages get persistent ids and are collected for the archive. */
class Pickler {
  readonly storages = new Map<Storage, string>();
  private readonly active = new Set<object>();
  constructor(
    readonly s: Sink,
    readonly file: string,
  ) {}

  private fail(problem: string): never {
    throw new PickleError(this.file, `cannot write: ${problem}`);
  }

  op(code: number): void {
    this.s.ensure(1);
    this.s.buf[this.s.pos++] = code;
  }

  dump(v: Picklable): void {
    this.op(0x80);
    this.op(2);
    this.value(v);
    this.op(0x2e);
  }

  int(v: number): void {
    const s = this.s;
    s.ensure(9);
    const b = s.buf;
    if (v >= 0 && v < 256) {
      b[s.pos] = 0x4b;
      b[s.pos + 1] = v;
      s.pos += 2;
    } else if (v >= 0 && v < 65536) {
      b[s.pos] = 0x4d;
      b[s.pos + 1] = v & 0xff;
      b[s.pos + 2] = v >> 8;
      s.pos += 3;
    } else if (v >= -2147483648 && v <= 2147483647) {
      b[s.pos] = 0x4a;
      s.dv.setInt32(s.pos + 1, v, true);
      s.pos += 5;
    } else this.long(BigInt(v));
  }

  long(v: bigint): void {
    if (v >= -2147483648n && v <= 2147483647n) return this.int(Number(v));
    // Minimal little-endian two's complement, as Python's encode_long.
    const bytes: number[] = [];
    let x = v;
    for (;;) {
      bytes.push(Number(x & 0xffn));
      x >>= 8n;
      const signBit = (bytes[bytes.length - 1] & 0x80) !== 0;
      if ((x === 0n && !signBit) || (x === -1n && signBit)) break;
    }
    const s = this.s;
    if (bytes.length < 256) {
      s.ensure(2 + bytes.length);
      s.buf[s.pos++] = 0x8a;
      s.buf[s.pos++] = bytes.length;
    } else {
      s.ensure(5);
      s.buf[s.pos++] = 0x8b;
      s.dv.setInt32(s.pos, bytes.length, true);
      s.pos += 4;
    }
    s.bytes(Uint8Array.from(bytes));
  }

  float(v: number): void {
    const s = this.s;
    s.ensure(9);
    s.buf[s.pos] = 0x47;
    s.dv.setFloat64(s.pos + 1, v, false);
    s.pos += 9;
  }

  number(v: number): void {
    if (Number.isSafeInteger(v) && !Object.is(v, -0)) this.int(v);
    else this.float(v);
  }

  str(v: string): void {
    const s = this.s;
    // ASCII fast path straight into the chunk; otherwise encode (lone surrogates as surrogatepass).
    if (v.length < 256) {
      s.ensure(5 + v.length * 3);
      const start = s.pos + 5;
      let i = 0;
      for (; i < v.length; i++) {
        const c = v.charCodeAt(i);
        if (c >= 0x80) break;
        s.buf[start + i] = c;
      }
      if (i === v.length) {
        s.buf[s.pos] = 0x58;
        s.dv.setUint32(s.pos + 1, v.length, true);
        s.pos = start + v.length;
        return;
      }
    }
    const enc = encodeUtf8(v);
    s.ensure(5);
    s.buf[s.pos] = 0x58;
    s.dv.setUint32(s.pos + 1, enc.length, true);
    s.pos += 5;
    s.bytes(enc);
  }

  /** GLOBAL for `module.qual`, where `qual` may be dotted (nested class) — emitted as getattr calls. */
  qualGlobal(module: string, qual: string): void {
    const parts = qual.split('.');
    for (let i = parts.length - 1; i >= 1; i--) {
      this.op(0x63);
      this.s.bytes(encoder.encode('__builtin__\ngetattr\n'));
    }
    this.op(0x63);
    this.s.bytes(encoder.encode(`${module}\n${parts[0]}\n`));
    for (let i = 1; i < parts.length; i++) {
      this.str(parts[i]);
      this.op(0x86); // TUPLE2 (obj, attr)
      this.op(0x52); // REDUCE getattr(obj, attr)
    }
  }

  value(v: Picklable): void {
    switch (typeof v) {
      case 'number':
        return this.number(v);
      case 'string':
        return this.str(v);
      case 'boolean':
        return this.op(v ? 0x88 : 0x89);
      case 'bigint':
        return this.long(v);
      case 'object':
        break;
      default:
        this.fail(`a ${typeof v} is not a Python value`);
    }
    if (v === null) return this.op(0x4e);
    if (v instanceof PyFloat) return this.float(v.value);
    if (this.active.has(v)) this.fail('the value contains itself (cycles cannot be written)');
    this.active.add(v);
    try {
      this.container(v);
    } finally {
      this.active.delete(v);
    }
  }

  private container(v: object): void {
    if (v instanceof PyTuple) return this.tuple(v as Picklable[]);
    if (Array.isArray(v)) return this.list(v as Picklable[]);
    if (v instanceof Uint8Array) return this.pyBytes(v);
    if (ArrayBuffer.isView(v)) return this.typedList(v as unknown as ArrayLike<number | bigint>, v instanceof Float32Array || v instanceof Float64Array);
    if (v instanceof Tensor) return this.tensor(v);
    if (v instanceof Storage) return this.persistentStorage(v);
    if (v instanceof Map) return this.dict(v.entries(), v.size);
    if (v instanceof Set) {
      this.qualGlobal('__builtin__', 'set');
      this.list([...v] as Picklable[]);
      this.op(0x85);
      this.op(0x52);
      return;
    }
    if (v instanceof PyEnum) {
      if (v.value === undefined && v.member !== undefined) {
        this.qualGlobal(v.module, `${v.name}.${v.member}`);
        return;
      }
      this.qualGlobal(v.module, v.name);
      this.value(v.value as Picklable);
      this.op(0x85);
      this.op(0x52);
      if (v.state !== undefined) {
        this.value(v.state as Picklable);
        this.op(0x62);
      }
      return;
    }
    if (v instanceof PyObject) return this.object(v);
    if (Object.getPrototypeOf(v) === Object.prototype || Object.getPrototypeOf(v) === null) {
      const keys = Object.keys(v);
      const rec = v as Record<string, Picklable>;
      return this.dict(
        (function* () {
          for (const k of keys) yield [k, rec[k]] as [Picklable, Picklable];
        })(),
        keys.length,
      );
    }
    this.fail(`a ${v.constructor?.name ?? 'object'} is not a Python value`);
  }

  private list(items: Picklable[]): void {
    this.op(0x5d);
    for (let i = 0; i < items.length; i += BATCH) {
      const end = Math.min(items.length, i + BATCH);
      if (end - i === 1) {
        this.value(items[i]);
        this.op(0x61);
        continue;
      }
      this.op(0x28);
      for (let j = i; j < end; j++) this.value(items[j]);
      this.op(0x65);
    }
  }

  private typedList(items: ArrayLike<number | bigint>, floats: boolean): void {
    this.op(0x5d);
    for (let i = 0; i < items.length; i += BATCH) {
      const end = Math.min(items.length, i + BATCH);
      this.op(0x28);
      for (let j = i; j < end; j++) {
        const x = items[j];
        if (typeof x === 'bigint') this.long(x);
        else if (floats) this.float(x);
        else this.int(x);
      }
      this.op(0x65);
    }
  }

  private tuple(items: Picklable[]): void {
    if (items.length === 0) return this.op(0x29);
    if (items.length <= 3) {
      for (const x of items) this.value(x);
      return this.op(0x84 + items.length);
    }
    this.op(0x28);
    for (const x of items) this.value(x);
    this.op(0x74);
  }

  private dict(entries: Iterator<[Picklable, Picklable]>, size: number): void {
    this.op(0x7d);
    if (size === 0) return;
    let n = 0;
    this.op(0x28);
    for (let e = entries.next(); !e.done; e = entries.next()) {
      if (n === BATCH) {
        this.op(0x75);
        this.op(0x28);
        n = 0;
      }
      this.value(e.value[0]);
      this.value(e.value[1]);
      n++;
    }
    this.op(0x75);
  }

  /** Protocol 2 has no bytes opcode: Python 3 writes `_codecs.encode(latin1_text, 'latin1')`. */
  private pyBytes(b: Uint8Array): void {
    if (b.length === 0) {
      this.qualGlobal('__builtin__', 'bytes');
      this.op(0x29);
      this.op(0x52);
      return;
    }
    this.qualGlobal('_codecs', 'encode');
    let text = '';
    for (let k = 0; k < b.length; k += 8192) text += String.fromCharCode(...b.subarray(k, k + 8192));
    this.str(text);
    this.str('latin1');
    this.op(0x86);
    this.op(0x52);
  }

  private persistentStorage(st: Storage): void {
    let key = this.storages.get(st);
    if (key === undefined) {
      key = String(this.storages.size);
      this.storages.set(st, key);
    }
    this.op(0x28);
    this.str('storage');
    this.qualGlobal('torch', STORAGE_CLASS[st.dtype]);
    this.str(key);
    this.str('cpu');
    this.int(st.numel);
    this.op(0x74);
    this.op(0x51); // BINPERSID
  }

  private tensor(t: Tensor): void {
    this.qualGlobal('torch._utils', '_rebuild_tensor_v2');
    this.op(0x28);
    this.persistentStorage(t.storage);
    this.int(t.storageOffset);
    this.tuple(t.shape);
    this.tuple(t.stride);
    this.op(t.requiresGrad ? 0x88 : 0x89);
    this.qualGlobal('collections', 'OrderedDict');
    this.op(0x29);
    this.op(0x52);
    this.op(0x74);
    this.op(0x52);
  }

  private object(o: PyObject): void {
    this.qualGlobal(o.module, o.name);
    if (o.args !== null) {
      this.tuple(o.args as Picklable[]);
      this.op(o.newobj ? 0x81 : 0x52);
    }
    if (o.listItems?.length) {
      this.op(0x28);
      for (const x of o.listItems) this.value(x);
      this.op(0x65);
    }
    if (o.items?.size) {
      this.op(0x28);
      for (const [k, x] of o.items) {
        this.value(k);
        this.value(x);
      }
      this.op(0x75);
    }
    if (o.state !== undefined) {
      this.value(o.state as Picklable);
      this.op(0x62);
    }
  }
}

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** UTF-8 with Python's surrogatepass, so lone surrogates survive a round trip. */
function encodeUtf8(v: string): Uint8Array {
  if (!/[\ud800-\udfff]/.test(v) || !LONE_SURROGATE.test(v)) return encoder.encode(v);
  const out: number[] = [];
  for (let i = 0; i < v.length; i++) {
    let c = v.charCodeAt(i);
    if (c >= 0xd800 && c < 0xdc00 && i + 1 < v.length) {
      const d = v.charCodeAt(i + 1);
      if (d >= 0xdc00 && d < 0xe000) {
        c = 0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00);
        i++;
      }
    }
    if (c < 0x80) out.push(c);
    else if (c < 0x800) out.push(0xc0 | (c >> 6), 0x80 | (c & 0x3f));
    else if (c < 0x10000) out.push(0xe0 | (c >> 12), 0x80 | ((c >> 6) & 0x3f), 0x80 | (c & 0x3f));
    else out.push(0xf0 | (c >> 18), 0x80 | ((c >> 12) & 0x3f), 0x80 | ((c >> 6) & 0x3f), 0x80 | (c & 0x3f));
  }
  return Uint8Array.from(out);
}

/** The protocol-2 pickle of `value` in memory (tensors become persistent ids numbered from "0"). */
export function pickleBytes(value: Picklable, file = '<memory>'): Uint8Array {
  const parts: Uint8Array[] = [];
  const sink = new Sink((c) => parts.push(c.slice()));
  new Pickler(sink, file).dump(value);
  sink.flush();
  const out = new Uint8Array(sink.length);
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

interface CentralRecord {
  name: Uint8Array;
  crc: number;
  size: number;
  offset: number;
}

/**
 * Writes `value` to `path` as torch.save(value, path) would: `<root>/data.pkl` (protocol 2),
 * `<root>/byteorder`, `<root>/data/<key>` (one per storage, 64-byte aligned), `<root>/version`.
 * The pickle streams to disk as it is produced; zip64 records appear when sizes need them.
 */
export async function saveTorch(value: Picklable, path: string, opts: SaveOptions = {}): Promise<void> {
  const root = opts.root ?? (basename(path).replace(/\.[^.]*$/, '') || 'archive');
  const fd = openSync(path, 'w');
  let offset = 0;
  const write = (b: Uint8Array): void => {
    let done = 0;
    while (done < b.length) done += writeSync(fd, b, done, b.length - done, offset + done);
    offset += b.length;
  };
  const central: CentralRecord[] = [];
  try {
    // data.pkl: sizes unknown until the pickle is done, so they follow in a zip64 data descriptor.
    const pklName = encoder.encode(`${root}/data.pkl`);
    const pklOffset = offset;
    write(localHeader(pklName, offset, 0, 0, true));
    const sink = new Sink(write);
    const pickler = new Pickler(sink, path);
    try {
      pickler.dump(value);
    } catch (err) {
      if (err instanceof RangeError) throw new PickleError(path, `cannot write: the value is nested too deeply (${err.message})`);
      throw err;
    }
    sink.flush();
    const desc = new DataView(new ArrayBuffer(24));
    desc.setUint32(0, 0x08074b50, true);
    desc.setUint32(4, sink.crc, true);
    desc.setBigUint64(8, BigInt(sink.length), true);
    desc.setBigUint64(16, BigInt(sink.length), true);
    write(new Uint8Array(desc.buffer));
    central.push({ name: pklName, crc: sink.crc, size: sink.length, offset: pklOffset });

    const record = (name: string, data: Uint8Array): void => {
      const n = encoder.encode(`${root}/${name}`);
      const crc = crc32(data);
      const at = offset;
      write(localHeader(n, offset, crc, data.length, false));
      write(data);
      central.push({ name: n, crc, size: data.length, offset: at });
    };
    record('byteorder', encoder.encode('little'));
    for (const [st, key] of pickler.storages) {
      const bytes = await st.bytes();
      const need = st.numel * DTYPE_BYTES[st.dtype];
      if (bytes.length < need) throw new PickleError(path, `cannot write: storage ${st.key} has ${bytes.length} bytes, needs ${need}`);
      record(`data/${key}`, bytes.subarray(0, need));
    }
    record('version', encoder.encode('3\n'));
    writeCentral(central, offset, write);
  } finally {
    closeSync(fd);
  }
}

const U32 = 0xffffffff;

/** Local header; an `FB` extra field pads the data start to 64 bytes, as torch's writer does. */
function localHeader(name: Uint8Array, at: number, crc: number, size: number, descriptor: boolean): Uint8Array {
  const big = descriptor || size >= U32;
  const zip64Len = big ? 20 : 0;
  const base = at + 30 + name.length + zip64Len + 4;
  const pad = (64 - (base % 64)) % 64;
  const extraLen = zip64Len + 4 + pad;
  const out = new Uint8Array(30 + name.length + extraLen);
  const dv = new DataView(out.buffer);
  dv.setUint32(0, 0x04034b50, true);
  dv.setUint16(4, big ? 45 : 20, true);
  dv.setUint16(6, descriptor ? 0x0808 : 0x0800, true);
  dv.setUint16(8, 0, true); // STORED
  dv.setUint16(10, 0, true);
  dv.setUint16(12, 0x21, true); // 1980-01-01
  dv.setUint32(14, descriptor ? 0 : crc, true);
  dv.setUint32(18, descriptor ? 0 : big ? U32 : size, true);
  dv.setUint32(22, descriptor ? 0 : big ? U32 : size, true);
  dv.setUint16(26, name.length, true);
  dv.setUint16(28, extraLen, true);
  out.set(name, 30);
  let e = 30 + name.length;
  if (big) {
    dv.setUint16(e, 0x0001, true);
    dv.setUint16(e + 2, 16, true);
    dv.setBigUint64(e + 4, BigInt(descriptor ? 0 : size), true);
    dv.setBigUint64(e + 12, BigInt(descriptor ? 0 : size), true);
    e += 20;
  }
  dv.setUint16(e, 0x4246, true); // "FB"
  dv.setUint16(e + 2, pad, true);
  out.fill(0x5a, e + 4, e + 4 + pad); // 'Z'
  return out;
}

function writeCentral(central: CentralRecord[], cdStart: number, write: (b: Uint8Array) => void): void {
  let cdSize = 0;
  for (const r of central) {
    const sizeBig = r.size >= U32;
    const offBig = r.offset >= U32;
    const extraLen = sizeBig || offBig ? 4 + (sizeBig ? 16 : 0) + (offBig ? 8 : 0) : 0;
    const out = new Uint8Array(46 + r.name.length + extraLen);
    const dv = new DataView(out.buffer);
    dv.setUint32(0, 0x02014b50, true);
    dv.setUint16(4, 0x031e, true);
    dv.setUint16(6, extraLen ? 45 : 20, true);
    dv.setUint16(8, 0x0800, true);
    dv.setUint16(10, 0, true);
    dv.setUint16(12, 0, true);
    dv.setUint16(14, 0x21, true);
    dv.setUint32(16, r.crc, true);
    dv.setUint32(20, sizeBig ? U32 : r.size, true);
    dv.setUint32(24, sizeBig ? U32 : r.size, true);
    dv.setUint16(28, r.name.length, true);
    dv.setUint16(30, extraLen, true);
    dv.setUint32(42, offBig ? U32 : r.offset, true);
    out.set(r.name, 46);
    if (extraLen) {
      let e = 46 + r.name.length;
      dv.setUint16(e, 0x0001, true);
      dv.setUint16(e + 2, extraLen - 4, true);
      e += 4;
      if (sizeBig) {
        dv.setBigUint64(e, BigInt(r.size), true);
        dv.setBigUint64(e + 8, BigInt(r.size), true);
        e += 16;
      }
      if (offBig) dv.setBigUint64(e, BigInt(r.offset), true);
    }
    write(out);
    cdSize += out.length;
  }
  const eocdAt = cdStart + cdSize;
  const need64 = central.length >= 0xffff || cdStart >= U32 || cdSize >= U32;
  if (need64) {
    const rec = new DataView(new ArrayBuffer(56 + 20));
    rec.setUint32(0, 0x06064b50, true);
    rec.setBigUint64(4, 44n, true);
    rec.setUint16(12, 0x031e, true);
    rec.setUint16(14, 45, true);
    rec.setBigUint64(24, BigInt(central.length), true);
    rec.setBigUint64(32, BigInt(central.length), true);
    rec.setBigUint64(40, BigInt(cdSize), true);
    rec.setBigUint64(48, BigInt(cdStart), true);
    rec.setUint32(56, 0x07064b50, true);
    rec.setBigUint64(64, BigInt(eocdAt), true);
    rec.setUint32(72, 1, true);
    write(new Uint8Array(rec.buffer));
  }
  const eocd = new DataView(new ArrayBuffer(22));
  eocd.setUint32(0, 0x06054b50, true);
  eocd.setUint16(8, need64 ? 0xffff : central.length, true);
  eocd.setUint16(10, need64 ? 0xffff : central.length, true);
  eocd.setUint32(12, need64 ? U32 : cdSize, true);
  eocd.setUint32(16, need64 ? U32 : cdStart, true);
  write(new Uint8Array(eocd.buffer));
}
