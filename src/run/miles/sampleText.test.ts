// The samples of a dump still being decoded: every sample handed out early is already complete (equal to what
// the finished decode holds), they come in order, and together they are the whole list.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { PyFloat, pickleBytes, type Picklable } from '../../formats/torch/writer.ts';
import { Unpickler } from '../../formats/torch/unpickle.ts';
import type { PyValue } from '../../formats/torch/value.ts';
import { dumpSamples, pendingSamples } from './sampleText.ts';

const snapshot = (v: PyValue): string => JSON.stringify(v, (_k, x) => (typeof x === 'bigint' ? String(x) : ArrayBuffer.isView(x) ? Array.from(x as Int32Array) : x));

function sample(i: number): Record<string, Picklable> {
  return {
    index: i,
    group_index: i >> 2,
    prompt: [{ role: 'user', content: `question ${i}` }],
    response: `answer ${i} `.repeat(1 + (i % 5)),
    reward: new PyFloat(i % 2),
    tokens: [1, 2, 3, i],
    metadata: { sglang_request_id: `req-${i}`, nested: { depth: [i, { more: 'x' }] } },
  };
}

for (const [name, value] of [
  ['a {rollout_id, samples} dict', { rollout_id: 3, metadata: { k: 1 }, samples: Array.from({ length: 2100 }, (_, i) => sample(i)) }],
  ['a bare list', Array.from({ length: 1200 }, (_, i) => sample(i))],
  ['samples before the other keys', { samples: Array.from({ length: 5 }, (_, i) => sample(i)), rollout_id: 1 }],
] as const) {
  test(`samples handed out while ${name} is decoded one opcode at a time are complete, in order, and all`, () => {
    const u = new Unpickler(pickleBytes(value as Picklable), { file: 'x.pt', typedLists: true });
    const early: { item: PyValue; seen: string }[] = [];
    let result = u.advance(1);
    for (; result === null; result = u.advance(1)) {
      const pending = pendingSamples(u.pending());
      for (let i = 0; i < early.length; i++) assert.equal(pending[i], early[i].item, 'a sample handed out stays at its place');
      for (let i = early.length; i < pending.length; i++) early.push({ item: pending[i], seen: snapshot(pending[i]) });
    }
    const samples = Array.isArray(result.value) ? (result.value as PyValue[]) : dumpSamples(result.value, 'x.pt');
    assert.ok(early.length > 0, 'samples are handed out before the decode ends');
    assert.equal(early.length, samples.length, 'every sample is handed out by the time the pickle stops');
    early.forEach((e, i) => {
      assert.equal(samples[i], e.item);
      assert.equal(e.seen, snapshot(samples[i]), `sample ${i} was complete when handed out`);
    });
  });
}
