import assert from 'node:assert/strict';
import { test } from 'node:test';
import { LIVE_EDGE_S, latestValues, mostLoggedSteps, runConfig, runStatus } from './runsTable.ts';

test('a run is damaged when reading met problems, live while followed and writing, quiet when it stops writing, else finished', () => {
  assert.equal(runStatus(['metrics.jsonl: line 3 skipped'], true, 100, 100), 'damaged');
  assert.equal(runStatus([], true, 100, 100 + LIVE_EDGE_S), 'live');
  // nothing new for 10 minutes, and nothing says it ended: its trainer may be hung
  assert.equal(runStatus([], true, 100, 101 + LIVE_EDGE_S), 'quiet');
  assert.equal(runStatus([], false, 100, 100), 'finished');
  assert.equal(runStatus([], true, null, 100), 'finished');
  // its collector stopped (removed collector.json): finished at once; still running: live before any data
  assert.equal(runStatus([], true, 100, 100, 'stopped'), 'finished');
  assert.equal(runStatus([], true, 100, 101 + LIVE_EDGE_S, 'running'), 'quiet');
  assert.equal(runStatus([], true, null, 100, 'running'), 'live');
});

test('the configuration keeps scalar args only', () => {
  assert.deepEqual(runConfig({ lr: 1e-6, hf_checkpoint: 'Qwen/Qwen3-8B', colocate: true, nested: { a: 1 }, none: null, bad: Number.NaN, list: [1] }), {
    lr: 1e-6,
    hf_checkpoint: 'Qwen/Qwen3-8B',
    colocate: true,
  });
  assert.deepEqual(runConfig(undefined), {});
  assert.deepEqual(runConfig([1, 2]), {});
});

test('the latest value is the newest finite number of each key', () => {
  const answer = { a: { x: [0, 1, 2], y: [1, 2, null], ts: [0, 0, 0] }, b: { x: [0], y: ['text'], ts: [0] } };
  assert.deepEqual(latestValues(answer, ['a', 'b', 'c']), { a: 2, b: null, c: null });
});

test('a run that logged no rollout/step counts the most steps it logged on one step key', () => {
  const rec = (step_key: string | null, step: number | null) => ({ step_key, step });
  assert.equal(mostLoggedSteps([]), 0);
  // tensorboard/step 0-3 (one step logged twice), eval/step 0 and 10, records without a step
  const records = [0, 1, 1, 2, 3].map((s) => rec('tensorboard/step', s)).concat([rec('eval/step', 0), rec('eval/step', 10), rec(null, null), rec('train/step', null)]);
  assert.equal(mostLoggedSteps(records), 4);
});
