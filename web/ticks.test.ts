import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fmtTicks, niceTicks } from './ticks.ts';

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

test('tick labels get the digits that keep them apart, and no more', () => {
  // a learning rate held nearly constant: three ticks that one decimal of an exponent writes alike
  assert.deepEqual(fmtTicks([9.8e-7, 1e-6, 1.02e-6]), ['9.80e-7', '1.00e-6', '1.02e-6']);
  assert.deepEqual(fmtTicks([0.2, 0.20001, 0.20002]), ['0.2', '0.20001', '0.20002']);
  // labels already apart are left as they are
  assert.deepEqual(fmtTicks([0, 0.5, 1]), ['0', '0.5', '1']);
  assert.deepEqual(fmtTicks([1e-6, 2e-6]), ['1.0e-6', '2.0e-6']);
});
