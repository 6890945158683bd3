import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { LanePhases } from '../../../columns.ts';
import { hasOverlap } from './phaseBand.ts';

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
