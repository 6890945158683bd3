import assert from 'node:assert/strict';
import { readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, it } from 'node:test';
import { fixturePath, readFixtureJson } from '../../../test/support/fixtures.ts';
import { matchesDecoded } from '../../../test/support/decoded.ts';
import { loadTorch, openTorchFile } from './load.ts';
import { readTensor, readTensorNumbers } from './tensorData.ts';
import { Tensor } from './value.ts';

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

describe('storages are lazy and survive close()', () => {
  it('reads nothing until a tensor is read, then reopens after close', async () => {
    const f = await openTorchFile(join(runDir, 'train_data', '0_0.pt'));
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
    const f = await openTorchFile(join(runDir, 'train_data', '1_0.pt'));
    try {
      const t = (f.value as any).rollout_data.rollout_log_probs[2] as Tensor;
      const a = await readTensor(t);
      const b = await readTensor(t);
      assert.equal(a.buffer, b.buffer, 'both views share the storage buffer');
      assert.equal(a.byteOffset % 4, 0);
    } finally {
      await f.close();
    }
  });
});
