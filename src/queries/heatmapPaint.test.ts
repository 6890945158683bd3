import { test } from 'node:test';
import assert from 'node:assert/strict';
import { bucketOf, magnitudeBytes, paintLifecycle, paintPhases, peakOf } from './heatmapPaint.ts';
import type { TrajectoryLane } from './trajectoryLanes.ts';

test('bucketOf truncates and clamps to [0, xb-1]', () => {
  assert.equal(bucketOf(0, 0, 100, 10), 0);
  assert.equal(bucketOf(9.99, 0, 100, 10), 0);
  assert.equal(bucketOf(10, 0, 100, 10), 1);
  assert.equal(bucketOf(100, 0, 100, 10), 9);
  assert.equal(bucketOf(-5, 0, 100, 10), 0);
  assert.equal(bucketOf(500, 0, 100, 10), 9);
});

test('magnitude bytes: trunc(v/max*255) capped at 255, unfilled cells 0', () => {
  const cells = Float64Array.from([NaN, 0, 5, 100, 150, 20]);
  assert.deepEqual([...magnitudeBytes(cells, 100)], [0, 0, 12, 255, 255, 51]);
  assert.equal(peakOf(cells), 150);
  assert.equal(peakOf(Float64Array.from([NaN, NaN])), 1.0);
});

test('phase carpet: idle phases paint first, inclusive end bucket, later paint wins', () => {
  const rowOf = (node: string, gpu: number): number => (node === 'n' ? gpu : -1);
  const { palette, matrix } = paintPhases(
    [
      { name: 'rollout', t0: 0, t1: 30, node: 'n', gpu: 0 },
      { name: 'train_wait', t0: 25, t1: 100, node: 'n', gpu: 0 }, // idle: loses bucket 2..3 to rollout
      { name: 'actor_train', t0: 60, t1: 70, node: 'n', gpu: 0 },
      { name: 'update_weights', t0: 65, t1: 95, node: 'n', gpu: 0 }, // later active paint wins bucket 6
      { name: 'rollout', t0: 0, t1: 100, node: 'other', gpu: 1 }, // not a row
      { name: 'sleep', t0: -50, t1: 500, node: 'n', gpu: 1 }, // clipped to the window
    ],
    rowOf,
    2,
    0,
    100,
    10,
  );
  assert.deepEqual(palette, ['', 'actor_train', 'rollout', 'sleep', 'train_wait', 'update_weights']);
  assert.deepEqual([...matrix.subarray(0, 10)], [2, 2, 2, 2, 4, 4, 5, 5, 5, 5]);
  assert.deepEqual([...matrix.subarray(10, 20)], [3, 3, 3, 3, 3, 3, 3, 3, 3, 3]);
});

test('lifecycle carpet: queue under segments, open ends reach the window edge', () => {
  const lane = (attempts: TrajectoryLane['attempts'], segments: TrajectoryLane['segments']): TrajectoryLane => ({
    sample_index: 0,
    group_index: 0,
    first_ts: 0,
    last_ts: 0,
    segments,
    attempts,
    status: null,
    versions: [],
  });
  const m = paintLifecycle(
    [
      lane([{ t0: 10, t1: 80 }], [
        { kind: 'gen', t0: 20, t1: 40, turn: 1, weight_version: '' },
        { kind: 'tool', t0: 40, t1: 50, turn: 1, weight_version: '' },
      ]),
      lane([{ t0: 70, t1: null }], [{ kind: 'gen', t0: null, t1: 20, turn: -1, weight_version: '' }]),
    ],
    0,
    100,
    10,
  );
  assert.deepEqual([...m.subarray(0, 10)], [0, 1, 2, 2, 3, 3, 1, 1, 1, 0]);
  assert.deepEqual([...m.subarray(10, 20)], [2, 2, 2, 0, 0, 0, 0, 1, 1, 1]);
});
