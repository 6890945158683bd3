// A joined train row reduced to its digest: loss-masked means and maxima, nulls for empty selections.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { digestTrainRow } from './trainDigest.ts';
import type { TrainRow } from './trainDump.ts';

function row(over: Partial<TrainRow> = {}): TrainRow {
  return {
    sampleIndex: 100,
    rank: 2,
    responseLength: 3,
    totalLength: 5,
    reward: -0.5,
    lossMask: Int32Array.from([1, 1, 0]),
    logProbs: Float32Array.from([-1, -1, -9]),
    rolloutLogProbs: Float32Array.from([-1.5, -0.5, -1]),
    refLogProbs: null,
    entropy: Float32Array.from([0.25, 0.75, 100]),
    refEntropy: null,
    advantages: Float32Array.from([1, 3, 1000]),
    returns: null,
    truncated: null,
    weightVersions: null,
    alignmentFailed: false,
    ...over,
  };
}

describe('train digest', () => {
  it('reduces train rows over the loss mask', () => {
    const d = digestTrainRow(row());
    assert.equal(d.mean_entropy, 0.5);
    assert.equal(d.max_entropy, 0.75);
    assert.equal(d.mean_abs_lp_diff, 0.5);
    assert.equal(d.max_abs_lp_diff, 0.5);
    assert.ok(Math.abs(d.mean_imp_ratio! - (Math.exp(0.5) + Math.exp(-0.5)) / 2) < 1e-6);
    assert.equal(d.adv_mean, 2);
    assert.equal(d.adv_std, Math.SQRT2);
    assert.equal(d.return_mean, null);
    const removed = digestTrainRow(row({ lossMask: Int32Array.from([0, 0, 0]) }));
    assert.equal(removed.mean_entropy, null, 'an empty selection is null, not NaN');
    assert.equal(digestTrainRow(row({ lossMask: Int32Array.from([0, 1, 0]) })).adv_std, null, 'one value has no unbiased std');
  });});
