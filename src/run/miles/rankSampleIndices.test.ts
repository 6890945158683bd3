import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fixturePath } from '../../../test/support/fixtures.ts';
import { sampleIndicesInPickle, sampleIndicesOf } from './rankSampleIndices.ts';
import { openTorchDocument } from './torchDocument.ts';
import { indexShardFile } from './trainDump.ts';

const key = (short = false): number[] => (short ? [0x8c, 14] : [0x58, 14, 0, 0, 0]).concat([...Buffer.from('sample_indices')]);
/** A protocol-2 pickle of `{'sample_indices': <value ops>, 'rank': 0}`. */
const dict = (value: number[], keyOps = key()): Uint8Array =>
  Uint8Array.from([0x80, 2, 0x7d, 0x28, ...keyOps, ...value, 0x58, 4, 0, 0, 0, ...Buffer.from('rank'), 0x4b, 0, 0x75, 0x2e]);

describe('sampleIndicesInPickle', () => {
  it('reads every rank file of the fixture run exactly as their decode does', async () => {
    const dir = fixturePath('miles-demo', 'run', 'train_data');
    const names = readdirSync(dir).filter((n) => n.endsWith('.pt'));
    assert.ok(names.length >= 8);
    for (const name of names) {
      const path = join(dir, name);
      const doc = await openTorchDocument(path);
      try {
        const shard = await indexShardFile(doc.value, name, { path, root: doc.root ?? null, littleEndian: true }, 0);
        assert.deepEqual(await sampleIndicesOf(path), shard.sampleIndices, name);
      } finally {
        await doc.close();
      }
    }
  });

  it('reads the plain list forms: batches with memo puts, single appends, one- two- and four-byte ints, the empty list', () => {
    // ]q\x01(K\x02M\x00\x01J\x00\x00\x01\x00e
    assert.deepEqual(sampleIndicesInPickle(dict([0x5d, 0x71, 1, 0x28, 0x4b, 2, 0x4d, 0, 1, 0x4a, 0, 0, 1, 0, 0x65])), [2, 256, 65536]);
    assert.deepEqual(sampleIndicesInPickle(dict([0x5d, 0x94, 0x4b, 7, 0x61], [...key(true), 0x71, 3])), [7]);
    assert.deepEqual(sampleIndicesInPickle(dict([0x5d, 0x28, 0x4b, 1, 0x65, 0x28, 0x4b, 2, 0x65])), [1, 2]);
    assert.deepEqual(sampleIndicesInPickle(dict([0x5d])), []);
  });

  it('answers null for any other form (then the file is decoded)', () => {
    const forms: [string, Uint8Array][] = [
      ['a float in the list', dict([0x5d, 0x28, 0x4b, 1, 0x47, 0x3f, 0xf0, 0, 0, 0, 0, 0, 0, 0x65])],
      ['a tuple, not a list', dict([0x4b, 1, 0x85])],
      ['a big int (LONG1)', dict([0x5d, 0x28, 0x8a, 1, 5, 0x65])],
      ['a batch not closed by APPENDS', dict([0x5d, 0x28, 0x4b, 1, 0x2e])],
      ['the key text twice', Uint8Array.from([...dict([0x5d, 0x4b, 1, 0x61]), ...Buffer.from('sample_indices')])],
      ['the key text as a value', Uint8Array.from([0x80, 2, 0x5d, 0x28, ...key(), 0x65, 0x2e])],
      ['no such key', Uint8Array.from([0x80, 2, 0x7d, 0x2e])],
      // {'meta': {'sample_indices': [0]}, 'rollout_data': {'sample_indices': [5, 6]}}: the text once, its memo slot fetched again
      ['the key again by its memo slot (BINGET)', Uint8Array.from([...dict([0x5d, 0x4b, 0, 0x61], [...key(), 0x71, 4]).slice(0, -1), 0x68, 4, 0x2e])],
      ['the key again by its memo slot (LONG_BINGET)', Uint8Array.from([...dict([0x5d, 0x4b, 0, 0x61], [...key(), 0x72, 9, 1, 0, 0]).slice(0, -1), 0x6a, 9, 1, 0, 0, 0x2e])],
      ['the key kept by MEMOIZE (its slot unnamed)', dict([0x5d, 0x4b, 7, 0x61], [...key(true), 0x94])],
    ];
    for (const [what, bytes] of forms) assert.equal(sampleIndicesInPickle(bytes), null, what);
  });
});
