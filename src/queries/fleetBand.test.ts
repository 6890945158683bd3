import { test } from 'node:test';
import assert from 'node:assert/strict';
import { nearestQuantile, phaseComposition, pyRound4, utilBand } from './fleetBand.ts';

test('pyRound4 rounds exact ties half to even like Python round(x, 4)', () => {
  assert.equal(pyRound4(1 / 32), 0.0312); // exact tie 0.03125 -> even
  assert.equal(pyRound4(3 / 32), 0.0938); // exact tie 0.09375 -> even
  assert.equal(pyRound4(1 / 3), 0.3333);
  assert.equal(pyRound4(2 / 3), 0.6667);
  assert.equal(pyRound4(1), 1);
});

test('nearest quantile index is round-half-away-from-zero of q*(n-1)', () => {
  const s = [10, 20, 30, 40, 50, 60]; // n-1 = 5: 0.5 -> 1, 2.5 -> 3, 4.5 -> 5
  assert.equal(nearestQuantile(s, 6, 0.1), 20);
  assert.equal(nearestQuantile(s, 6, 0.5), 40);
  assert.equal(nearestQuantile(s, 6, 0.9), 60);
  assert.equal(nearestQuantile([7], 1, 0.9), 7);
});

test('composition fractions per palette id sum to 1 per bucket; id 0 is "none"', () => {
  // 3 lanes x 2 buckets
  const matrix = Uint8Array.from([1, 0, 1, 2, 2, 2]);
  const c = phaseComposition(matrix, 3, 2, ['', 'a', 'b']);
  assert.deepEqual(c, { none: [0, 0.3333], a: [0.6667, 0], b: [0.3333, 0.6667] });
  assert.deepEqual(phaseComposition(new Uint8Array(0), 0, 2, ['']), {});
});

test('util band: quantiles and min over lanes with samples; empty buckets null', () => {
  // 3 buckets x 4 lanes (bucket-major), NaN = no sample
  const m = Float64Array.from([95, 100, 95, 90, NaN, NaN, NaN, NaN, 10, NaN, 30, 20]);
  const band = utilBand(m, 4, 3);
  assert.deepEqual(band, {
    p10: [90, null, 10],
    p50: [95, null, 20],
    p90: [100, null, 30],
    min: [90, null, 10],
  });
});
