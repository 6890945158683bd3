import assert from 'node:assert/strict';
import { test } from 'node:test';
import { niceTicks } from './ticks.ts';

test('ticks are nice, inside the range and never duplicated', () => {
  const t = niceTicks(0.19999, 0.20002, 5);
  assert.equal(new Set(t).size, t.length);
  assert.ok(t.every((v) => v >= 0.19999 && v <= 0.20002));
  assert.deepEqual(niceTicks(0, 10, 5), [0, 2, 4, 6, 8, 10]);
});

test('integer axes get integer ticks (no 0.5 steps)', () => {
  const t = niceTicks(0, 3, 8, true);
  assert.ok(t.every(Number.isInteger));
  assert.deepEqual(t, [0, 1, 2, 3]);
});
