import assert from 'node:assert/strict';
import { test } from 'node:test';
import { searchUrl, stepsSearched } from './stream.ts';

test('a search stopped at its limit says how many of the steps it searched', () => {
  assert.equal(stepsSearched(true, 2, 8), 'the first 2 of 8 steps');
  assert.equal(stepsSearched(true, 1, 1), '1 step');
  assert.equal(stepsSearched(false, 8, 8), '8 steps');
  // stopped on the last step: every step was searched
  assert.equal(stepsSearched(true, 8, 8), '8 steps');
});

test('a search asks the run it is of, whichever run is chosen when it is sent', () => {
  assert.equal(searchUrl('Natalia', 50, 'slime-trace'), './api/runs/slime-trace/rlsight/search?q=Natalia&limit=50');
  assert.equal(searchUrl('a b', 50, null), './api/rlsight/search?q=a+b&limit=50');
});
