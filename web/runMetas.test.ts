import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Meta } from '../src/wire/index.ts';
import { comparedPair, nearestStep, pairNote, type RunMetas } from './runMetas.ts';

const meta = (train: number[], timeline: boolean, keys: string[] = []): Meta =>
  ({ rollout_ids: { train, eval: [] }, metric_keys: keys, time_range: timeline ? [0, 1] : null, capabilities: { has_timeline: timeline } }) as unknown as Meta;

const metas: RunMetas = new Map([
  ['tb', meta([], false, ['rollout/raw_reward'])],
  ['slime', meta([0, 1], false, ['perf/rollout_time'])],
  ['miles', meta([0, 1, 2], true, ['perf/step_time'])],
  ['healthy', meta([194, 199], true, ['perf/step_time'])],
  ['gone', null],
]);

test('a two-run view takes the first two chosen runs that can show it and says why it leaves the others out', () => {
  assert.deepEqual(comparedPair('rollout', ['tb', 'slime', 'miles', 'healthy'], metas), {
    ids: ['slime', 'miles'],
    left: [
      { id: 'tb', why: 'no rollout dumps' },
      { id: 'healthy', why: 'two runs at most are compared' },
    ],
  });
  // Compute: the shown run needs a timeline, the other perf/step_time
  assert.deepEqual(comparedPair('timeline', ['slime', 'tb', 'healthy', 'miles'], metas).ids, ['healthy', 'miles']);
  assert.deepEqual(comparedPair('rollout', ['gone', 'tb', 'slime'], metas), {
    ids: ['slime'],
    left: [
      { id: 'gone', why: 'what it holds could not be read' },
      { id: 'tb', why: 'no rollout dumps' },
    ],
  });
});

test('what a pair compares and leaves out, in one sentence; nothing when it takes the two chosen', () => {
  assert.equal(pairNote('rollout', comparedPair('rollout', ['slime', 'miles'], metas)), null);
  assert.equal(pairNote('rollout', comparedPair('rollout', ['tb', 'slime'], metas)), 'Rollouts needs two runs with rollout dumps (only slime has them); left out: tb (no rollout dumps).');
  assert.equal(pairNote('timeline', comparedPair('timeline', ['slime', 'tb'], metas)), 'Compute needs a run with a compute timeline; left out: slime (no compute timeline), tb (no compute timeline).');
  assert.equal(pairNote('timeline', comparedPair('timeline', ['healthy', 'slime'], metas)), 'Compute needs a second run with perf/step_time to set beside healthy; left out: slime (no perf/step_time).');
});

test('the step set beside another: the same when held, else the nearest (the later of two as near)', () => {
  assert.equal(nearestStep([0, 1], 199), 1);
  assert.equal(nearestStep([194, 199], 1), 194);
  assert.equal(nearestStep([0, 2, 4], 3), 4);
  assert.equal(nearestStep([0, 2, 4], 2), 2);
  assert.equal(nearestStep([], 2), undefined);
});
