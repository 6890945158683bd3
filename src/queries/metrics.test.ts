import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { diffJson, fixtureTelemetry, loadGoldens } from '../../test/support/fixtures.ts';
import { BadArgument } from './limits.ts';
import { DUMP_METRIC_PREFIX, WALL_TIME_X, dumpMetricSeries, metricKeyList, metricSeries, metricsAnswer } from './metrics.ts';
import type { StepAggregate } from './rollouts.ts';

describe('metrics on the demo run', () => {
  const fixture = fixtureTelemetry();

  const goldens = loadGoldens().filter((g) => g.group === 'metrics' && g.status === 200);

  test('catalog parts of /api/meta', () => {
    const meta = loadGoldens().find((g) => g.group === 'meta')!.body;
    assert.deepEqual(fixture.store.metricKeys(), meta.metric_keys);
    assert.deepEqual(fixture.store.stepKeys(), meta.step_keys);
  });

  for (const g of goldens.filter((x) => !x.request.includes(DUMP_METRIC_PREFIX))) {
    test(`${g.file} ${g.request}`, () => {
      const p = new URL(g.request, 'http://x').searchParams;
      const keys = p.get('keys')!.split(',').filter((k) => k !== '');
      const t0 = p.get('t0');
      const t1 = p.get('t1');
      const out = metricSeries(fixture.store, keys, { x: p.get('x') ?? 'rollout/step', t0: t0 === null ? null : Number(t0), t1: t1 === null ? null : Number(t1) });
      assert.equal(diffJson(out, g.body), null);
    });
  }

  // The dump aggregates, as the dump reader hands them over (values copied from the all-dump golden).
  const dumpGolden = goldens.find((g) => g.request.includes('dump/mixed_version_frac'))!;
  const aggregates: StepAggregate[] = [0, 1, 2].map((rollout_id, i) => {
    const row: Record<string, number | null> = {};
    for (const [key, s] of Object.entries(dumpGolden.body as Record<string, { y: number[] }>)) row[key.slice(5)] = s.y[i];
    return { rollout_id, n_samples: 32, ...row } as StepAggregate;
  });

  for (const g of goldens.filter((x) => x.request.includes(DUMP_METRIC_PREFIX))) {
    test(`${g.file} ${g.request} (dump/* from aggregates)`, async () => {
      const p = new URL(g.request, 'http://x').searchParams;
      const keys = p.get('keys')!.split(',').filter((k) => k !== '');
      let asked = 0;
      const out = await metricsAnswer(fixture.store, keys, { x: p.get('x') ?? 'rollout/step' }, () => {
        asked++;
        return aggregates;
      });
      assert.equal(asked, 1);
      assert.equal(diffJson(out, g.body), null);
      assert.deepEqual(Object.keys(out), [...keys.filter((k) => !k.startsWith('dump/')), ...keys.filter((k) => k.startsWith('dump/'))]);
    });
  }

  test('dump aggregates are not asked for without a dump/* key', async () => {
    await metricsAnswer(fixture.store, ['rollout/rewards_mean'], { x: 'rollout/step' }, () => assert.fail('asked'));
  });

  test('null aggregates are dropped; unknown dump columns and empty key lists are 400s', async () => {
    const out = dumpMetricSeries([{ ...aggregates[0], reward_mean: null }, aggregates[1]], ['dump/reward_mean']);
    assert.deepEqual(out['dump/reward_mean'].x, [1]);
    await assert.rejects(metricsAnswer(fixture.store, ['dump/nope'], { x: 'rollout/step' }, () => aggregates), (e: unknown) => e instanceof BadArgument && e.param === 'keys' && e.message === "unknown dump metric 'dump/nope'");
    assert.throws(() => metricKeyList(',,'), (e: unknown) => e instanceof BadArgument && e.param === 'keys');
    assert.deepEqual(metricKeyList('a,,a,b'), ['a', 'a', 'b']);
  });

  test('wall-clock axis: x is the record time, whatever the step key', () => {
    const out = metricSeries(fixture.store, ['perf/step_time'], { x: WALL_TIME_X, t0: 1000200 });
    assert.deepEqual(out['perf/step_time'], { x: [1000225, 1000325], y: [94, 93], ts: [1000225, 1000325] });
  });

  test('a record with a step key and no step is on the wall-clock axis only, never a point at x = null', () => {
    const records = [
      { ts: 10, step_key: 'train/step', step: 1, metrics: { loss: 2 } },
      { ts: 11, step_key: 'train/step', step: null, metrics: { loss: 3 } },
    ];
    const store = { metricsRecords: () => records, metricKeys: () => ['loss'], stepKeys: () => ['train/step'] };
    assert.deepEqual(metricSeries(store, ['loss'], { x: 'train/step' }).loss, { x: [1], y: [2], ts: [10] });
    assert.deepEqual(metricSeries(store, ['loss'], { x: WALL_TIME_X }).loss, { x: [10, 11], y: [2, 3], ts: [10, 11] });
  });
});

test('a value logged as NaN or ±inf is a point said as what it is (JSON holds it as null), and the TensorBoard export keeps it', async () => {
  const { scalarEvents } = await import('./exports.ts');
  const records = [0, 1, 2, 3].map((step) => ({ ts: 100 + step, step_key: 'rollout/step', step, metrics: { loss: [0.5, Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY][step]! } }));
  const s = metricSeries({ metricsRecords: () => records } as never, ['loss'], { x: 'rollout/step' }).loss!;
  assert.deepEqual(s.x, [0, 1, 2, 3]);
  assert.deepEqual(s.nonfinite, [[1, 'NaN'], [2, 'Infinity'], [3, '-Infinity']]);
  assert.equal(JSON.stringify(s.y), '[0.5,null,null,null]');
  // a finite series says nothing more
  assert.equal(metricSeries({ metricsRecords: () => records.slice(0, 1) } as never, ['loss'], { x: 'rollout/step' }).loss!.nonfinite, undefined);
  const events = scalarEvents({ columns: ['_step_key', '_step', 'loss'], rows: records.map((r) => [r.step_key, r.step, r.metrics.loss]) }, new Map(), 0);
  assert.deepEqual(events.map((e) => (e.scalars as ReadonlyMap<string, number>).get('loss')), [0.5, Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY]);
});
