import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { grpoAdvantages, partitionByDp } from './demoDumps.ts';
import type { PlannedSample } from './demoPlan.ts';

const sample = (index: number, groupIndex: number, reward: number, length: number) => ({ index, groupIndex, reward, tokens: new Array(length).fill(0) }) as unknown as PlannedSample;

describe('train dump layout', () => {
  it('partitions a batch into equal-size DP shards balanced by length, rows in index order', () => {
    const batch = Array.from({ length: 12 }, (_, i) => sample(i, Math.floor(i / 4), 0, 10 + i * 7));
    const shards = partitionByDp(batch, 3);
    assert.deepEqual(shards.map((s) => s.length), [4, 4, 4]);
    assert.deepEqual(shards.flat().map((s) => s.index).sort((a, b) => a - b), batch.map((s) => s.index));
    for (const s of shards) assert.deepEqual(s.map((x) => x.index), [...s.map((x) => x.index)].sort((a, b) => a - b));
    const loads = shards.map((s) => s.reduce((a, x) => a + x.tokens.length, 0));
    assert.ok(Math.max(...loads) - Math.min(...loads) < 40, `loads ${loads}`);
  });

  it('normalizes GRPO rewards per group (zero for a group without variance)', () => {
    const adv = grpoAdvantages([sample(0, 0, 1, 5), sample(1, 0, 0, 5), sample(2, 1, 1, 5), sample(3, 1, 1, 5)]);
    assert.equal(adv.get(0), Math.fround(0.5 / (Math.SQRT1_2 + 1e-6)));
    assert.equal(adv.get(1), -adv.get(0)!);
    assert.equal(adv.get(2), 0);
    assert.equal(adv.get(3), 0);
  });
});
