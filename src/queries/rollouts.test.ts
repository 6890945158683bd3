// Summary, groups and step aggregates on small hand-built samples (masking, degenerate groups, nulls).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { RolloutSample } from '../run/dumps/rolloutDump.ts';
import type { TrainRow } from '../run/dumps/trainDump.ts';
import { BadArgument } from '../run/dumps/errors.ts';
import { digestTrainRow, dumpMetricSeries, rolloutGroups, rolloutSummary, stepAggregate, SUMMARY_COLUMNS_WITH_TRAIN, SUMMARY_COLUMNS_WITHOUT_TRAIN } from './rollouts.ts';

function sample(position: number, over: Partial<RolloutSample> = {}): RolloutSample {
  return {
    position,
    index: 100 + position,
    groupIndex: Math.floor(position / 2),
    status: 'completed',
    removeSample: false,
    responseLength: 3,
    totalLength: 5,
    reward: position % 2,
    weightVersions: ['4'],
    promptToolMessages: null,
    nonGenerationTime: 0,
    specAcceptTokens: 0,
    specDraftTokens: 0,
    cachedTokens: 0,
    totalPromptTokens: 0,
    ...over,
  };
}

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

describe('rollout summary', () => {
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
  });

  it('puts truncated after normalized_reward with train data and last without', () => {
    const samples = [sample(0, { weightVersions: ['3', '4'], promptToolMessages: 1 }), sample(1, { status: 'truncated' })];
    const t = rolloutSummary(5, false, samples, new Map([[100, digestTrainRow(row())]]), [0.25, 1]);
    assert.deepEqual(t.columns, SUMMARY_COLUMNS_WITH_TRAIN);
    assert.deepEqual(Object.keys(t.rows[1]), SUMMARY_COLUMNS_WITH_TRAIN);
    assert.equal(t.rows[0].raw_reward, 0.25);
    assert.equal(t.rows[0].mixed_version, true);
    assert.equal(t.rows[0].weight_version_min, 3);
    assert.equal(t.rows[0].staleness, 2);
    assert.equal(t.rows[0].tool_calls, 1);
    assert.equal(t.rows[1].truncated, true);
    assert.equal(t.rows[1].dumped_rank, null);
    const e = rolloutSummary(5, true, [sample(1)], new Map());
    assert.deepEqual(e.columns, SUMMARY_COLUMNS_WITHOUT_TRAIN);
  });

  it('takes raw_reward from the batch-global list by the position in the dump, not the sample index', () => {
    // Dump order 101, 100: position 0 holds index 101.
    const samples = [sample(0, { index: 101 }), sample(1, { index: 100 })];
    const digests = new Map([[100, digestTrainRow(row())], [101, digestTrainRow(row({ sampleIndex: 101 }))]]);
    const t = rolloutSummary(5, false, samples, digests, [0.1, 0.2]);
    assert.deepEqual(t.rows.map((r) => [r.sample_index, r.raw_reward]), [[101, 0.1], [100, 0.2]]);
    const noList = rolloutSummary(5, false, samples, digests, null);
    assert.deepEqual(noList.rows.map((r) => r.raw_reward), [null, null], 'no batch list: no raw reward');
  });

  it('groups: one-sample groups are zero-std, all-null rewards are not', () => {
    const samples = [sample(0), sample(1), sample(2, { groupIndex: 7 }), sample(3, { groupIndex: 9, reward: null }), sample(4, { groupIndex: null })];
    const t = rolloutSummary(1, true, samples, new Map());
    const g = rolloutGroups(t);
    assert.deepEqual(g.rows.map((r) => r.group_index), [null, 0, 7, 9]);
    const by = new Map(g.rows.map((r) => [r.group_index, r]));
    assert.equal(by.get(0)!.zero_std, false);
    assert.equal(by.get(0)!.reward_std, Math.SQRT1_2);
    assert.equal(by.get(7)!.zero_std, true);
    assert.equal(by.get(7)!.reward_std, null);
    assert.equal(by.get(9)!.zero_std, false);
    const agg = stepAggregate(rolloutSummary(1, false, samples, new Map()), g);
    assert.equal(agg.reward_mean, null, 'reward_mean uses raw_reward only');
    assert.equal(agg.zero_std_group_frac, 0.5);
    assert.deepEqual(dumpMetricSeries([agg], 'dump/reward_mean'), { x: [], y: [], ts: [] });
    assert.deepEqual(dumpMetricSeries([agg], 'dump/zero_std_group_frac'), { x: [1], y: [0.5], ts: [] });
    assert.throws(() => dumpMetricSeries([agg], 'dump/nope'), BadArgument);
  });
});
