import { test } from 'node:test';
import assert from 'node:assert/strict';
import type uPlot from 'uplot';
import { yRange } from './yRange.ts';

const u = null as unknown as uPlot;

test('a flat series is widened around its value, upwards from zero when it never goes below it', () => {
  const [lo0, hi0] = yRange(u, 0, 0) as [number, number];
  assert.ok(lo0 > -0.1 && lo0 < 0, `a series that stays 0 starts just below it (${lo0})`);
  assert.ok(hi0 >= 1, `and spans a unit above (${hi0})`);
  const [lo5, hi5] = yRange(u, 5, 5) as [number, number];
  assert.ok(lo5 < 5 && hi5 > 5 && lo5 > 0, 'a flat 5 stays around 5');
  const [loN, hiN] = yRange(u, -2, -2) as [number, number];
  assert.ok(loN < -2 && hiN > -2, 'a flat negative value is centred');
  const [lo, hi] = yRange(u, 0, 10) as [number, number];
  assert.ok(lo < 0 && lo > -1 && hi > 10 && hi < 11, 'a varying series keeps its padding');
});
