import assert from 'node:assert/strict';
import { describe, it, test } from 'node:test';
import { fullXRange, sharedZoomRange, zoomByKey } from './keyZoom.ts';

describe('zoomByKey', () => {
  const full: [number, number] = [0, 100];
  it('zooms in around the cursor, or the middle without one', () => {
    assert.deepEqual(zoomByKey('zoomIn', full, full), [15, 85]);
    assert.deepEqual(zoomByKey('zoomIn', full, full, 0), [0, 70]);
  });
  it('zooms out back to the full range (null) once the window would cover it', () => {
    assert.deepEqual(zoomByKey('zoomOut', [40, 60], full)!.map((v) => +v.toFixed(6)), [35.714286, 64.285714]);
    assert.equal(zoomByKey('zoomOut', [10, 90], full), null);
  });
  it('pans by a fifth of the window and stops at the ends', () => {
    assert.deepEqual(zoomByKey('panRight', [40, 60], full), [44, 64]);
    assert.deepEqual(zoomByKey('panLeft', [2, 22], full), [0, 20]);
    assert.deepEqual(zoomByKey('panRight', [80, 100], full), [80, 100]);
  });
  it('resets to the full range', () => {
    assert.equal(zoomByKey('reset', [40, 60], full), null);
  });
});

test('with no chart focused, the keys zoom in the range of the axis most charts are on', () => {
  const extents = new Map<string, [number, number]>([
    ['rollout/step', [0, 199]],
    ['train/step', [0, 1599]],
  ]);
  const range = sharedZoomRange([{ xLabel: 'rollout/step' }, { xLabel: 'train/step' }, { xLabel: 'rollout/step' }], extents)!;
  assert.deepEqual(range, fullXRange(null, [0, 199], []));
  // one zoom in keeps the rollout charts' points on screen
  const [t0, t1] = zoomByKey('zoomIn', range, range)!;
  assert.ok(t0 >= 0 && t1 <= 199 && t1 - t0 > 100, `${t0}-${t1}`);
  assert.equal(sharedZoomRange([{ xLabel: 'eval/step' }], extents), null);
});

test("the page's full range is a focused chart's: padded, and reaching the unread steps of the charts on its axis", () => {
  const extents = new Map<string, [number, number]>([['train/step', [0, 99]]]);
  const coverage = { steps_done: 100, steps_total: 150, unread: [[100, 149]] as [number, number][] };
  // a focused chart of those steps: its data, the axis' extent and its unread steps, 2.5% clear at each end
  const focused = fullXRange([0, 50, 99], [0, 99], coverage.unread)!;
  assert.deepEqual(focused, [0 - 149.5 * 0.025, 149.5 + 149.5 * 0.025]);
  // the page's keys, over that chart and one on the same axis with every step read, go as far
  assert.deepEqual(sharedZoomRange([{ xLabel: 'train/step', coverage }, { xLabel: 'train/step' }], extents), focused);
  // so a pan right from the page reaches the hatched steps, as the focused chart's does
  assert.deepEqual(zoomByKey('panRight', [90, 150], focused), [focused[1] - 60, focused[1]]);
});

test('the full range of a single step, or of nothing', () => {
  assert.deepEqual(fullXRange([5], null, []), [4, 6]);
  assert.equal(fullXRange([], null, []), null);
});
