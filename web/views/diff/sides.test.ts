import assert from 'node:assert/strict';
import { test } from 'node:test';
import { diffRuns, diffSteps } from './sides.ts';

test('runs: the URL’s when the server holds them, else the primary run, run B following run A', () => {
  const ids = ['healthy', 'collapse'];
  assert.deepEqual(diffRuns(ids, 'healthy', null, null), { a: 'healthy', b: 'healthy' });
  assert.deepEqual(diffRuns(ids, 'healthy', null, 'collapse'), { a: 'healthy', b: 'collapse' });
  assert.deepEqual(diffRuns(ids, 'healthy', 'collapse', null), { a: 'collapse', b: 'collapse' });
  assert.deepEqual(diffRuns(ids, 'healthy', 'gone', 'nope'), { a: 'healthy', b: 'healthy' });
  assert.deepEqual(diffRuns([], null, 'x', null), { a: null, b: null }, 'a single-run server names no run');
});

test('steps of one run: the newest against the one before it, unless the URL picks them', () => {
  const s = [0, 1, 2, 3];
  assert.deepEqual(diffSteps(s, s, true, null, null), { a: 2, b: 3 });
  assert.deepEqual(diffSteps(s, s, true, null, 1), { a: 0, b: 1 });
  assert.deepEqual(diffSteps(s, s, true, null, 0), { a: 0, b: 0 }, 'nothing before the oldest step');
  assert.deepEqual(diffSteps(s, s, true, 3, 1), { a: 3, b: 1 });
  assert.deepEqual(diffSteps(s, s, true, 9, 7), { a: 2, b: 3 }, 'steps the run does not hold fall back to the defaults');
  assert.deepEqual(diffSteps([5], [5], true, null, null), { a: 5, b: 5 });
  assert.deepEqual(diffSteps([], [], true, null, null), { a: undefined, b: undefined });
});

test('steps across runs: the same step number on both sides when run A has it', () => {
  assert.deepEqual(diffSteps([0, 1, 2, 3], [0, 1, 2, 3], false, null, null), { a: 3, b: 3 });
  assert.deepEqual(diffSteps([0, 1, 2, 3], [0, 1, 2, 3], false, null, 1), { a: 1, b: 1 });
  assert.deepEqual(diffSteps([0, 1], [0, 1, 2, 3], false, null, null), { a: 1, b: 3 }, 'run A is shorter: its newest');
  assert.deepEqual(diffSteps([0, 1, 2], [4, 5], false, 0, null), { a: 0, b: 5 });
});
