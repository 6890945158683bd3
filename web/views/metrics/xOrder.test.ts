import assert from 'node:assert/strict';
import { test } from 'node:test';
import { inXOrder } from './xOrder.ts';

test('points come in ascending x, a step logged twice keeping its logged order; sorted ones are left as they are', () => {
  // steps 0-3, then steps 2 and 3 logged again (a restarted trainer)
  const x = [0, 1, 2, 3, 2, 3];
  const y = [10, 11, 12, 13, 22, 23];
  assert.deepEqual(inXOrder(x, y), { x: [0, 1, 2, 2, 3, 3], y: [10, 11, 12, 22, 13, 23] });
  const sorted = { x: [0, 1, 1, 2], y: [1, 2, 3, 4] };
  const same = inXOrder(sorted.x, sorted.y);
  assert.equal(same.x, sorted.x);
  assert.equal(same.y, sorted.y);
});
