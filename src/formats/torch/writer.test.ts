import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { ZipArchive } from '../zip.ts';
import { openTorchFile } from './load.ts';
import { readTensor, readTensorNumbers } from './tensorData.ts';
import { unpickle } from './unpickle.ts';
import { pickleBytes, PyFloat, saveTorch } from './writer.ts';
import { PyEnum, PyObject, PyTuple, Storage, Tensor, type DType, type PyValue } from './value.ts';

const dir = mkdtempSync(join(tmpdir(), 'rlsight-writer-'));
after(() => rmSync(dir, { recursive: true, force: true }));

async function roundTrip(value: Parameters<typeof saveTorch>[0], name = 'rt.pt'): Promise<{ value: PyValue; path: string }> {
  const path = join(dir, name);
  await saveTorch(value, path);
  const f = await openTorchFile(path);
  await f.close();
  return { value: f.value, path };
}

function tensorOf(dtype: DType, bytes: Uint8Array, shape: number[], stride?: number[], offset = 0): Tensor {
  const st = Storage.fromBytes(`s-${dtype}`, dtype, bytes);
  const s = stride ?? shape.map((_, i) => shape.slice(i + 1).reduce((a, b) => a * b, 1));
  return new Tensor(dtype, shape, s, offset, st);
}

describe('saveTorch round trip', () => {
  it('scalars, strings, big and negative ints, non-finite floats', async () => {
    const v = {
      zero: 0, one: 1, m1: -1, b255: 255, b256: 256, b65535: 65535, b65536: 65536,
      i32min: -2147483648, i32max: 2147483647, beyond: 2147483648, n40: -(2 ** 40), safe: Number.MAX_SAFE_INTEGER,
      nsafe: -Number.MAX_SAFE_INTEGER,
      big: 2n ** 64n, nbig: -(2n ** 64n), big63: 2n ** 63n, nbig63: -(2n ** 63n), huge: 7n ** 400n, nhuge: -(7n ** 400n),
      f: 1.5, tiny: 5e-324, nan: NaN, inf: Infinity, ninf: -Infinity, negzero: -0, t: true, fl: false, none: null,
      s: 'plain', u: 'héllo wörld ✓ 𝄞', empty: '', lone: 'a\ud800b', long: 'x'.repeat(100_000) + 'é',
      __proto__key: 'ok',
    };
    const { value } = await roundTrip(v);
    assert.deepEqual(value, { ...v, safe: Number.MAX_SAFE_INTEGER });
    assert.ok(Object.is((value as any).negzero, -0), 'Object.is((value as any).negzero, -0)');
    assert.equal(typeof (value as any).big, 'bigint');
    assert.equal(typeof (value as any).safe, 'number');
  });

  it('a "__proto__" key stays a key', async () => {
    const v = JSON.parse('{"__proto__": 5, "a": 1}');
    const { value } = await roundTrip(v);
    assert.deepEqual(Object.keys(value as object), ['__proto__', 'a']);
    assert.equal(Object.getPrototypeOf(value), Object.prototype);
  });

  it('PyFloat forces a float for integral numbers', () => {
    const p = pickleBytes(new PyFloat(2));
    assert.equal(p[2], 0x47);
    assert.equal(unpickle(p, { file: 'x' }).value, 2);
  });

  it('nested containers: lists, tuples, dicts with any keys, sets, bytes', async () => {
    const v = {
      list: [1, [2, [3, []]], 'x'] as PyValue[],
      tuples: [PyTuple.of<PyValue>(), PyTuple.of<PyValue>(1), PyTuple.of<PyValue>(1, 2), PyTuple.of<PyValue>(1, 2, 3), PyTuple.of<PyValue>(1, 2, 3, 4, PyTuple.of<PyValue>('n'))],
      map: new Map<PyValue, PyValue>([[1, 'one'], [-(5n ** 30n), 'big'], [PyTuple.of<PyValue>(1, 'a'), [1]], ['s', null]]),
      set: new Set<PyValue>([1, 'a', PyTuple.of<PyValue>(2)]),
      bytes: new Uint8Array([0, 1, 127, 128, 255]),
      noBytes: new Uint8Array(0),
      manyItems: Array.from({ length: 2500 }, (_, i) => (i % 3 === 0 ? i * 1.25 : -i)),
      bigDict: Object.fromEntries(Array.from({ length: 1500 }, (_, i) => [`k${i}`, i])),
    };
    const { value } = await roundTrip(v) as { value: any };
    assert.deepEqual(value.list, v.list);
    assert.ok(value.tuples.every((t: unknown) => t instanceof PyTuple), 'value.tuples.every((t: unknown) => t instanceof PyTuple)');
    assert.deepEqual(value.tuples.map((t: PyValue[]) => [...t].length), [0, 1, 2, 3, 5]);
    assert.ok(value.tuples[4][4] instanceof PyTuple, 'value.tuples[4][4] instanceof PyTuple');
    assert.ok(value.map instanceof Map, 'value.map instanceof Map');
    const entries = [...value.map.entries()];
    assert.deepEqual(entries.map(([k]) => (k instanceof PyTuple ? [...k] : k)), [1, -(5n ** 30n), [1, 'a'], 's']);
    assert.deepEqual(value.set.size, 3);
    assert.ok(value.set.has(1) && value.set.has('a'), 'value.set.has(1) && value.set.has(\'a\')');
    assert.deepEqual(value.bytes, v.bytes);
    assert.deepEqual(value.noBytes, new Uint8Array(0));
    assert.deepEqual(value.manyItems, v.manyItems);
    assert.deepEqual(value.bigDict, v.bigDict);
  });

  it('typed arrays are written as Python lists', async () => {
    const { value } = await roundTrip({ f: new Float32Array([0.5, -1.25]), i: new Int32Array([1, -2, 70000]), l: new BigInt64Array([-1n, 2n ** 62n]) }) as { value: any };
    assert.deepEqual(value.f, [0.5, -1.25]);
    assert.deepEqual(value.i, [1, -2, 70000]);
    assert.deepEqual(value.l, [-1, 2n ** 62n]);
  });

  it('inert objects and enums are written back as their globals', async () => {
    const o = new PyObject('miles.utils.types', 'AdapterRef', []);
    o.newobj = true;
    o.state = { name: 'lora', slot: 3 };
    const v = { o, e: new PyEnum('miles.utils.types', 'Sample.Status', 'completed'), m: new PyEnum('pkg', 'Color', undefined, 'RED') };
    const { value } = await roundTrip(v) as { value: any };
    assert.ok(value.o instanceof PyObject, 'value.o instanceof PyObject');
    assert.equal(value.o.name, 'AdapterRef');
    assert.equal(value.o.newobj, true);
    assert.deepEqual(value.o.state, { name: 'lora', slot: 3 });
    assert.ok(value.e instanceof PyEnum, 'value.e instanceof PyEnum');
    assert.equal(value.e.name, 'Sample.Status');
    assert.equal(value.e.value, 'completed');
    assert.equal(value.m.member, 'RED');
  });

  it('every dtype of tensor, with views sharing a storage', async () => {
    const f32 = new Float32Array([1.5, -2, 3.25, NaN, Infinity, -0]);
    const f64 = new Float64Array([Math.PI, -1e300, 5e-324]);
    const i64 = new BigInt64Array([-1n, 2n ** 62n, -(2n ** 63n), 0n]);
    const i32 = new Int32Array([-2147483648, 7, 2147483647]);
    const i16 = new Int16Array([-32768, 1, 32767]);
    const i8 = new Int8Array([-128, 0, 127]);
    const u8 = new Uint8Array([0, 200, 255]);
    const bool = new Uint8Array([1, 0, 1]);
    const f16 = new Uint16Array([0x3c00, 0xc000, 0x7bff, 0x0001, 0x7c00, 0xfc00]); // 1, -2, 65504, 2^-24, inf, -inf
    const bf16 = new Uint16Array([0x3f80, 0xc040, 0x7f80, 0x0001]); // 1, -3, inf, tiny
    const b = (a: ArrayBufferView): Uint8Array => new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
    const base = tensorOf('float32', b(f32), [2, 3]);
    const v = {
      f32: base,
      f32T: new Tensor('float32', [3, 2], [1, 3], 0, base.storage),
      f32Row: new Tensor('float32', [3], [1], 3, base.storage),
      scalar: new Tensor('float32', [], [], 2, base.storage),
      f64: tensorOf('float64', b(f64), [3]),
      i64: tensorOf('int64', b(i64), [4]),
      i32: tensorOf('int32', b(i32), [3]),
      i16: tensorOf('int16', b(i16), [3]),
      i8: tensorOf('int8', b(i8), [3]),
      u8: tensorOf('uint8', b(u8), [3]),
      bool: tensorOf('bool', b(bool), [3]),
      f16: tensorOf('float16', b(f16), [6]),
      bf16: tensorOf('bfloat16', b(bf16), [2, 2]),
      empty: tensorOf('float32', new Uint8Array(0), [0]),
      grad: new Tensor('float32', [2], [1], 0, base.storage, true),
      list: [tensorOf('int64', b(new BigInt64Array([5n, 6n])), [2]), tensorOf('int64', b(new BigInt64Array([7n])), [1])],
    };
    const path = join(dir, 'tensors.pt');
    await saveTorch(v, path);
    const f = await openTorchFile(path);
    const r = f.value as any;
    try {
      assert.equal(f.storages.size, 13, 'views share their storage; each tensor of the list has its own');
      assert.deepEqual([...(await readTensor(r.f32))], [...f32]);
      assert.deepEqual([...(await readTensor(r.f32T))], [1.5, NaN, -2, Infinity, 3.25, -0]);
      assert.deepEqual([...(await readTensor(r.f32Row))], [NaN, Infinity, -0]);
      assert.deepEqual([...(await readTensor(r.scalar))], [3.25]);
      assert.deepEqual(r.scalar.shape, []);
      assert.deepEqual([...(await readTensor(r.f64))], [...f64]);
      assert.deepEqual([...(await readTensor(r.i64))], [...i64]);
      assert.deepEqual([...(await readTensorNumbers(r.i64))], [-1, 2 ** 62, -(2 ** 63), 0]);
      assert.deepEqual([...(await readTensor(r.i32))], [...i32]);
      assert.deepEqual([...(await readTensor(r.i16))], [...i16]);
      assert.deepEqual([...(await readTensor(r.i8))], [...i8]);
      assert.deepEqual([...(await readTensor(r.u8))], [...u8]);
      assert.deepEqual([...(await readTensor(r.bool))], [1, 0, 1]);
      assert.deepEqual([...(await readTensor(r.f16))], [1, -2, 65504, 2 ** -24, Infinity, -Infinity]);
      assert.deepEqual([...(await readTensor(r.bf16))], [1, -3, Infinity, 2 ** -133]);
      assert.deepEqual(r.bf16.shape, [2, 2]);
      assert.equal((await readTensor(r.empty)).length, 0);
      assert.equal(r.grad.requiresGrad, true);
      assert.equal(r.f32.requiresGrad, false);
      assert.deepEqual(r.f32T.stride, [1, 3]);
      assert.equal(r.f32Row.storageOffset, 3);
      assert.deepEqual([...(await readTensorNumbers(r.list[1]))], [7]);
      for (const key of Object.keys(v)) if (key !== 'list') assert.equal(r[key].dtype, (v as any)[key].dtype, key);
    } finally {
      await f.close();
    }
  });

  it('writes the torch zip layout: root, data.pkl first, 64-byte aligned storages, version, byteorder', async () => {
    const st = Storage.fromBytes('k', 'float32', new Uint8Array(new Float32Array([1, 2, 3]).buffer));
    const path = join(dir, 'layout_check.pt');
    await saveTorch({ t: new Tensor('float32', [3], [1], 0, st) }, path);
    const z = await ZipArchive.open(path);
    try {
      assert.deepEqual(z.entries.map((e) => e.name), ['layout_check/data.pkl', 'layout_check/byteorder', 'layout_check/data/0', 'layout_check/version']);
      assert.ok(z.entries.every((e) => e.method === 0), 'z.entries.every((e) => e.method === 0)');
      for (const e of z.entries) assert.equal((await z.dataStart(e)) % 64, 0, e.name);
      assert.equal(new TextDecoder().decode(await z.read('layout_check/version')), '3\n');
      assert.equal(new TextDecoder().decode(await z.read('layout_check/byteorder')), 'little');
      const pkl = await z.read('layout_check/data.pkl');
      assert.deepEqual([pkl[0], pkl[1]], [0x80, 2], 'protocol 2');
      // CRCs in the central directory match the data.
      const { crc32 } = await import('node:zlib');
      for (const e of z.entries) assert.equal(crc32(await z.read(e)), e.crc32, e.name);
    } finally {
      await z.close();
    }
    // data.pkl sizes live only in the central directory (local header sizes are zero), as torch writes them.
    const raw = readFileSync(path);
    assert.equal(raw.readUInt16LE(6) & 0x08, 0x08);
    assert.equal(raw.readUInt32LE(22), 0);
  });

  it('refuses cycles and non-Python values with a typed error naming the file', async () => {
    const a: any[] = [];
    a.push(a);
    await assert.rejects(saveTorch(a, join(dir, 'cycle.pt')), (e: Error) => e.name === 'PickleError' && e.message.includes('cycle.pt'));
    await assert.rejects(saveTorch({ f: (() => 1) as any }, join(dir, 'fn.pt')), /PickleError|not a Python value/);
    let deep: PyValue = [];
    for (let i = 0; i < 200_000; i++) deep = [deep];
    await assert.rejects(saveTorch(deep, join(dir, 'deep.pt')), (e: Error) => e.name === 'PickleError' && /nested too deeply/.test(e.message));
  });
});
