import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { ExactSum, exactSum } from './exactSum.ts';

test('sums are exactly rounded where a left-to-right sum loses digits', () => {
  assert.equal(exactSum([0.1, 0.2, 0.3]), 0.6);
  assert.equal(exactSum([1e100, 1, -1e100]), 1);
  assert.equal(exactSum([1, 1e-16, 1e-16]), 1.0000000000000002);
  assert.equal(exactSum(Array(10).fill(0.1)), 1);
  assert.equal(exactSum([]), 0);
  // zeros are no partials, as in math.fsum: -0 alone sums to +0, whatever the grouping
  assert.ok(Object.is(exactSum([-0]), 0));
  assert.ok(Object.is(exactSum([-0, -0]), 0));
  // math.fsum's half-even tie break: 1 + 2^-53 + 2^-106 rounds up, 1 + 2^-53 alone stays 1
  assert.equal(exactSum([1, 2 ** -53, 2 ** -106]), 1 + 2 ** -52);
  assert.equal(exactSum([1, 2 ** -53]), 1);
});

test('non-finite values decide the sum as they do a plain one', () => {
  assert.equal(exactSum([1, Infinity, 2]), Infinity);
  assert.equal(exactSum([-Infinity, 1]), -Infinity);
  assert.ok(Number.isNaN(exactSum([Infinity, -Infinity])));
  assert.ok(Number.isNaN(exactSum([1, NaN])));
});

test('property: the sum does not depend on the order or the grouping of the values', () => {
  const value = fc.oneof(fc.double({ noNaN: true, noDefaultInfinity: true, min: -1e300, max: 1e300 }), fc.integer({ min: -1000, max: 1000 }), fc.constantFrom(0.1, 0.2, 1e-300, 1e300));
  fc.assert(
    fc.property(fc.array(value, { maxLength: 60 }), fc.integer({ min: 0, max: 60 }), (xs, cut) => {
      const whole = exactSum(xs);
      assert.equal(exactSum([...xs].reverse()), whole);
      assert.equal(exactSum([...xs].sort((a, b) => a - b)), whole);
      const a = new ExactSum();
      const b = new ExactSum();
      xs.forEach((x, i) => (i < cut ? a : b).add(x));
      a.addSum(b);
      assert.equal(a.value(), whole);
      // exact on integers, where a plain sum is exact too
      if (xs.every((x) => Number.isInteger(x) && Math.abs(x) <= 1000)) assert.equal(whole, xs.reduce((s, x) => s + x, 0));
    }),
    { numRuns: 500 },
  );
});
