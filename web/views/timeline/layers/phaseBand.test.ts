import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { LanePhases } from '../../../columns.ts';
import type { Frame } from '../viewport.ts';
import { drawPhaseBand, hasOverlap } from './phaseBand.ts';

/** One lane's phases as columns, as the app holds them (views over a frame; here plain typed arrays). */
const lane = (rows: [number, number][]): LanePhases => ({
  length: rows.length,
  t0: Float64Array.from(rows, (r) => r[0]),
  t1: Float64Array.from(rows, (r) => r[1]),
  name: new Uint32Array(rows.length),
  role: new Uint32Array(rows.length),
  rank: new Int32Array(rows.length),
  strings: ['x'],
  unfinished: null,
});

test('back-to-back phases do not overlap; a phase inside another does', () => {
  assert.equal(hasOverlap(lane([[0, 10], [10, 20], [20, 30]])), false);
  assert.equal(hasOverlap(lane([[0, 30], [5, 10]])), true);
  assert.equal(hasOverlap(lane([[0, 10], [2, 4], [12, 20]])), true);
  assert.equal(hasOverlap(lane([])), false);
  assert.equal(hasOverlap(undefined), false);
});

/** The rectangles a band fills, recorded as [x, width]. */
function filled(phases: LanePhases, f: Frame): [number, number][] {
  const rects: [number, number][] = [];
  const ctx = { fillStyle: '', fillRect: (x: number, _y: number, w: number) => void rects.push([x, w]) } as unknown as CanvasRenderingContext2D;
  drawPhaseBand(ctx, f, phases, 0, 10);
  return rects;
}

test('a phase still open at the data edge with no length yet is drawn 3 px wide; a closed one of no length, 1 px', () => {
  // 1,000 s over 1,000 px: the phases below start at 500 s and have no length
  const f: Frame = { left: 0, width: 1000, vp: { t0: 0, t1: 1000 } };
  const phases = (open: ReadonlySet<number> | null): LanePhases => ({
    length: 1,
    t0: Float64Array.of(500),
    t1: Float64Array.of(500),
    name: Uint32Array.of(0),
    role: Uint32Array.of(1),
    rank: Int32Array.of(0),
    strings: ['update_weights', 'train'],
    unfinished: null,
    open,
  });
  assert.deepEqual(filled(phases(new Set([0])), f), [[500, 3]]);
  assert.deepEqual(filled(phases(null), f), [[500, 1]]);
});
