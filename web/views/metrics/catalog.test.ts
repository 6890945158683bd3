import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Meta } from '../../../src/wire/index.ts';
import { axisOf, buildCatalog, catalogKeys, categoryOf, mergeCatalogs } from './catalog.ts';

const meta = (keys: string[], engine: string[] = [], steps = ['rollout/step'], train: number[] = []) =>
  ({ metric_keys: keys, engine_metric_keys: engine, step_keys: steps, rollout_ids: { train, eval: [] } }) as unknown as Meta;

test('categories by prefix, known ones first, then alphabetical, sglang last; step counters skipped', () => {
  const c = buildCatalog(meta(['zeta/a', 'train/loss', 'perf/mfu', 'dump/reward_mean', 'alpha/b', 'rollout/step', 'rollout/x', 'plain'], ['sglang_gen_throughput']));
  assert.deepEqual(
    c.categories.map((x) => x.name),
    ['rollout', 'perf', 'train', 'dump', 'alpha', 'plain', 'zeta', 'sglang'],
  );
  assert.deepEqual(c.categories[0]!.keys, ['rollout/x']);
});

test('dump/* aggregates are listed beside logged metrics whenever the run has dumped steps', () => {
  const none = buildCatalog(meta(['rollout/x']));
  assert.equal(none.categories.find((x) => x.name === 'dump'), undefined);
  const dumped = buildCatalog(meta(['rollout/x', 'dump/reward_mean'], [], ['rollout/step'], [0, 1]));
  const dump = dumped.categories.find((x) => x.name === 'dump')!;
  assert.equal(dump.keys.length, 8, 'each aggregate once');
  assert.ok(dump.keys.includes('dump/mixed_version_frac'));
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

test('several runs compared: every key any of them lists, the first run\'s order first, sglang still last', () => {
  const current = buildCatalog(meta(['perf/request/e2e_latency/mean', 'rollout/x'], ['sglang_gen_throughput'], [], [0, 1]));
  const legacy = buildCatalog(meta(['perf/prefill/bootstrap_duration/mean', 'perf/request/e2e_latency/mean', 'zeta/a'], [], [], [0, 1]));
  const both = mergeCatalogs([current, legacy]);
  assert.deepEqual(
    both.categories.map((c) => c.name),
    ['rollout', 'perf', 'dump', 'zeta', 'sglang'],
  );
  assert.deepEqual(both.categories.find((c) => c.name === 'perf')!.keys, ['perf/request/e2e_latency/mean', 'perf/prefill/bootstrap_duration/mean']);
  assert.equal(both.categories.find((c) => c.name === 'dump')!.keys.length, 8, 'a key both list, once');
  assert.ok(!catalogKeys(current).has('perf/prefill/bootstrap_duration/mean'));
  assert.ok(catalogKeys(both).has('perf/prefill/bootstrap_duration/mean'));
  assert.deepEqual(mergeCatalogs([current]), current);
});
