import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { after, describe, it } from 'node:test';
import fc from 'fast-check';
import { ZipArchive, ZipError } from '../zip.ts';
import { PickleError, TorchFormatError } from './errors.ts';
import { saveTorch } from './writer.ts';
import { fixturePath, readFixtureJson } from '../../../test/support/fixtures.ts';
import { matchesDecoded } from '../../../test/support/decoded.ts';
import { loadTorch, openTorchArchive, openTorchFile } from './load.ts';
import { readTensor, readTensorNumbers } from './tensorData.ts';
import { PyEnum, PyObject, PyTuple, Storage, Tensor, type PyValue } from './value.ts';

const runDir = fixturePath('miles-demo', 'run');

function ptFiles(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir).sort()) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...ptFiles(p));
    else if (name.endsWith('.pt')) out.push(p);
  }
  return out;
}

describe('every .pt of the miles-demo run decodes to what torch.load returned', () => {
  const files = ptFiles(runDir);
  it('finds the fixture files', () => assert.equal(files.length, 16));
  for (const file of files) {
    const rel = relative(runDir, file);
    it(rel, async () => {
      const want = readFixtureJson('miles-demo', 'decoded', `${rel}.json`);
      const f = await openTorchFile(file);
      try {
        assert.equal(f.protocol, want.pickle_protocol);
        assert.deepEqual(
          f.entries.map((e) => ({ name: e.name, size: e.size, compress_type: e.method })),
          want.zip_entries,
        );
        assert.equal(`${f.root}/data.pkl`, want.data_pkl);
        assert.deepEqual(f.globals, want.pickle_globals);
        assert.deepEqual(f.opcodes, want.pickle_opcodes);
        assert.deepEqual(
          [...f.storages.values()].map((s) => ({ key: s.key, dtype: s.dtype, numel: s.numel })),
          want.storages.map((s: any) => ({ key: s.key, dtype: STORAGE_DTYPE[s.storage_type], numel: s.numel })),
        );
        assert.equal(await matchesDecoded(f.value, want.value), null);
      } finally {
        await f.close();
      }
      const typed = await openTorchFile(file, { typedLists: true });
      await typed.close();
      assert.equal(await matchesDecoded(typed.value, want.value), null, 'typedLists decode the same numbers');
    });
  }
});

const STORAGE_DTYPE: Record<string, string> = {
  'torch.LongStorage': 'int64',
  'torch.IntStorage': 'int32',
  'torch.FloatStorage': 'float32',
  'torch.DoubleStorage': 'float64',
  'torch.BFloat16Storage': 'bfloat16',
  'torch.HalfStorage': 'float16',
  'torch.BoolStorage': 'bool',
  'torch.ByteStorage': 'uint8',
};

describe('a data.pkl too big for one buffer streams through a window', () => {
  it('decodes an archive opened with blocking reads, streaming or from loaded bytes', async () => {
    for (const rel of [['rollout_data', '1.pt'], ['train_data', '2_2.pt']]) {
      const want = readFixtureJson('miles-demo', 'decoded', rel[0], `${rel[1]}.json`);
      const streamed = await openTorchArchive(ZipArchive.openSync(join(runDir, ...rel), { wholeFileBelow: 0 }), { wholePickleLimit: 0, pickleWindowBytes: 64 });
      assert.equal(await matchesDecoded(streamed.value, want.value), null, `${rel}: streamed`);
      const archive = ZipArchive.openSync(join(runDir, ...rel), { wholeFileBelow: 0 });
      archive.loadSync(archive.entries);
      const loaded = await openTorchArchive(archive);
      const tensors = [...loaded.storages.values()].map((st) => st.bytes());
      archive.releaseBytes();
      // Storages read while the bytes were held are copies, not views of memory that is then released.
      for (const b of await Promise.all(tensors)) assert.equal(b.byteOffset, 0);
      assert.equal(await matchesDecoded(loaded.value, want.value), null, `${rel}: loaded`);
    }
  });

  it('decodes the same value with a 64-byte window', async () => {
    for (const rel of [['rollout_data', '1.pt'], ['train_data', '2_2.pt']]) {
      const f = await openTorchFile(join(runDir, ...rel), { wholePickleLimit: 0, pickleWindowBytes: 64 });
      try {
        const want = readFixtureJson('miles-demo', 'decoded', rel[0], `${rel[1]}.json`);
        assert.equal(await matchesDecoded(f.value, want.value), null);
      } finally {
        await f.close();
      }
    }
  });
});

describe('storages are lazy and survive close()', () => {
  it('reads nothing until a tensor is read, then reopens after close', async () => {
    const f = await openTorchFile(join(runDir, 'train_data', '0_0.pt'), { wholeFileBelow: 0 });
    const tokens = (f.value as any).rollout_data.tokens as Tensor[];
    assert.ok(tokens[0] instanceof Tensor, 'tokens[0] instanceof Tensor');
    assert.ok([...f.storages.values()].every((s) => !s.loaded), '[...f.storages.values()].every((s) => !s.loaded)');
    const first = await readTensor(tokens[0]);
    assert.equal(first.length, tokens[0].numel);
    await f.close();
    const later = await readTensorNumbers(tokens[1]);
    const want = readFixtureJson('miles-demo', 'decoded', 'train_data', '0_0.pt.json').value.rollout_data.tokens[1].data;
    assert.deepEqual([...later], want);
    assert.ok(later instanceof Float64Array, 'later instanceof Float64Array');
  });

  it('loadTorch closes the file and still serves tensors', async () => {
    const v = (await loadTorch(join(runDir, 'train_data', '2_3.pt'))) as any;
    const lp = await readTensor(v.rollout_data.log_probs[0]);
    assert.ok(lp instanceof Float32Array, 'lp instanceof Float32Array');
    assert.equal(lp.length, v.rollout_data.log_probs[0].numel);
  });

  it('gives zero-copy aligned views for contiguous storages', async () => {
    for (const wholeFileBelow of [0, undefined]) {
    const f = await openTorchFile(join(runDir, 'train_data', '1_0.pt'), { wholeFileBelow });
    try {
      const t = (f.value as any).rollout_data.rollout_log_probs[2] as Tensor;
      const a = await readTensor(t);
      const b = await readTensor(t);
      assert.equal(a.buffer, b.buffer, 'both views share the storage buffer');
      assert.equal(a.byteOffset % 4, 0);
    } finally {
      await f.close();
    }
    }
  });
});

describe('archives written by torch 1.13 (views, parameters, half types, protocol 4)', () => {
  const torchFiles = (JSON.parse(readFileSync(new URL('./pickles.test.json', import.meta.url), 'utf8')) as { torch: Record<string, string> }).torch;
  const tmp = mkdtempSync(join(tmpdir(), 'rlsight-load-'));
  after(() => rmSync(tmp, { recursive: true, force: true }));
  const put = (name: string): string => {
    const p = join(tmp, name);
    writeFileSync(p, Buffer.from(torchFiles[name], 'base64'));
    return p;
  };

  it('views.pt', async () => {
    const f = await openTorchFile(put('views.pt'));
    const v = f.value as any;
    try {
      assert.equal(f.root, 'views');
      assert.equal(f.byteorder, 'little');
      const check = async (t: Tensor, dtype: string, shape: number[], stride: number[], offset: number, data: number[]): Promise<void> => {
        assert.deepEqual([t.dtype, t.shape, t.stride, t.storageOffset], [dtype, shape, stride, offset]);
        assert.deepEqual([...(await readTensorNumbers(t))], data);
      };
      await check(v.t, 'float32', [3, 2], [1, 3], 0, [0, 3, 1, 4, 2, 5]);
      await check(v.bf, 'bfloat16', [2], [1], 0, [1, -3]);
      await check(v.h, 'float16', [2], [1], 0, [1, 2]);
      await check(v.i64, 'int64', [2], [1], 0, [-1, 2 ** 62]);
      assert.deepEqual([...(await readTensor(v.i64))], [-1n, 2n ** 62n]);
      await check(v.b, 'bool', [2], [1], 0, [1, 0]);
      await check(v.u8, 'uint8', [1], [1], 0, [200]);
      await check(v.p, 'float32', [2], [1], 0, [1, 1]);
      assert.equal(v.p.requiresGrad, true);
      await check(v.scalar, 'float32', [], [], 0, [3.5]);
      await check(v.row, 'int64', [4], [1], 4, [4, 5, 6, 7]);
      await check(v.col, 'int64', [3], [4], 2, [2, 6, 10]);
      assert.equal(v.big, -(2 ** 40));
      assert.deepEqual([...v.od.entries()], [['a', 1]]);
      assert.ok(f.globals.includes('torch._utils._rebuild_parameter'), 'names _rebuild_parameter');
    } finally {
      await f.close();
    }
  });

  it('proto4.pt', async () => {
    const f = await openTorchFile(put('proto4.pt'));
    try {
      assert.equal(f.protocol, 4);
      const v = f.value as any;
      assert.deepEqual([...(await readTensor(v[0]))], [0, 0, 0]);
      assert.equal(v[0].dtype, 'float64');
      assert.deepEqual([...v[1].k], [1, 2.5]);
    } finally {
      await f.close();
    }
  });
});

describe('bad torch files name the file and the problem', () => {
  const tmp = mkdtempSync(join(tmpdir(), 'rlsight-badpt-'));
  after(() => rmSync(tmp, { recursive: true, force: true }));

  it('not a zip / truncated archive', async () => {
    const p = join(tmp, 'legacy.pt');
    writeFileSync(p, Buffer.from('\x80\x02\x8a\x0alegacy torch pickle, not a zip archive at all', 'latin1'));
    await assert.rejects(openTorchFile(p), (e: unknown) => e instanceof ZipError && e.message.startsWith(p) && /not a zip/.test(e.message));
    const raw = readFileSync(join(runDir, 'train_data', '0_0.pt'));
    const cut = join(tmp, 'cut.pt');
    writeFileSync(cut, raw.subarray(0, raw.length - 100));
    await assert.rejects(openTorchFile(cut), (e: unknown) => e instanceof ZipError && /cut\.pt: truncated archive/.test(e.message));
  });

  it('a zip without data.pkl', async () => {
    const p = join(tmp, 'nopkl.pt');
    await saveTorch({ a: 1 }, p, { root: 'x' });
    const raw = readFileSync(p);
    // Rename the entry in both headers: same length, different name.
    const renamed = Buffer.from(raw.toString('latin1').replaceAll('x/data.pkl', 'x/data.pkk'), 'latin1');
    writeFileSync(p, renamed);
    await assert.rejects(openTorchFile(p), (e: unknown) => e instanceof TorchFormatError && /nopkl\.pt: not a torch archive: no <root>\/data\.pkl/.test(e.message));
  });

  it('a storage entry smaller than its element count, or missing', async () => {
    const st = Storage.fromBytes('k', 'float32', new Uint8Array(new Float32Array([1, 2, 3, 4]).buffer));
    const p = join(tmp, 'small.pt');
    await saveTorch({ t: new Tensor('float32', [4], [1], 0, st) }, p);
    const raw = readFileSync(p);
    // numel 4 is pickled as BININT1 4 right before TUPLE, BINPERSID: claim 400 instead.
    const at = raw.indexOf(Buffer.from([0x4b, 4, 0x74, 0x51]));
    assert.ok(at > 0, 'found the pickled element count');
    const big = Buffer.from(raw);
    big[at + 1] = 200;
    writeFileSync(p, big);
    await assert.rejects(openTorchFile(p), (e: unknown) => e instanceof TorchFormatError && /small\.pt: storage 0 claims 200 float32 elements \(800 bytes\) but small\/data\/0 holds 16 bytes/.test(e.message));
    const missing = Buffer.from(raw.toString('latin1').replaceAll('small/data/0', 'small/data/9'), 'latin1');
    writeFileSync(p, missing);
    await assert.rejects(openTorchFile(p), (e: unknown) => e instanceof TorchFormatError && /storage 0 has no entry small\/data\/0/.test(e.message));
  });

  it('a view beyond its storage is refused by the unpickler', async () => {
    const st = Storage.fromBytes('k', 'float32', new Uint8Array(new Float32Array([1, 2]).buffer));
    const p = join(tmp, 'view.pt');
    await saveTorch({ t: new Tensor('float32', [2], [1], 1, st) }, p).catch(() => {});
    await assert.rejects(openTorchFile(p), (e: unknown) => e instanceof PickleError && /view\.pt: .*exceeds storage 0 of 2 elements/.test(e.message));
  });

  it('an unknown global in a .pt decodes inertly', async () => {
    const p = join(tmp, 'obj.pt');
    const o = new PyObject('some.module', 'Thing', [1, 'x']);
    await saveTorch({ o }, p);
    const v = (await loadTorch(p)) as any;
    assert.ok(v.o instanceof PyObject, 'PyObject');
    assert.deepEqual([v.o.module, v.o.name, [...v.o.args]], ['some.module', 'Thing', [1, 'x']]);
  });

  it('property: mutated torch files end in a value or our typed errors', { timeout: 180_000 }, async () => {
    const raw = readFileSync(join(runDir, 'train_data', '1_2.pt'));
    const p = join(tmp, 'mut.pt');
    await fc.assert(
      fc.asyncProperty(fc.array(fc.tuple(fc.double({ min: 0, max: 1, noNaN: true }), fc.integer({ min: 0, max: 255 })), { minLength: 1, maxLength: 6 }), async (muts) => {
        const b = Buffer.from(raw);
        for (const [f, v] of muts) b[Math.floor(f * (b.length - 1))] = v;
        writeFileSync(p, b);
        try {
          const f = await openTorchFile(p, { wholeFileBelow: muts.length % 2 ? 0 : undefined });
          try {
            for (const t of [...f.storages.values()].slice(0, 3)) await t.bytes();
          } finally {
            await f.close();
          }
        } catch (e) {
          if (!(e instanceof ZipError || e instanceof PickleError || e instanceof TorchFormatError)) throw e;
        }
      }),
      { numRuns: 300 },
    );
  });
});

describe('matchesDecoded finds differences', () => {
  it('in values, dtypes, shapes, strides, offsets and keys of a real dump', async () => {
    const want = readFixtureJson('miles-demo', 'decoded', 'train_data', '1_1.pt.json').value;
    const f = await openTorchFile(join(runDir, 'train_data', '1_1.pt'));
    try {
      assert.equal(await matchesDecoded(f.value, want), null);
      const mutate = async (edit: (w: any) => void, re: RegExp): Promise<void> => {
        const w = structuredClone(want);
        edit(w);
        const diff = await matchesDecoded(f.value, w);
        assert.ok(diff !== null && re.test(diff), `${diff} should match ${re}`);
      };
      await mutate((w) => (w.rollout_data.tokens[3].data[5] += 1), /tokens\[3\]\.data\[5\]/);
      await mutate((w) => (w.rollout_data.log_probs[0].data[0] += 1e-9), /log_probs\[0\]\.data\[0\]/);
      await mutate((w) => (w.rollout_data.tokens[0].dtype = 'int32'), /dtype int64 != int32/);
      await mutate((w) => (w.rollout_data.tokens[0].shape = [99]), /shape/);
      await mutate((w) => (w.rollout_data.tokens[0].stride = [2]), /stride/);
      await mutate((w) => (w.rollout_data.tokens[0].storage_offset = 1), /storage_offset/);
      await mutate((w) => (w.rollout_data.rewards[2] = 0.5), /rewards\[2\]/);
      await mutate((w) => delete w.cp_size, /keys/);
      await mutate((w) => (w.qkv_format = 'bshd'), /qkv_format/);
      await mutate((w) => (w.rollout_data.sample_indices = { __tuple__: w.rollout_data.sample_indices }), /expected a tuple/);
    } finally {
      await f.close();
    }
  });

  it('understands every decoded convention', async () => {
    const o = new PyObject('pkg', 'Ref', []);
    o.state = { name: 'a', slot: 1 };
    const value = {
      t: PyTuple.of<PyValue>(1, 'x'),
      e: new PyEnum('pkg', 'Status', 'done'),
      d: new Map<PyValue, PyValue>([[1, 'a'], [PyTuple.of<PyValue>(2, 3), 'b']]),
      od: new Map<PyValue, PyValue>([['k', 1]]),
      o,
      nan: NaN,
      inf: -Infinity,
      big: 2n ** 70n,
    };
    const decoded = {
      t: { __tuple__: [1, 'x'] },
      e: { __enum__: 'pkg.Status', name: 'DONE', value: 'done' },
      d: { __dict__: 'builtins.dict', items: [[1, 'a'], [{ __tuple__: [2, 3] }, 'b']] },
      od: { __dict__: 'collections.OrderedDict', items: [['k', 1]] },
      o: { __object__: 'pkg.Ref', name: 'a', slot: 1 },
      nan: { __float__: 'nan' },
      inf: { __float__: '-inf' },
      big: 1180591620717411303424,
    };
    assert.equal(await matchesDecoded(value, decoded), null);
    assert.match((await matchesDecoded({ ...value, nan: 1 }, decoded))!, /\$\.nan/);
    assert.match((await matchesDecoded({ ...value, e: new PyEnum('pkg', 'Status', 'other') }, decoded))!, /\$\.e\.value/);
    assert.match((await matchesDecoded({ ...value, t: [1, 'x'] }, decoded))!, /expected a tuple/);
    assert.match((await matchesDecoded(value, { ...decoded, d: { __dict__: 'builtins.dict', items: [[1, 'a']] } }))!, /items/);
  });
});

describe('lengthOnlyUnder', () => {
  const tmp = mkdtempSync(join(tmpdir(), 'rlsight-lengthonly-'));
  after(() => rmSync(tmp, { recursive: true, force: true }));

  it('keeps the lists under the named keys as their lengths and decodes everything else as usual', async () => {
    const path = join(tmp, 'lists.pt');
    const tokens = Array.from({ length: 5000 }, (_, i) => (i * 7919) % 70000);
    const logProbs = Array.from({ length: 3000 }, (_, i) => -i / 7);
    await saveTorch(
      {
        samples: [
          { tokens, rollout_log_probs: logProbs, reward: [0.5, 1.5], label: 'x' },
          { tokens: [1, 2, 3], rollout_log_probs: [], reward: 2 },
        ],
        other: logProbs,
      },
      path,
    );
    const full = (await openTorchFile(path, { typedLists: true })).value as Record<string, PyValue>;
    const skim = (await openTorchFile(path, { typedLists: true, lengthOnlyUnder: new Set(['tokens', 'rollout_log_probs']) })).value as Record<
      string,
      PyValue
    >;
    const [a, b] = skim.samples as Record<string, PyValue>[];
    const [fa, fb] = full.samples as Record<string, PyValue>[];
    assert.equal((a.tokens as Int32Array).length, 5000);
    assert.ok((a.tokens as Int32Array).every((v) => v === 0), 'its numbers are not kept');
    assert.deepEqual(Array.from(fa.tokens as Int32Array), tokens);
    assert.equal((a.rollout_log_probs as ArrayLike<number>).length, 3000);
    assert.equal((b.tokens as Int32Array).length, 3);
    // An empty list has no numbers to count: as the full decode gives it.
    assert.deepEqual(b.rollout_log_probs, fb.rollout_log_probs);
    // Other keys, and the same numbers under another key, decode in full.
    assert.deepEqual(a.reward, fa.reward);
    assert.deepEqual(skim.other, full.other);
    assert.equal(a.label, 'x');
  });
});

describe('unreadTextUnder', () => {
  const tmp = mkdtempSync(join(tmpdir(), 'rlsight-unreadtext-'));
  after(() => rmSync(tmp, { recursive: true, force: true }));

  it('leaves the long strings under the named keys undecoded and decodes everything else as usual', async () => {
    const path = join(tmp, 'texts.pt');
    const long = 'é step by step. '.repeat(100);
    const value = {
      samples: [
        { response: long, prompt: [{ role: 'tool', content: long }, { role: 'user', content: 'short' }], label: long, status: 'completed' },
        { response: 'ok', prompt: [], label: 'x', status: 'truncated' },
      ],
      // The same word as a list item, not as a key: the item after it is decoded.
      words: ['response', long],
      one: [{ response: long }],
    };
    await saveTorch(value, path);
    const full = (await openTorchFile(path)).value as Record<string, PyValue>;
    const skim = (await openTorchFile(path, { unreadTextUnder: new Set(['response', 'content']) })).value as Record<string, PyValue>;
    const [a, b] = skim.samples as Record<string, PyValue>[];
    const [fa] = full.samples as Record<string, PyValue>[];
    assert.equal(fa.response, long);
    assert.equal(a.response, '', 'a long text under a named key is not decoded');
    assert.deepEqual(a.prompt, [{ role: 'tool', content: '' }, { role: 'user', content: 'short' }], 'short ones are');
    assert.equal(a.label, long);
    assert.equal(a.status, 'completed');
    assert.deepEqual(b, (full.samples as PyValue[])[1]);
    assert.deepEqual(skim.words, ['response', long]);
    // A dict in a list: its `MARK k v SETITEMS` batch names the value's key.
    assert.deepEqual(skim.one, [{ response: '' }]);
  });
});
