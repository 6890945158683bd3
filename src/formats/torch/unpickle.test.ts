import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { fixturePath } from '../../../test/support/fixtures.ts';
import { ZipArchive } from '../zip.ts';
import { PickleError, TorchFormatError } from './errors.ts';
import { decodeLong, unpickle, Unpickler, unpickleSource } from './unpickle.ts';
import { tensorDataFromBytes } from './tensorData.ts';
import { pickleBytes } from './writer.ts';
import { PyEnum, PyObject, PyTuple, Tensor, type PyValue } from './value.ts';

const data = JSON.parse(readFileSync(new URL('./pickles.test.json', import.meta.url), 'utf8')) as { pickles: Record<string, string> };
const hex = (h: string): Uint8Array => Uint8Array.from(Buffer.from(h, 'hex'));
const bytes = (...b: number[]): Uint8Array => Uint8Array.from(b);

/** What CPython's pickles of the test value decode to (protocol-dependent details aside). */
const EXPECTED_INTS = [
  0, 1, -1, 255, 256, -256, 65535, 65536, 2 ** 31 - 1, -(2 ** 31), 2 ** 31, -(2 ** 40),
  2n ** 53n, 2n ** 63n, -(2n ** 63n), 2n ** 64n, -(2n ** 64n) - 1n, 10n ** 30n,
];

async function tensorValues(t: PyValue): Promise<number[]> {
  assert.ok(t instanceof Tensor, 't instanceof Tensor');
  return [...tensorDataFromBytes(t, await t.storage.bytes())].map(Number);
}

describe('CPython pickles, protocols 0–5', () => {
  for (const proto of ['0', '1', '2', '3', '4', '5']) {
    it(`protocol ${proto}`, async () => {
      const r = unpickle(hex(data.pickles[proto]), { file: `p${proto}.pkl` });
      assert.equal(r.protocol, Number(proto) >= 2 ? Number(proto) : 0);
      const v = r.value as any;
      assert.deepEqual(v.ints, EXPECTED_INTS);
      assert.deepEqual(v.floats, [0, -0, 1.5, NaN, Infinity, -Infinity, 1e-310]);
      assert.deepEqual(v.strs, ['', 'abc', 'héllo ✓ 𝄞', 'x'.repeat(300)]);
      assert.deepEqual(v.tuple, PyTuple.of<PyValue>(1, PyTuple.of(2), PyTuple.of(), PyTuple.of(1, 2, 3, 4)));
      assert.deepEqual(v.set, new Set([1, 2]));
      assert.deepEqual(v.fset, new Set(['a']));
      assert.deepEqual(v.bytes, bytes(0, 255, 0x80, 0x61, 0x62));
      assert.deepEqual(v.empty_bytes, new Uint8Array(0));
      assert.deepEqual(v.barr, bytes(0x78, 0x79));
      assert.deepEqual([...v.odict.entries()], [['b', 1], ['a', 2]]);
      assert.ok(v.intkeys instanceof Map, 'v.intkeys instanceof Map');
      assert.deepEqual([...v.intkeys.entries()], [[1, 'one'], [PyTuple.of(2, 3), 'tup']]);
      assert.deepEqual(v.enum, new PyEnum('pkg.types', 'Color', 1));
      assert.deepEqual(v.nested_enum, new PyEnum('pkg.types', 'Sample.Status', 'completed'));
      assert.ok(v.obj instanceof PyObject, 'v.obj instanceof PyObject');
      assert.equal(`${v.obj.module}.${v.obj.name}`, 'pkg.types.Adapter');
      assert.deepEqual(v.obj.state, { name: 'lora', slot: 3 });
      assert.equal(v.none, null);
      assert.deepEqual(v.bools, [true, false]);
      assert.equal(v.np_f32, 1.5);
      assert.equal(v.np_i64, -7);
      assert.equal(v.np_f64, 0.25);
      assert.equal(v.np_bool, true);
      assert.equal(v.np_arr.dtype, 'int32');
      assert.deepEqual(v.np_arr.shape, [2, 3]);
      assert.deepEqual(await tensorValues(v.np_arr), [0, 1, 2, 3, 4, 5]);
      assert.equal(v.np_f.dtype, 'float64');
      assert.deepEqual(await tensorValues(v.np_f), [0.5, -1], 'big-endian numpy data is swapped');
      assert.deepEqual(await tensorValues(v.np_fortran), [0, 1, 2, 3, 4, 5], 'Fortran-ordered data read row-major');
      assert.equal(v.shared[0], v.shared[1], 'memoized objects stay shared');
      if (Number(proto) >= 4) assert.ok(r.opcodes.includes('FRAME') && r.opcodes.includes('MEMOIZE'), 'r.opcodes.includes(\'FRAME\') && r.opcodes.includes(\'MEMOIZE\')');
      assert.ok(r.globals.some((g) => /^numpy(\._core|\.core)\.multiarray\.scalar$/.test(g)), 'r.globals.some((g) => /^numpy(\\._core|\\.core)\\.multiarray\\.scalar$/.test(g))');
    });
  }

  it('numpy.core (numpy 1.x) names decode like numpy._core', async () => {
    const p2 = Buffer.from(data.pickles['2'], 'hex').toString('latin1').replaceAll('numpy._core.multiarray', 'numpy.core.multiarray');
    const v = unpickle(Uint8Array.from(Buffer.from(p2, 'latin1')), { file: 'np1.pkl' }).value as any;
    assert.equal(v.np_f32, 1.5);
    assert.deepEqual(await tensorValues(v.np_arr), [0, 1, 2, 3, 4, 5]);
  });

  it('decodes identically through a tiny streaming window', () => {
    for (const proto of ['2', '4', '5']) {
      const b = hex(data.pickles[proto]);
      const whole = unpickle(b, { file: 'w' });
      const windowed = unpickleSource({ size: b.length, read: (pos, into, off, len) => (into.set(b.subarray(pos, pos + len), off), Math.min(len, b.length - pos)) }, { file: 'w' }, 16);
      assert.deepEqual(JSON.stringify(windowed.value, replacer), JSON.stringify(whole.value, replacer));
      assert.deepEqual(windowed.opcodes, whole.opcodes);
    }
  });

  it('decodes identically when advanced a few opcodes at a time, in memory and through a window', () => {
    for (const proto of ['2', '4', '5']) {
      const b = hex(data.pickles[proto]);
      const source = { size: b.length, read: (pos: number, into: Uint8Array, off: number, len: number) => (into.set(b.subarray(pos, pos + len), off), Math.min(len, b.length - pos)) };
      for (const budget of [1, 3]) {
        // (A window too small for a whole number list decodes it as a plain list: compared with its own kind.)
        for (const [input, whole] of [
          [b, unpickle(b, { file: 'w', typedLists: true })],
          [source, unpickleSource(source, { file: 'w', typedLists: true }, 16)],
        ] as const) {
          const u = new Unpickler(input, { file: 'w', typedLists: true }, 16);
          let steps = 0;
          let r = u.advance(budget);
          for (; r === null; r = u.advance(budget)) steps++;
          assert.ok(steps > 3, `proto ${proto}: ${steps} pauses`);
          assert.equal(JSON.stringify(r.value, replacer), JSON.stringify(whole.value, replacer));
          assert.deepEqual([r.protocol, r.opcodes, r.globals], [whole.protocol, whole.opcodes, whole.globals]);
          assert.equal(u.advance(budget), r, 'a finished decode answers its value again');
        }
      }
    }
  });
});

function replacer(_k: string, v: unknown): unknown {
  if (typeof v === 'bigint') return `${v}n`;
  if (v instanceof Map) return { map: [...v.entries()] };
  if (v instanceof Set) return { set: [...v] };
  if (v instanceof Uint8Array) return { bytes: [...v] };
  if (typeof v === 'number' && !Number.isFinite(v)) return String(v);
  if (v instanceof Tensor) return { tensor: [v.dtype, v.shape, v.stride, v.storageOffset] };
  return v;
}

describe('integers', () => {
  it('LONG1 is two\'s complement: -1 is -1, not 255', () => {
    assert.equal(unpickle(bytes(0x80, 2, 0x8a, 1, 0xff, 0x2e), { file: 'x' }).value, -1);
    assert.equal(unpickle(bytes(0x80, 2, 0x8a, 0, 0x2e), { file: 'x' }).value, 0);
    assert.equal(unpickle(bytes(0x80, 2, 0x8a, 2, 0x00, 0x80, 0x2e), { file: 'x' }).value, -32768);
  });
  it('numbers while safe, bigint beyond', () => {
    const le = (v: bigint, n: number): number[] => Array.from({ length: n }, (_, i) => Number((BigInt.asUintN(8 * n, v) >> BigInt(8 * i)) & 0xffn));
    const cases: [bigint, number][] = [[-(2n ** 40n), 6], [2n ** 53n - 1n, 7], [2n ** 53n, 7], [-(2n ** 53n) + 1n, 7], [-(2n ** 63n), 8], [2n ** 63n, 9], [-(2n ** 100n), 13]];
    for (const [v, n] of cases) {
      const got = decodeLong(Uint8Array.from(le(v, n)), 0, n);
      const safe = v >= -(2n ** 53n) + 1n && v <= 2n ** 53n - 1n;
      assert.equal(got, safe ? Number(v) : v, `${v}`);
    }
  });
  it('LONG4 of a big value', () => {
    const n = 300;
    const body = new Uint8Array(n).fill(0xff); // -1 in 300 bytes
    const p = new Uint8Array([0x80, 2, 0x8b, n & 0xff, n >> 8, 0, 0, ...body, 0x2e]);
    assert.equal(unpickle(p, { file: 'x' }).value, -1);
  });
});

describe('globals', () => {
  it('an unknown global is recorded inertly, never run', () => {
    // os.system('echo hi') as pickled by protocol 2
    const p = Buffer.concat([Buffer.from([0x80, 2]), Buffer.from('cos\nsystem\nX\x07\x00\x00\x00echo hi\x85R.', 'latin1')]);
    const r = unpickle(Uint8Array.from(p), { file: 'evil.pkl' });
    assert.ok(r.value instanceof PyObject, 'r.value instanceof PyObject');
    assert.deepEqual([r.value.module, r.value.name, [...(r.value.args ?? [])]], ['os', 'system', ['echo hi']]);
    assert.deepEqual(r.globals, ['os.system']);
  });
  it('a global the reader does not allow is refused where the pickle first names it, never run', () => {
    const p = Buffer.concat([Buffer.from([0x80, 2]), Buffer.from('cos\nsystem\nX\x07\x00\x00\x00echo hi\x85R.', 'latin1')]);
    assert.throws(
      () => unpickle(Uint8Array.from(p), { file: 'evil.pkl', allowGlobal: (name) => name.startsWith('torch.') }),
      (e: unknown) => e instanceof PickleError && /^evil\.pkl: pickle opcode GLOBAL at offset 2: names the global os\.system, which this kind of file never holds; refused \(nothing was executed\)$/.test(e.message),
    );
    // an allowed one decodes as ever
    assert.equal(unpickle(Uint8Array.from(p), { file: 'ok.pkl', allowGlobal: (name) => name === 'os.system' }).globals[0], 'os.system');
  });
  it('a bare global reference is a PyObject with no args', () => {
    const r = unpickle(Uint8Array.from(Buffer.from('\x80\x02cnumpy\nndarray\n.', 'latin1')), { file: 'g' });
    assert.ok(r.value instanceof PyObject && r.value.args === null && r.value.name === 'ndarray', 'r.value instanceof PyObject && r.value.args === null && r.value.name === \'ndarr');
  });
  it('getattr(Class, "MEMBER") is an enum member by name', () => {
    const p = Buffer.from('\x80\x02c__builtin__\ngetattr\ncpkg\nColor\nX\x03\x00\x00\x00RED\x86R.', 'latin1');
    const v = unpickle(Uint8Array.from(p), { file: 'g' }).value;
    assert.deepEqual(v, new PyEnum('pkg', 'Color', undefined, 'RED'));
  });
  it('persistent ids without a loader stay inert', () => {
    const v = unpickle(Uint8Array.from(Buffer.from('\x80\x02X\x01\x00\x00\x00kQ.', 'latin1')), { file: 'p' }).value;
    assert.ok(v instanceof PyObject && v.name === 'persistent_id', 'v instanceof PyObject && v.name === \'persistent_id\'');
  });
});

describe('typedLists', () => {
  it('numeric lists become Int32Array / Float64Array; others stay plain', () => {
    const r = unpickle(hex(data.pickles['4']), { file: 'p4', typedLists: true }).value as any;
    assert.ok(r.floats instanceof Float64Array, 'floats typed');
    assert.deepEqual([...r.floats], [0, -0, 1.5, NaN, Infinity, -Infinity, 1e-310]);
    assert.ok(Array.isArray(r.ints), 'big ints keep the list plain');
    assert.deepEqual(r.ints, EXPECTED_INTS);
    assert.ok(r.shared[0] instanceof Int32Array, 'int list typed');
    assert.equal(r.shared[0], r.shared[1], 'memo references follow the typed list');
    assert.ok(Array.isArray(r.strs), 'string lists stay plain');
  });
  it('a typed list that continues with other items turns back into a plain list', () => {
    const ints = Array.from({ length: 1500 }, (_, i) => i * 1000);
    const list = [...ints, 'x'];
    const shared = { a: list, b: 3 };
    const r = unpickle(pickleBytes([shared, Array.from({ length: 2100 }, (_, i) => i / 4)]), { file: 'l', typedLists: true }).value as any;
    assert.ok(Array.isArray(r[0].a), 'plain again');
    assert.deepEqual(r[0].a, list);
    assert.ok(r[1] instanceof Float64Array, 'floats typed');
    assert.equal(r[1].length, 2100);
    assert.equal(r[1][2099], 2099 / 4);
  });
});

describe('typedLists through a window', () => {
  it('decodes the same numbers as plain lists, whatever the window cuts', () => {
    const n = 9000; // past the decoder's first scratch size
    const lists = [
      Array.from({ length: n }, (_, i) => (i * 7919) % 70000),
      Array.from({ length: n }, (_, i) => Math.sin(i) * 3),
      Array.from({ length: 40 }, (_, i) => (i % 2 ? -i : i * 1e6)),
    ];
    const bytes = pickleBytes(lists);
    const plain = unpickle(bytes, { file: 'w' }).value as number[][];
    for (const window of [64, 1000, 1 << 20]) {
      const typed = unpickleSource(
        { size: bytes.length, read: (position, into, offset, length) => (into.set(bytes.subarray(position, position + length), offset), Math.min(length, bytes.length - position)) },
        { file: 'w', typedLists: true },
        window,
      ).value as ArrayLike<number>[];
      typed.forEach((list, k) => assert.deepEqual(Array.from(list), plain[k], `list ${k}, window ${window}`));
      if (window === 1 << 20) {
        assert.ok(typed[0] instanceof Int32Array && typed[1] instanceof Float64Array && typed[2] instanceof Int32Array, 'one buffer: all typed');
      }
    }
  });
});

describe('lengthOnlyUnder through a window', () => {
  it('counts as many numbers as the full decode holds, whatever the window cuts and however the widths mix', () => {
    const n = 9000;
    const samples = [
      // runs of each width, and widths changing item by item
      { tokens: Array.from({ length: n }, (_, i) => (i < 3000 ? i % 200 : i < 6000 ? 300 + i : 70000 + i)), rollout_log_probs: Array.from({ length: n }, (_, i) => Math.sin(i)) },
      { tokens: Array.from({ length: n }, (_, i) => [5, 700, 90000][i % 3]), rollout_log_probs: Array.from({ length: 1001 }, (_, i) => (i % 2 ? i : -i / 3)) },
      { tokens: [7], rollout_log_probs: [] },
    ];
    const bytes = pickleBytes(samples);
    const full = unpickle(bytes, { file: 'w', typedLists: true }).value as Record<string, ArrayLike<number>>[];
    for (const window of [64, 1000, 1 << 20]) {
      const counted = unpickleSource(
        { size: bytes.length, read: (position, into, offset, length) => (into.set(bytes.subarray(position, position + length), offset), Math.min(length, bytes.length - position)) },
        { file: 'w', typedLists: true, lengthOnlyUnder: new Set(['tokens', 'rollout_log_probs']) },
        window,
      ).value as Record<string, ArrayLike<number>>[];
      counted.forEach((s, k) => {
        for (const key of ['tokens', 'rollout_log_probs']) assert.equal(s[key].length, full[k][key].length, `sample ${k} ${key}, window ${window}`);
      });
    }
  });
});

describe('deep nesting', () => {
  it('refuses 200,000 nested lists with a PickleError (every reader of such a value would overflow its stack)', () => {
    const n = 200_000;
    const b = new Uint8Array(2 + 2 * n + 1);
    b.set([0x80, 2]);
    b.fill(0x5d, 2, 2 + n); // EMPTY_LIST x n
    b.fill(0x61, 2 + n, 2 + 2 * n - 1); // APPEND x (n - 1)
    b[2 + 2 * n - 1] = 0x2e;
    assert.throws(() => unpickle(b.subarray(0, 2 + 2 * n), { file: 'deep' }), (e: unknown) => e instanceof PickleError && /^deep: .*nested deeper than/.test(e.message));
  });
});

describe('bad pickles give a PickleError naming the file, opcode and offset', () => {
  const bad = (b: Uint8Array, re: RegExp, opcode?: string, offset?: number): void => {
    assert.throws(() => unpickle(b, { file: 'bad.pkl' }), (e: unknown) => {
      assert.ok(e instanceof PickleError, String(e));
      assert.match(e.message, /^bad\.pkl: /);
      assert.match(e.message, re);
      if (opcode !== undefined) assert.equal(e.opcode, opcode);
      if (offset !== undefined) assert.equal(e.offset, offset);
      return true;
    });
  };
  it('unknown opcode', () => bad(bytes(0x80, 2, 0xfe, 0x2e), /unknown opcode/, '0xfe', 2));
  it('truncated input', () => {
    bad(bytes(0x80, 2, 0x4b), /truncated/, 'BININT1', 2);
    bad(bytes(0x80, 2, 0x58, 10, 0, 0, 0, 0x61), /truncated/, 'BINUNICODE', 2);
    bad(bytes(0x80, 2, 0x4e), /truncated.*before STOP/);
    bad(new Uint8Array(0), /truncated/);
  });
  it('stack underflow', () => {
    bad(bytes(0x80, 2, 0x2e), /underflow/, 'STOP');
    bad(bytes(0x80, 2, 0x4e, 0x52, 0x2e), /underflow/, 'REDUCE');
    bad(bytes(0x80, 2, 0x5d, 0x28, 0x61, 0x2e), /underflow/, 'APPEND');
  });
  it('missing MARK, missing memo, impossible sizes', () => {
    bad(bytes(0x80, 2, 0x5d, 0x65, 0x2e), /no MARK/, 'APPENDS');
    bad(bytes(0x80, 2, 0x68, 7, 0x2e), /memo key 7/, 'BINGET');
    bad(bytes(0x80, 2, 0x8e, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 0x2e), /impossible length/, 'BINBYTES8');
    bad(bytes(0x80, 2, 0x8b, 0xff, 0xff, 0xff, 0xff, 0x2e), /negative/, 'LONG4');
    bad(bytes(0x80, 9, 0x2e), /protocol 9/, 'PROTO');
  });
  it('calling a non-callable', () => bad(bytes(0x80, 2, 0x4b, 1, 0x29, 0x52, 0x2e), /cannot call/, 'REDUCE'));
});

/** Errors a broken pickle may raise: ours, nothing else. */
function isOurs(e: unknown): boolean {
  return e instanceof PickleError || e instanceof TorchFormatError;
}

describe('property: random and damaged pickles end in a value or our typed error', () => {
  const samples = ['2', '4', '5'].map((p) => hex(data.pickles[p]));
  let rolloutPkl: Uint8Array;
  it('loads a real torch data.pkl to damage', async () => {
    const z = await ZipArchive.open(fixturePath('miles-demo', 'run', 'train_data', '1_2.pt'));
    rolloutPkl = await z.read('1_2/data.pkl');
    await z.close();
    samples.push(rolloutPkl);
  });
  const tryDecode = (b: Uint8Array, windowBytes?: number): void => {
    try {
      if (windowBytes) unpickleSource({ size: b.length, read: (pos, into, off, len) => (into.set(b.subarray(pos, pos + len), off), Math.min(len, b.length - pos)) }, { file: 'f' }, windowBytes);
      else unpickle(b, { file: 'f' });
    } catch (e) {
      if (!isOurs(e)) throw e;
    }
  };
  it('random bytes', { timeout: 120_000 }, () => {
    fc.assert(fc.property(fc.uint8Array({ maxLength: 400 }), (b) => tryDecode(b)), { numRuns: 3000 });
    fc.assert(fc.property(fc.uint8Array({ maxLength: 400 }), (b) => tryDecode(Uint8Array.from([0x80, 2, ...b]))), { numRuns: 3000 });
  });
  it('truncated real pickles', { timeout: 120_000 }, () => {
    fc.assert(
      fc.property(fc.nat(samples.length - 1), fc.double({ min: 0, max: 1, noNaN: true }), (i, f) => {
        const s = samples[i];
        const cut = Math.floor(s.length * f);
        assert.throws(() => unpickle(s.subarray(0, Math.min(cut, s.length - 1)), { file: 'f' }), isOurs);
      }),
      { numRuns: 500 },
    );
  });
  it('mutated real pickles (also through a small window)', { timeout: 120_000 }, () => {
    fc.assert(
      fc.property(fc.nat(samples.length - 1), fc.array(fc.tuple(fc.double({ min: 0, max: 1, noNaN: true }), fc.integer({ min: 0, max: 255 })), { minLength: 1, maxLength: 8 }), fc.boolean(), (i, muts, windowed) => {
        const s = samples[i].slice();
        for (const [f, byte] of muts) s[Math.floor(f * (s.length - 1))] = byte;
        tryDecode(s, windowed ? 64 : undefined);
      }),
      { numRuns: 1500 },
    );
  });
});

describe('unpickler on the fixture pickles', () => {
  it('a train dump pickle decodes without a storage loader (storages inert)', async () => {
    const z = await ZipArchive.open(join(fixturePath('miles-demo', 'run'), 'train_data', '0_0.pt'));
    const pkl = await z.read('0_0/data.pkl');
    await z.close();
    const v = unpickle(pkl, { file: '0_0.pt' }).value as any;
    assert.ok(v.rollout_data.tokens[0] instanceof PyObject, 'no storage loader: the tensor call stays a record');
  });
});
