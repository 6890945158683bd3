import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { minmaxDownsample, minmaxIndices, strideDownsample, strideIndices } from './downsample.ts';
import { BadArgument } from './limits.ts';

test('strideIndices matches numpy linspace(0, n-1, m).astype(int64)', () => {
  assert.deepEqual([...strideIndices(10, 4)], [0, 3, 6, 9]);
  assert.deepEqual([...strideIndices(11, 3)], [0, 5, 10]);
  // (n-1)/(m-1) = 2.25: trunc(2.25), trunc(4.5), trunc(6.75), then n-1
  assert.deepEqual([...strideIndices(10, 5)], [0, 2, 4, 6, 9]);
  assert.deepEqual([...strideIndices(3, 5)], [0, 1, 2]);
  assert.deepEqual([...strideIndices(0, 2)], []);
});

test('strideDownsample keeps the endpoints and may drop spikes', () => {
  const xs = [0, 1, 2, 3, 4, 5, 6];
  const ys = [0, 0, 0, 99, 0, 0, 0];
  const out = strideDownsample(xs, ys, 2);
  assert.deepEqual(out, { xs: [0, 6], ys: [0, 0] });
});

test('minmaxIndices keeps first argmin/argmax per bucket, sorted', () => {
  // n=10, m=4 -> 2 buckets, edges [0,5,10]
  const ys = [3, 1, 1, 5, 5, 2, 9, 0, 9, 0];
  assert.deepEqual([...minmaxIndices(ys, 4)], [1, 3, 6, 7]);
  // a constant bucket contributes one index
  assert.deepEqual([...minmaxIndices([4, 4, 4, 4, 4, 4], 4)], [0, 3]);
  // odd max_points rounds the bucket count down: m=3 -> 1 bucket
  assert.deepEqual([...minmaxIndices([5, 2, 8, 1, 7], 3)], [2, 3]);
});

test('downsamplers reject max_points < 2 with a QueryError naming the parameter', () => {
  for (const fn of [() => strideIndices(10, 1), () => minmaxIndices([1, 2, 3], 1), () => strideIndices(10, 2.5)]) {
    assert.throws(fn, (e: unknown) => e instanceof BadArgument && e.param === 'max_points');
  }
});

test('property: minmax keeps the global min and max, stays within max_points, sorted unique', () => {
  fc.assert(
    fc.property(fc.array(fc.integer({ min: -1000, max: 1000 }), { maxLength: 400 }), fc.integer({ min: 2, max: 120 }), (ys, m) => {
      const idx = [...minmaxIndices(ys, m)];
      assert.ok(idx.length <= Math.max(m, 0) || idx.length === ys.length);
      if (ys.length <= m) {
        assert.equal(idx.length, ys.length);
        return;
      }
      assert.ok(idx.length <= m);
      for (let i = 1; i < idx.length; i++) assert.ok(idx[i] > idx[i - 1]);
      const kept = idx.map((i) => ys[i]);
      assert.equal(Math.min(...kept), Math.min(...ys));
      assert.equal(Math.max(...kept), Math.max(...ys));
      const { xs, ys: ky } = minmaxDownsample(ys.map((_, i) => i * 10), ys, m);
      assert.deepEqual(xs, idx.map((i) => i * 10));
      assert.deepEqual(ky, kept);
    }),
  );
});

test('property: stride keeps both endpoints and exactly max_points points when n > max_points', () => {
  fc.assert(
    fc.property(fc.integer({ min: 0, max: 5000 }), fc.integer({ min: 2, max: 300 }), (n, m) => {
      const idx = strideIndices(n, m);
      assert.equal(idx.length, Math.min(n, m));
      if (n > 0) {
        assert.equal(idx[0], 0);
        assert.equal(idx[idx.length - 1], n - 1);
      }
      for (let i = 1; i < idx.length; i++) assert.ok(idx[i] > idx[i - 1]);
    }),
  );
});
