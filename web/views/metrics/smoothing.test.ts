import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ema } from './smoothing.ts';

test('weight 0 returns the series unchanged (nulls kept)', () => {
  assert.deepEqual(ema([1, null, 3], 0), [1, null, 3]);
});

test('the first smoothed value equals the first raw value (debiased), then it lags', () => {
  const s = ema([10, 20, 30], 0.5);
  assert.equal(s[0], 10);
  assert.ok(Math.abs(s[1]! - (0.5 * 5 + 10) / 0.75) < 1e-9);
  assert.ok(s[2]! < 30 && s[2]! > s[1]!);
});

test('gaps stay gaps and do not reset the average', () => {
  const s = ema([1, null, 1, Number.NaN, 1], 0.9);
  assert.equal(s[1], null);
  assert.equal(s[3], null);
  assert.ok(Math.abs(s[4]! - 1) < 1e-12, 'a constant stays constant');
});
