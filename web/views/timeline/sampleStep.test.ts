import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Bubble } from '../../../src/wire/index.ts';
import { findSampleStep, knownSampleStep } from './sampleStep.ts';

const bubbles: Bubble[] = [{ step: 0, ts: 100, step_time: 10, wait_ratio: null }];

test('a sample is asked of the server once; a miss is remembered per step count', async () => {
  const asked: string[] = [];
  const holds: Record<number, number> = { 3: 1, 0: 0 };
  globalThis.fetch = (async (url: string) => {
    asked.push(url);
    const sample = Number(/samples\/(\d+)\/step/.exec(url)![1]);
    const step = holds[sample];
    if (step === undefined) return new Response(JSON.stringify({ detail: 'no train step holds it' }), { status: 404 });
    const lane = { sample_index: sample, group_index: 0, status: sample === 3 ? 'truncated' : 'completed' };
    return new Response(JSON.stringify({ sample_index: sample, rollout_id: step, lane }), { status: 200 });
  }) as typeof fetch;
  const ids = [0, 1, 2];
  const hit = await findSampleStep(3, ids, bubbles, 150);
  assert.equal(hit?.rolloutId, 1);
  assert.equal(hit?.lane.status, 'truncated');
  assert.deepEqual(asked, ['./api/rlsight/samples/3/step?near=150']);
  await findSampleStep(3, ids, bubbles, 150);
  assert.equal(asked.length, 1, 'a found sample is not asked again');
  assert.equal(knownSampleStep(99, ids), null);
  assert.equal(await findSampleStep(99, ids, bubbles, 150), null);
  assert.equal(knownSampleStep(99, ids), 'none');
  assert.equal(await findSampleStep(99, ids, bubbles, 150), null);
  assert.equal(asked.length, 2, 'a miss is remembered');
  assert.equal(knownSampleStep(99, [...ids, 3]), null, 'a new step makes the miss worth asking again');
});
