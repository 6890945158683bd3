import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Frame } from '../viewport.ts';
import { drawUtil, gapBreaks } from './utilLine.ts';

/** Seconds at which a sampler reported: every `step` s over `[from, to)`. */
const every = (from: number, to: number, step: number): number[] => Array.from({ length: Math.ceil((to - from) / step) }, (_, i) => from + i * step);

test('a silence over 4x the usual spacing breaks the line; slower stretches and jitter do not', () => {
  // 1-s samples, a 2-minute stop, then 1-s samples again
  const ts = Float64Array.from([...every(0, 60, 1), ...every(180, 240, 1)]);
  const breaks = gapBreaks(ts);
  assert.deepEqual([...breaks.keys()].filter((i) => breaks[i]), [60]);
  // 3.9x the usual spacing is a slow stretch, not a gap
  assert.deepEqual([...gapBreaks([0, 1, 2, 3, 6.9, 7.9, 8.9])].filter(Boolean), []);
  assert.deepEqual([...gapBreaks([0, 1, 2, 3, 7.1, 8.1, 9.1])], [0, 0, 0, 0, 1, 0, 0]);
  // the usual spacing is the median one: a few long gaps do not raise it
  assert.deepEqual([...gapBreaks([0, 2, 4, 100, 102, 200, 202, 204])], [0, 0, 0, 1, 0, 1, 0, 0]);
  // repeated stamps say nothing of the spacing
  assert.deepEqual([...gapBreaks([0, 0, 0, 0, 1, 2, 3])], [0, 0, 0, 0, 0, 0, 0]);
  // fewer than three samples tell no usual spacing
  assert.deepEqual([...gapBreaks([0, 1000])], [0, 0]);
});

/** The pen moves of the utilisation line as drawn: each `moveTo` starts a new piece. */
function pieces(ts: ArrayLike<number>, util: ArrayLike<number>): number {
  let moves = 0;
  class Path2DStub {
    moveTo(): void {
      moves++;
    }
    lineTo(): void {}
    closePath(): void {}
  }
  const g = globalThis as { Path2D?: unknown };
  const had = g.Path2D;
  g.Path2D = Path2DStub;
  const noop = (): void => {};
  const ctx = { save: noop, restore: noop, beginPath: noop, rect: noop, clip: noop, setLineDash: noop, fill: noop, stroke: noop } as unknown as CanvasRenderingContext2D;
  const f: Frame = { left: 0, width: 1000, vp: { t0: 0, t1: 240 } } as Frame;
  try {
    moves = 0;
    drawUtil(ctx, f, ts, util, 0, 32);
  } finally {
    g.Path2D = had;
  }
  // the stroke and the filled area each start a piece where the line does
  return moves / 2;
}

test('the utilisation line is drawn in two pieces around a 2-minute stop, one without it', () => {
  const ts = [...every(0, 60, 1), ...every(180, 240, 1)];
  assert.equal(pieces(ts, ts.map(() => 50)), 2);
  const steady = every(0, 240, 1);
  assert.equal(pieces(steady, steady.map(() => 50)), 1);
});
