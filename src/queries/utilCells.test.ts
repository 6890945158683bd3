import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { GpuUtilBlock } from '../run/telemetry/gpuUtilBlock.ts';
import { laneBucketMax } from './fleet.ts';
import { UTIL_CELL_S, utilCellsOf } from './utilCells.ts';

const HOUR0 = 1755792000;

/** Every row, one at a time: the definition the cells must reproduce. */
function naive(blocks: GpuUtilBlock[], laneCount: number, t0: number, t1: number, xb: number): Float64Array {
  const out = new Float64Array(xb * laneCount).fill(NaN);
  for (const b of blocks) {
    for (let i = 0; i < b.length; i++) {
      const t = b.ts[i];
      if (!(t >= t0 && t <= t1)) continue;
      const x = Math.min(xb - 1, Math.max(0, Math.floor(((t - t0) / (t1 - t0)) * xb)));
      const c = x * laneCount + b.lane[i];
      if (!(out[c] >= b.util[i])) out[c] = b.util[i];
    }
  }
  return out;
}

function hourBlock(hour: number, rows: { s: number; frac: number; lane: number; util: number }[]): GpuUtilBlock {
  const lo = HOUR0 + hour * 3600;
  const b = new GpuUtilBlock(String(hour), lo, lo + 3600);
  for (const r of [...rows].sort((a, b) => a.s - b.s)) b.push(lo + r.s + r.frac, r.lane, r.util, 1000, 300);
  return b;
}

test('cells: 10-s columns of per-lane max; rows out of column order disable them', () => {
  const b = hourBlock(0, [
    { s: 0, frac: 0.5, lane: 0, util: 10 },
    { s: 3, frac: 0, lane: 1, util: 30 },
    { s: 9, frac: 0.99, lane: 0, util: 40 },
    { s: 25, frac: 0, lane: 1, util: 5 },
  ]);
  const c = utilCellsOf(b, 2)!;
  assert.equal(c.columns, 3600 / UTIL_CELL_S);
  assert.deepEqual([...c.max.subarray(0, 6)], [40, 30, NaN, NaN, NaN, 5]);
  assert.deepEqual([...c.colStart.subarray(0, 5)], [0, 3, 3, 4, 4]);
  assert.equal(c.colStart[c.columns], 4);
  const shuffled = new GpuUtilBlock('x', HOUR0, HOUR0 + 3600);
  shuffled.push(HOUR0 + 50, 0, 1, 1, 1);
  shuffled.push(HOUR0 + 5, 0, 1, 1, 1);
  assert.equal(utilCellsOf(shuffled, 1), null);
  assert.equal(utilCellsOf(new GpuUtilBlock('legacy', -Infinity, Infinity), 1), null);
});

test('property: per-bucket lane maxima from cells equal a pass over every row', () => {
  const row = fc.record({ s: fc.integer({ min: 0, max: 3599 }), frac: fc.oneof(fc.constant(0), fc.double({ min: 0, max: 0.999, noNaN: true })), lane: fc.integer({ min: 0, max: 5 }), util: fc.integer({ min: 0, max: 100 }) });
  fc.assert(
    fc.property(
      fc.array(row, { maxLength: 300 }),
      fc.array(row, { maxLength: 300 }),
      fc.integer({ min: -600, max: 7000 }),
      fc.integer({ min: 20, max: 8000 }),
      fc.integer({ min: 2, max: 400 }),
      fc.constantFrom(0, 0.25, 0.5),
      (r0, r1, from, len, xb, offset) => {
        const blocks = [hourBlock(0, r0), hourBlock(1, r1)];
        const t0 = HOUR0 + from + offset;
        const t1 = t0 + len;
        const got = laneBucketMax(blocks, { size: 6 }, t0, t1, xb);
        const want = naive(blocks, 6, t0, t1, xb);
        assert.equal(got.laneCount, 6);
        assert.deepEqual([...got.max], [...want]);
      },
    ),
    { numRuns: 300 },
  );
});
