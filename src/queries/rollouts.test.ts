// Summary, groups and step aggregates on small hand-built samples (masking, degenerate groups, nulls).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { BadArgument } from './limits.ts';
import type { SampleRecord, StepRecords, TrainDigest } from '../run/model.ts';
import { dumpMetricSeries } from './metrics.ts';
import { rolloutGroups, rolloutSummary, stepAggregate, SUMMARY_COLUMNS_WITH_TRAIN, SUMMARY_COLUMNS_WITHOUT_TRAIN } from './rollouts.ts';

function sample(position: number, over: Partial<SampleRecord> = {}): SampleRecord {
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

/** A train digest as the run model yields one (what the summary reads of it). */
function digest(over: Partial<TrainDigest> = {}): TrainDigest {
  return {
    normalized_reward: -0.5,
    truncated: null,
    dumped_rank: 2,
    mean_entropy: 0.5,
    max_entropy: 0.75,
    ref_entropy_mean: null,
    mean_abs_lp_diff: 0.5,
    max_abs_lp_diff: 0.5,
    mean_imp_ratio: 1.1,
    adv_mean: 2,
    adv_std: Math.SQRT2,
    return_mean: null,
    alignment_failed: false,
    ...over,
  };
}

/** The records of one step. */
function step(rolloutId: number, evaluation: boolean, samples: SampleRecord[], digests: Map<number, TrainDigest>, rawRewards: (number | null)[] | null = null): StepRecords {
  return { rolloutId, evaluation, samples, digests, rawRewards };
}

describe('rollout summary', () => {
  it('puts truncated after normalized_reward with train data and last without', () => {
    const samples = [sample(0, { weightVersions: ['3', '4'], promptToolMessages: 1 }), sample(1, { status: 'truncated' })];
    const t = rolloutSummary(step(5, false, samples, new Map([[100, digest()]]), [0.25, 1]));
    assert.deepEqual(t.columns, SUMMARY_COLUMNS_WITH_TRAIN);
    assert.deepEqual(Object.keys(t.rows[1]), SUMMARY_COLUMNS_WITH_TRAIN);
    assert.equal(t.rows[0].raw_reward, 0.25);
    assert.equal(t.rows[0].mixed_version, true);
    assert.equal(t.rows[0].weight_version_min, 3);
    assert.equal(t.rows[0].staleness, 2);
    assert.equal(t.rows[0].tool_calls, 1);
    assert.equal(t.rows[1].truncated, true);
    assert.equal(t.rows[1].dumped_rank, null);
    const e = rolloutSummary(step(5, true, [sample(1)], new Map()));
    assert.deepEqual(e.columns, SUMMARY_COLUMNS_WITHOUT_TRAIN);
  });

  it('takes raw_reward from the batch-global list by the position in the dump, not the sample index', () => {
    // Dump order 101, 100: position 0 holds index 101.
    const samples = [sample(0, { index: 101 }), sample(1, { index: 100 })];
    const digests = new Map([[100, digest()], [101, digest()]]);
    const t = rolloutSummary(step(5, false, samples, digests, [0.1, 0.2]));
    assert.deepEqual(t.rows.map((r) => [r.sample_index, r.raw_reward]), [[101, 0.1], [100, 0.2]]);
    const noList = rolloutSummary(step(5, false, samples, digests, null));
    assert.deepEqual(noList.rows.map((r) => r.raw_reward), [null, null], 'no batch list: no raw reward');
  });

  it('groups: one-sample groups have no std (zero_std null, unlike the reference), all-null rewards are not zero-std', () => {
    const samples = [sample(0), sample(1), sample(2, { groupIndex: 7 }), sample(3, { groupIndex: 9, reward: null }), sample(4, { groupIndex: null })];
    const t = rolloutSummary(step(1, true, samples, new Map()));
    const g = rolloutGroups(t);
    assert.deepEqual(g.rows.map((r) => r.group_index), [null, 0, 7, 9]);
    const by = new Map(g.rows.map((r) => [r.group_index, r]));
    assert.equal(by.get(0)!.zero_std, false);
    assert.equal(by.get(0)!.reward_std, Math.SQRT1_2);
    assert.equal(by.get(7)!.zero_std, null);
    assert.equal(by.get(7)!.reward_std, null);
    assert.equal(by.get(9)!.zero_std, null);
    assert.equal(by.get(null)!.zero_std, null);
    const agg = stepAggregate(rolloutSummary(step(1, false, samples, new Map())), g);
    assert.equal(agg.reward_mean, null, 'reward_mean uses raw_reward only');
    assert.equal(agg.zero_std_group_frac, 0, 'only real groups count: group 0 varies');
    assert.deepEqual(dumpMetricSeries([agg], ['dump/reward_mean'])['dump/reward_mean'], { x: [], y: [], ts: [] });
    assert.deepEqual(dumpMetricSeries([agg], ['dump/zero_std_group_frac'])['dump/zero_std_group_frac'], { x: [1], y: [0], ts: [] });
    assert.throws(() => dumpMetricSeries([agg], ['dump/nope']), BadArgument);
  });
});
