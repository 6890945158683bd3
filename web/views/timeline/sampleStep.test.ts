import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Bubble } from '../../../src/wire/index.ts';
import { candidateSteps, findSampleStep, knownSampleStep } from './sampleStep.ts';

const bubble = (step: number, ts: number): Bubble => ({ step, ts, step_time: 10, wait_ratio: null });
const bubbles = [bubble(0, 100), bubble(1, 200), bubble(2, 300), bubble(3, 400)];

test('steps closing at or after the sample come first, in closing order, then earlier ones nearest first, then unknown', () => {
  assert.deepEqual(candidateSteps([0, 1, 2, 3, 4], bubbles, 250), [2, 3, 1, 0, 4]);
  assert.deepEqual(candidateSteps([3, 2, 1, 0], bubbles, 50), [0, 1, 2, 3]);
  assert.deepEqual(candidateSteps([0, 1, 2], bubbles, 1000), [2, 1, 0]);
});

test('the sample is found in the first step that lists it; answers are asked once; a miss is remembered per step count', async () => {
  const asked: string[] = [];
  const listed: Record<number, number[]> = { 0: [0, 1], 1: [2, 3], 2: [4, 5] };
  globalThis.fetch = (async (url: string) => {
    asked.push(url);
    const step = Number(/rollout\/(\d+)\/trajectories/.exec(url)![1]);
    const lanes = (listed[step] ?? []).map((i) => ({ sample_index: i, group_index: i >> 1, status: i === 3 ? 'truncated' : 'completed' }));
    return new Response(JSON.stringify({ lanes, consume_ts: null, t0: null }), { status: 200 });
  }) as typeof fetch;
  const ids = [0, 1, 2];
  const hit = await findSampleStep(3, ids, bubbles, 150);
  assert.equal(hit?.rolloutId, 1);
  assert.equal(hit?.lane.status, 'truncated');
  assert.deepEqual(asked, ['./api/rollout/1/trajectories'], 'the likeliest step alone was asked');
  assert.equal((await findSampleStep(0, ids, bubbles, 150))?.rolloutId, 0);
  assert.deepEqual(asked, ['./api/rollout/1/trajectories', './api/rollout/2/trajectories', './api/rollout/0/trajectories'], 'each step asked once');
  assert.equal(knownSampleStep(99, ids), null);
  assert.equal(await findSampleStep(99, ids, bubbles, 150), null);
  assert.equal(asked.length, 3, 'a miss reuses the answers already held');
  assert.equal(knownSampleStep(99, ids), 'none');
  assert.equal(knownSampleStep(99, [...ids, 3]), null, 'a new step makes the miss worth asking again');
});
