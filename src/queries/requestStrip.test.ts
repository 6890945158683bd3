import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { TrajectoryEvent } from '../run/telemetry/records.ts';
import { heatmap, type HeatmapSource } from './heatmap.ts';

/** `n` requests, request i queued at i, generating from i+1 to i+3 (seconds). */
function store(n: number): HeatmapSource {
  const events: TrajectoryEvent[] = [];
  for (let i = 0; i < n; i++) {
    const e = (ts: number, kind: string): TrajectoryEvent => ({ ts, kind, sample_index: i, group_index: i >> 2, turn: kind.startsWith('gen') ? 1 : -1, weight_version: '1', detail: '' });
    events.push(e(i, 'attempt_start'), e(i + 1, 'gen_start'), e(i + 3, 'gen_end'), e(i + 3, 'attempt_end'));
  }
  return { timeRange: () => [0, n + 3], trajectoryEvents: () => events, laneIndex: () => [] } as unknown as HeatmapSource;
}

test('with max_rows every request of the window is drawn: one row each while they fit', () => {
  const h = heatmap(store(1500), { metric: 'lifecycle', xBuckets: 100, maxRows: 2000 });
  assert.equal(h.header.rows.length, 1500, 'past the reference 1,024-row cap');
  assert.equal(h.header.rows_total, 1500);
  assert.deepEqual(h.header.rows[1499], { sample_index: 1499, group_index: 374 });
  // Without max_rows the reference's cap holds.
  assert.equal(heatmap(store(1500), { metric: 'lifecycle', xBuckets: 100 }).header.rows.length, 1024);
});

test('more requests than rows fold into density rows showing the busiest state of their requests', () => {
  const h = heatmap(store(100), { metric: 'lifecycle', xBuckets: 103, maxRows: 30 });
  const k = 4; // ceil(100 / 30)
  assert.equal(h.header.rows.length, 25);
  assert.deepEqual(h.header.rows[0], { first_sample: 0, last_sample: 3, count: k, t0: 0, t1: 6 });
  assert.equal(h.values.length, 25 * 103);
  // Each density cell is the busiest state of its requests' cells: generating over queued over idle.
  const each = heatmap(store(100), { metric: 'lifecycle', xBuckets: 103, maxRows: 100 }).values;
  const weight = [0, 1, 3, 2];
  for (let r = 0; r < 25; r++) {
    for (let c = 0; c < 103; c++) {
      const members = [0, 1, 2, 3].map((j) => each[(r * k + j) * 103 + c]!);
      const busiest = members.reduce((a, b) => (weight[b]! > weight[a]! ? b : a), 0);
      assert.equal(h.values[r * 103 + c], busiest, `row ${r} bucket ${c}`);
    }
  }
  assert.ok(h.values.includes(2) && h.values.includes(1));
  assert.throws(() => heatmap(store(3), { metric: 'lifecycle', maxRows: 0 }), /max_rows/);
});
