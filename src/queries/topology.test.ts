import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { copyFixtureRun, diffJson, loadGoldens } from '../../test/support/fixtures.ts';
import { TelemetryStore } from '../run/telemetry/store.ts';
import type { MetricsRecord } from '../run/telemetry/records.ts';
import { bubbles } from './bubbles.ts';
import { topology } from './topology.ts';

test('topology and bubbles reproduce the demo goldens', () => {
  const run = copyFixtureRun();
  try {
    const store = TelemetryStore.open(join(run.dir, 'dashboard'));
    const goldens = loadGoldens();
    const topo = goldens.find((g) => g.group === 'topology')!;
    assert.equal(diffJson(topology(store), topo.body), null);
    const bub = goldens.find((g) => g.group === 'bubbles')!;
    assert.equal(diffJson({ bubbles: bubbles(store) }, bub.body), null);
  } finally {
    run.dispose();
  }
});

test('bubbles: only rollout/step records with a step time or wait ratio, either may be null', () => {
  const records: MetricsRecord[] = [
    { ts: 1, step_key: 'rollout/step', step: 0, metrics: { 'perf/step_time': 5 } },
    { ts: 2, step_key: 'train/step', step: 0, metrics: { 'perf/step_time': 5 } },
    { ts: 3, step_key: 'rollout/step', step: 1, metrics: { other: 1 } },
    { ts: 4, step_key: 'rollout/step', step: 2, metrics: { 'perf/wait_time_ratio': 0.5 } },
  ];
  assert.deepEqual(bubbles({ metricsRecords: () => records }), [
    { step: 0, ts: 1, step_time: 5, wait_ratio: null },
    { step: 2, ts: 4, step_time: null, wait_ratio: 0.5 },
  ]);
});
