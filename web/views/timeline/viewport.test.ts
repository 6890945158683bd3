import assert from 'node:assert/strict';
import { test } from 'node:test';
import { clampViewport, lastAtOrBefore, nearestIndex, pan, zoomAround } from './viewport.ts';

test('clamp keeps the window inside the run and under the max span', () => {
  assert.deepEqual(clampViewport({ t0: -50, t1: 50 }, 0, 1000, 400), { t0: 0, t1: 100 });
  assert.deepEqual(clampViewport({ t0: 950, t1: 1100 }, 0, 1000, 400), { t0: 850, t1: 1000 });
  const wide = clampViewport({ t0: 0, t1: 1000 }, 0, 1000, 400);
  assert.equal(wide.t1 - wide.t0, 400);
});

test('a reversed or empty window becomes a minimal valid one', () => {
  const v = clampViewport({ t0: 500, t1: 400 }, 0, 1000, 400);
  assert.ok(v.t1 > v.t0 && v.t0 >= 0 && v.t1 <= 1000);
});

test('zoom keeps the anchor in place; pan shifts by a fraction of the span', () => {
  const z = zoomAround({ t0: 0, t1: 100 }, 0.5, 20);
  assert.deepEqual(z, { t0: 10, t1: 60 });
  assert.deepEqual(pan({ t0: 0, t1: 100 }, 0.2), { t0: 20, t1: 120 });
});

test('binary searches over sorted timestamps', () => {
  const xs = [1, 2, 4, 8];
  assert.equal(lastAtOrBefore(xs, 0), -1);
  assert.equal(lastAtOrBefore(xs, 4), 2);
  assert.equal(lastAtOrBefore(xs, 100), 3);
  assert.equal(nearestIndex(xs, 5), 2);
  assert.equal(nearestIndex(xs, 7), 3);
  assert.equal(nearestIndex([], 7), -1);
});
