import assert from 'node:assert/strict';
import { test } from 'node:test';
import { stepsSearched } from './stream.ts';

test('a search stopped at its limit says how many of the steps it searched', () => {
  assert.equal(stepsSearched(true, 2, 8), 'the first 2 of 8 steps');
  assert.equal(stepsSearched(true, 1, 1), '1 step');
  assert.equal(stepsSearched(false, 8, 8), '8 steps');
  // stopped on the last step: every step was searched
  assert.equal(stepsSearched(true, 8, 8), '8 steps');
});
