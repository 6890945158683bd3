import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Meta } from '../../../src/wire/index.ts';
import { axisOf, buildCatalog, categoryOf } from './catalog.ts';

const meta = (keys: string[], engine: string[] = [], steps = ['rollout/step']) =>
  ({ metric_keys: keys, engine_metric_keys: engine, step_keys: steps }) as unknown as Meta;

test('categories by prefix, known ones first, then alphabetical, sglang last; step counters skipped', () => {
  const c = buildCatalog(meta(['zeta/a', 'train/loss', 'perf/mfu', 'dump/reward_mean', 'alpha/b', 'rollout/step', 'rollout/x', 'plain'], ['sglang_gen_throughput']));
  assert.deepEqual(
    c.categories.map((x) => x.name),
    ['rollout', 'perf', 'train', 'dump', 'alpha', 'plain', 'zeta', 'sglang'],
  );
  assert.deepEqual(c.categories[0]!.keys, ['rollout/x']);
});

test('rollout log-prob keys read as training quantities', () => {
  assert.equal(categoryOf('rollout/log_probs'), 'train');
  assert.equal(categoryOf('rollout/raw_reward'), 'rollout');
});

test('axis: the prefix step key when logged, else rollout/step; dump/* always rollout/step', () => {
  const steps = ['eval/step', 'rollout/step', 'train/step'];
  assert.equal(axisOf('train/loss', steps), 'train/step');
  assert.equal(axisOf('eval/acc', steps), 'eval/step');
  assert.equal(axisOf('perf/mfu', steps), 'rollout/step');
  assert.equal(axisOf('dump/reward_mean', steps), 'rollout/step');
  assert.equal(axisOf('train/loss', ['rollout/step']), 'rollout/step');
});
