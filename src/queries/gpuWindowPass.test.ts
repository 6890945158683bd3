import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { GpuUtilBlock } from '../formats/columns/gpuUtilBlock.ts';
import { decodeGpuRollup, encodeGpuRollup, foldGpuUtilRows, UTIL_CELL_S } from '../formats/columns/gpuUtilRollup.ts';
import { LaneTable, rowsOfBlock, type GpuUtilHour } from '../run/telemetry/store.ts';
import { laneBucketMax } from './fleet.ts';
import { blockHours } from './gpuWindowPass.ts';
import { LaneRows, magnitudeCells } from './heatmap.ts';
import { meanUtilByLane } from './outliers.ts';

const HOUR0 = 1755792000;
const LANES = 6;

function laneTable(): LaneTable {
  const t = new LaneTable();
  for (let g = 0; g < LANES; g++) t.id('10.0.0.1', g);
  return t;
}

interface Row {
  s: number;
  frac: number;
  lane: number;
  util: number;
  mem: number;
  power: number;
}

/** One hour's block, rows in time order except that `swaps` pairs of neighbours trade places (samplers posting late). */
/** `wide`: fractional util (no exact util sums), or `'power'`: fractional power only (the block is wide, util stays integer). */
function hourBlock(hour: number, rows: Row[], swaps: number, wide: boolean | 'power'): GpuUtilBlock {
  const lo = HOUR0 + hour * 3600;
  const b = new GpuUtilBlock(String(hour), lo, lo + 3600);
  const sorted = [...rows].sort((a, b) => a.s + a.frac - (b.s + b.frac));
  for (let k = 0; k < swaps && sorted.length > 1; k++) {
    const i = (k * 7919) % (sorted.length - 1);
    [sorted[i], sorted[i + 1]] = [sorted[i + 1], sorted[i]];
  }
  for (const r of sorted) b.push(lo + r.s + r.frac, r.lane, wide === true ? r.util + 0.5 : r.util, r.mem, wide === 'power' ? r.power + 0.25 : r.power);
  return b;
}

/** The block as an hour with its rollup, as the store hands it out. */
function rolledUp(b: GpuUtilBlock, lanes: LaneTable): GpuUtilHour {
  const keys = lanes.places();
  const cells = foldGpuUtilRows(null, rowsOfBlock(b, 0, b.length), keys, b.lo, b.hi);
  assert.ok(cells !== null);
  const laneIds = Uint16Array.from(cells.laneKeys, ([n, g]) => lanes.find(n, g));
  return { key: b.key, lo: b.lo, hi: b.hi, cells, laneIds, column: (c) => rowsOfBlock(b, cells.rowLo[c], cells.rowHi[c]), block: () => b };
}

const row = fc.record({
  s: fc.integer({ min: 0, max: 3599 }),
  frac: fc.oneof(fc.constant(0), fc.double({ min: 0, max: 0.999, noNaN: true })),
  lane: fc.integer({ min: 0, max: LANES - 1 }),
  util: fc.integer({ min: 0, max: 100 }),
  mem: fc.integer({ min: 0, max: 80000 }),
  power: fc.integer({ min: 0, max: 700 }),
});

const windows = fc.record({
  from: fc.integer({ min: -600, max: 7000 }),
  len: fc.integer({ min: 20, max: 8000 }),
  xb: fc.integer({ min: 1, max: 400 }),
  offset: fc.constantFrom(0, 0.25, 0.5),
  swaps: fc.integer({ min: 0, max: 20 }),
  wide: fc.constantFrom(false, true, 'power' as const),
});

test('property: fleet lane maxima, heatmap maxima and outlier means from rollup cells equal a pass over every row', () => {
  fc.assert(
    fc.property(fc.array(row, { maxLength: 300 }), fc.array(row, { maxLength: 300 }), windows, (r0, r1, w) => {
      const lanes = laneTable();
      const blocks = [hourBlock(0, r0, w.swaps, w.wide), hourBlock(1, r1, w.swaps, false)];
      const hours = blocks.map((b) => rolledUp(b, lanes));
      const t0 = HOUR0 + w.from + w.offset;
      const t1 = t0 + w.len;
      const xb = Math.max(2, w.xb);
      assert.deepEqual([...laneBucketMax(hours, lanes, t0, t1, xb).max], [...laneBucketMax(blockHours(blocks), lanes, t0, t1, xb).max]);
      const rows = Array.from({ length: LANES }, (_, g) => ({ node: '10.0.0.1', gpu: g }));
      for (const metric of ['util', 'mem_mb', 'power_w']) {
        const viaCells = magnitudeCells(hours, new LaneRows(lanes, rows), LANES, metric, t0, t1, xb);
        const viaRows = magnitudeCells(blockHours(blocks), new LaneRows(lanes, rows), LANES, metric, t0, t1, xb);
        assert.deepEqual([...viaCells], [...viaRows], metric);
      }
      for (const [a, b] of [[t0, t1], [null, null], [t0, null]] as [number | null, number | null][]) {
        assert.deepEqual(meanUtilByLane(hours, lanes, a, b), meanUtilByLane(blockHours(blocks), lanes, a, b));
      }
    }),
    { numRuns: 300 },
  );
});

test('rollup cells: per 10-s column and lane the count, maxima and util sum, and where the column rows lie', () => {
  const lanes = laneTable();
  const b = hourBlock(0, [
    { s: 0, frac: 0.5, lane: 0, util: 10, mem: 5, power: 100 },
    { s: 3, frac: 0, lane: 1, util: 30, mem: 7, power: 90 },
    { s: 9, frac: 0.99, lane: 0, util: 40, mem: 3, power: 120 },
    { s: 25, frac: 0, lane: 1, util: 5, mem: 9, power: 80 },
  ], 0, false);
  const h = rolledUp(b, lanes);
  const c = h.cells!;
  assert.equal(c.columns, 3600 / UTIL_CELL_S);
  assert.equal(c.compact, true);
  assert.deepEqual([...c.laneKeys], [['10.0.0.1', 0], ['10.0.0.1', 1]]);
  assert.deepEqual([...c.count.subarray(0, 6)], [2, 1, 0, 0, 0, 1]);
  assert.deepEqual([...c.maxUtil.subarray(0, 6)], [40, 30, 0, 0, 0, 5]);
  assert.deepEqual([...c.maxMem.subarray(0, 2)], [5, 7]);
  assert.deepEqual([...c.maxPower.subarray(0, 2)], [120, 90]);
  assert.deepEqual([...c.sumUtil!.subarray(0, 2)], [50, 30]);
  assert.deepEqual([...c.rowLo.subarray(0, 3)], [0, 0, 3]);
  assert.deepEqual([...c.rowHi.subarray(0, 3)], [3, 0, 4]);
  // a row outside its hour, or the legacy flat file, has no rollup
  const stray = new GpuUtilBlock('x', HOUR0, HOUR0 + 3600);
  stray.push(HOUR0 + 3601, 0, 1, 1, 1);
  assert.equal(foldGpuUtilRows(null, rowsOfBlock(stray, 0, 1), [['10.0.0.1', 0]], HOUR0, HOUR0 + 3600), null);
  assert.equal(foldGpuUtilRows(null, rowsOfBlock(stray, 0, 1), [['10.0.0.1', 0]], -Infinity, Infinity), null);
});

test('rollup cells: a wide hour keeps its util sums while every util is an integer, and drops them at a fractional one', () => {
  const lanes = laneTable();
  const keys = lanes.places();
  const rows: Row[] = Array.from({ length: 40 }, (_, i) => ({ s: i * 20, frac: 0, lane: i % 2, util: i, mem: 100 + i, power: 300 }));
  // fractional power makes the block wide; the util sums stay (and outliers read them)
  const b = hourBlock(0, rows, 0, 'power');
  assert.equal(b.wide, true);
  const c = foldGpuUtilRows(null, rowsOfBlock(b, 0, b.length), keys, b.lo, b.hi)!;
  assert.equal(c.compact, false);
  // row i lies in column 2i on lane i % 2: its cell holds util i alone
  assert.deepEqual(Array.from({ length: 40 }, (_, i) => c.sumUtil![2 * i * c.lanes + (i % 2)]), Array.from({ length: 40 }, (_, i) => i));
  // persisted and read back, a wide rollup keeps its sums too
  const back = decodeGpuRollup(encodeGpuRollup(c, { key: '0', ino: 1, born: 0, offset: 10 }), '0');
  assert.deepEqual([...back!.cells.sumUtil!], [...c.sumUtil!]);
  // a later fractional util drops the sums of the grown cells (extended in place), and they stay dropped
  b.push(b.lo + 900.5, 0, 12.5, 1, 1);
  const grown = foldGpuUtilRows(c, rowsOfBlock(b, 0, b.length), keys, b.lo, b.hi, c.rows)!;
  assert.equal(grown.sumUtil, null);
  b.push(b.lo + 901, 1, 7, 1, 1);
  assert.equal(foldGpuUtilRows(grown, rowsOfBlock(b, 0, b.length), keys, b.lo, b.hi, grown.rows)!.sumUtil, null);
});

test('rollup cells: folding rows in two parts equals folding them at once, new lanes included', () => {
  const lanes = laneTable();
  const keys = Array.from({ length: LANES }, (_, i) => [lanes.node(i), lanes.gpu(i)] as [string, number]);
  const rows: Row[] = Array.from({ length: 200 }, (_, i) => ({ s: (i * 37) % 3600, frac: 0, lane: i < 100 ? i % 2 : i % LANES, util: (i * 13) % 101, mem: i, power: 700 - i }));
  const b = hourBlock(0, rows, 5, false);
  const whole = foldGpuUtilRows(null, rowsOfBlock(b, 0, b.length), keys, b.lo, b.hi)!;
  const half = foldGpuUtilRows(null, rowsOfBlock(b, 0, 100), keys, b.lo, b.hi)!;
  const grown = foldGpuUtilRows(half, rowsOfBlock(b, 0, b.length), keys, b.lo, b.hi, half.rows)!;
  // lanes may be numbered differently (first seen); compare per lane key
  const perKey = (c: typeof whole): Record<string, number[]> =>
    Object.fromEntries(c.laneKeys.map(([n, g], l) => [`${n}:${g}`, Array.from({ length: c.columns }, (_, col) => [c.count[col * c.lanes + l], c.maxUtil[col * c.lanes + l], c.sumUtil![col * c.lanes + l]]).flat()]));
  assert.deepEqual(perKey(grown), perKey(whole));
  assert.deepEqual([...grown.rowLo], [...whole.rowLo]);
  assert.deepEqual([...grown.rowHi], [...whole.rowHi]);
  assert.equal(grown.rows, 200);
});

test('a cut column reads only its own rows, though a late row of a whole column lies among them', () => {
  const lanes = laneTable();
  // file order: column 0 (ts 1, 2), a row of column 1 written late (ts 12) amid column 0's, then column 0 again (ts 5), column 1 (ts 15)
  const lo = HOUR0;
  const b = new GpuUtilBlock('0', lo, lo + 3600);
  for (const [s, util] of [[1, 10], [12, 90], [5, 20], [15, 30]]) b.push(lo + s, 0, util, 1, 1);
  const hours = [rolledUp(b, lanes)];
  // window [3, 20]: column 0 is cut by t0 and must read only its rows with ts >= 3 (ts 5); column 1 is whole
  const got = meanUtilByLane(hours, lanes, lo + 3, lo + 20);
  assert.deepEqual(got, meanUtilByLane(blockHours([b]), lanes, lo + 3, lo + 20));
  assert.equal(got[0].score, (20 + 90 + 30) / 3);
});
