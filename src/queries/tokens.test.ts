// The token view on small hand-built samples: windows, response offsets, loss-masked positions, bad ranges.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { BadArgument } from './limits.ts';
import type { SampleTokenRecord, TrainTokens } from '../run/model.ts';
import { tokenView } from './tokens.ts';

function row(over: Partial<TrainTokens> = {}): TrainTokens {
  return {
    lossMask: Int32Array.from([1, 0, 1, 1]),
    logProbs: Float32Array.from([-1, -2, -3, -4]),
    rolloutLogProbs: Float32Array.from([-1.5, -2, -2.5, -4]),
    refLogProbs: null,
    entropy: Float32Array.from([0.1, 0.2, 0.3, NaN]),
    refEntropy: null,
    advantages: Float32Array.from([1, 1, 1, 1]),
    returns: null,
    ...over,
  };
}

function sample(train: TrainTokens | null, over: Partial<SampleTokenRecord> = {}): SampleTokenRecord {
  return {
    rolloutId: 3,
    sampleIndex: 7,
    evaluation: false,
    totalLength: 7,
    responseLength: 4,
    tokens: [10, 11, 12, 13, 14, 15, 16],
    rolloutLogProbs: Float32Array.from([-1.25, -2, -2.5, -4]),
    train,
    decodeToken: (id) => `t${id}`,
    ...over,
  };
}

describe('tokenView', () => {
  it('nulls every stat at loss-masked positions and keeps the mask itself', () => {
    const v = tokenView(sample(row()));
    assert.equal(v.prompt_len, 3);
    assert.equal(v.response_offset, 3);
    assert.deepEqual(v.loss_mask, [1, 0, 1, 1]);
    assert.deepEqual(v.rollout_log_probs, [-1.25, null, -2.5, -4]);
    assert.deepEqual(v.train_log_probs, [-1, null, -3, -4]);
    assert.deepEqual(v.lp_diff, [0.5, null, -0.5, 0]);
    assert.deepEqual(v.imp_ratio, [Math.fround(Math.exp(0.5)), null, Math.fround(Math.exp(-0.5)), 1]);
    assert.deepEqual(v.entropy?.map((x) => (x === null ? null : Number(x.toFixed(6)))), [0.1, null, 0.3, null]);
    assert.equal(v.ref_log_probs, null);
    assert.deepEqual(v.token_text, ['t10', 't11', 't12', 't13', 't14', 't15', 't16']);
  });

  it('windows the tokens and the response-relative stats', () => {
    const v = tokenView(sample(row()), { start: 1, end: 5 });
    assert.deepEqual(v.token_ids, [11, 12, 13, 14]);
    assert.equal(v.response_offset, 2);
    assert.deepEqual(v.train_log_probs, [-1, null]);
    const prompt = tokenView(sample(row()), { start: 0, end: 2 });
    assert.equal(prompt.response_offset, 2);
    assert.deepEqual(prompt.train_log_probs, []);
    const clamped = tokenView(sample(row()), { start: -5, end: 99 });
    assert.deepEqual([clamped.start, clamped.end], [0, 7]);
  });

  it('has rollout-side data only without a train row', () => {
    const v = tokenView(sample(null, { evaluation: true }));
    assert.deepEqual(v.rollout_log_probs, [-1.25, -2, -2.5, -4]);
    for (const k of ['loss_mask', 'train_log_probs', 'lp_diff', 'imp_ratio', 'entropy', 'advantages'] as const) assert.equal(v[k], null, k);
  });

  it('refuses an empty range', () => {
    assert.throws(() => tokenView(sample(null), { start: 7 }), (e: unknown) => e instanceof BadArgument && /empty token range \[7, 7\) for total_len=7/.test((e as Error).message));
    assert.throws(() => tokenView(sample(null), { start: 2, end: 2 }), BadArgument);
    assert.throws(() => tokenView(sample(null), { start: 1.5 }), BadArgument);
  });
});
