import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SERIES_COLORS, seriesColor } from './theme.ts';

test('series colours are the palette while it lasts, then distinct for every series (16 engines)', () => {
  assert.deepEqual(Array.from({ length: 5 }, (_, i) => seriesColor(i, 5)), SERIES_COLORS.slice(0, 5));
  for (const n of [11, 16, 32]) {
    const colours = Array.from({ length: n }, (_, i) => seriesColor(i, n));
    assert.equal(new Set(colours).size, n, `${n} series: ${colours}`);
    for (const c of colours) assert.match(c, /^#[0-9a-f]{6}$/);
  }
});
