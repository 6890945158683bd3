import assert from 'node:assert/strict';
import { test } from 'node:test';
import { viewHeading } from './viewHeading.ts';

const at = (view: Parameters<typeof viewHeading>[0]['view'], rolloutId: number | null = null, sampleIndex: number | null = null, q = '') =>
  viewHeading({ view, rolloutId, sampleIndex, params: new URLSearchParams(q) });

test('a view heading names the view, and the step and sample its address names', () => {
  assert.equal(at('metrics'), 'Metrics');
  assert.equal(at('timeline'), 'Compute Utilization');
  assert.equal(at('rollout', 199), 'Rollouts · step 199');
  assert.equal(at('rollout', 3, null, 'eval=1'), 'Rollouts · eval step 3');
  assert.equal(at('rollout'), 'Rollouts');
  assert.equal(at('sample', 199, 640), 'Sample 640 · step 199');
  assert.equal(at('trace', 0), 'Trace · step 0');
  assert.equal(at('sample-diff'), 'Sample diff');
});
