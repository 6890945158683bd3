import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { copyFixtureRun, diffJson, loadGoldens, readFixtureJson } from '../../test/support/fixtures.ts';
import { TelemetryStore } from '../run/telemetry/store.ts';
import { BadArgument } from './limits.ts';
import { engineMetricNames, engineSeries } from './engineSeries.ts';

const run = copyFixtureRun();
after(() => run.dispose());
const store = TelemetryStore.open(join(run.dir, 'dashboard'));
const goldens = loadGoldens().filter((g) => g.request.startsWith('/api/timeline/engine_series'));

function query(request: string) {
  const p = new URL(request, 'http://x').searchParams;
  const num = (k: string) => (p.has(k) ? Number(p.get(k)) : undefined);
  const dp = p.get('per_dp_rank');
  return { metric: p.get('metric') ?? '', t0: num('t0'), t1: num('t1'), maxPoints: num('max_points'), perDpRank: dp === 'true' || dp === '1' };
}

test('every engine_series golden is reproduced (cold and from the whole-run cache)', () => {
  const ok = goldens.filter((g) => g.status === 200);
  assert.ok(ok.length >= 25);
  for (let pass = 0; pass < 2; pass++) {
    for (const g of ok) {
      const d = diffJson(engineSeries(store, query(g.request)), g.body);
      assert.equal(d, null, `${g.file} ${g.request}: ${d}`);
    }
  }
});

test('bad engine_series arguments are QueryErrors naming the parameter', () => {
  const bad = goldens.filter((g) => g.status === 400);
  assert.ok(bad.length >= 2);
  for (const g of bad) {
    assert.throws(
      () => engineSeries(store, query(g.request)),
      (e: unknown) => e instanceof BadArgument && e.message === g.body.detail && typeof e.param === 'string',
      g.file,
    );
  }
});

test('the engine metric catalog matches /api/meta, cold (nothing parsed) and from resident blocks', () => {
  const meta = readFixtureJson('miles-demo', 'golden', '000.json').body;
  const cold = TelemetryStore.open(join(run.dir, 'dashboard'));
  assert.deepEqual(engineMetricNames(cold), meta.engine_metric_keys);
  assert.deepEqual(cold.partitions.engine_series.cachedKeys(), [], 'the catalog parses no block');
  cold.engineSeriesBlocks();
  assert.deepEqual(engineMetricNames(cold), meta.engine_metric_keys);
});

test('the catalog drops cumulative names and adds each derived rate and mean whose inputs exist', () => {
  const present = ['sglang_num_running_reqs', 'sglang_prompt_tokens_total', 'sglang_e2e_request_latency_seconds_sum', 'sglang_e2e_request_latency_seconds_count', 'sglang_time_to_first_token_seconds_sum', 'we"ird'];
  assert.deepEqual(engineMetricNames({ engineMetricsPresent: () => present }), ['sglang_e2e_latency_mean_s', 'sglang_num_running_reqs', 'sglang_prompt_tokens_per_s', 'we"ird']);
  assert.deepEqual(engineMetricNames({ engineMetricsPresent: () => [] }), []);
});

test('follow(): appended rows reach the whole-run answer (cache invalidated), dp ranks fold', async () => {
  const { appendFileSync } = await import('node:fs');
  const copy = copyFixtureRun();
  try {
    const dash = join(copy.dir, 'dashboard');
    const live = TelemetryStore.open(dash);
    const before = engineSeries(live, { metric: 'sglang_num_running_reqs' }).series;
    assert.equal(before.length, 3);
    const line = (ts: number, rank: string, value: number) =>
      JSON.stringify({ ts, addr: 'http://10.0.0.1:15000', metric: 'sglang_num_running_reqs', labels: { engine_type: 'unified', dp_rank: rank }, value }) + '\n';
    appendFileSync(join(dash, 'engine_series', '19700112_13.jsonl'), line(1000330, '0', 3) + line(1000330, '1', 4) + line(1000332, '0', 1) + '{"ts":1000334.0,"addr');
    live.follow();
    const after = engineSeries(live, { metric: 'sglang_num_running_reqs' }).series;
    assert.equal(after.length, 4);
    const added = after.find((s) => s.labels.engine_type === 'unified');
    assert.deepEqual(added, { addr: 'http://10.0.0.1:15000', labels: { engine_type: 'unified' }, ts: [1000330, 1000332], value: [7, 1] });
    const perRank = engineSeries(live, { metric: 'sglang_num_running_reqs', perDpRank: true }).series.filter((s) => s.labels.engine_type);
    assert.deepEqual(perRank.map((s) => [s.labels.dp_rank, s.value]), [['0', [3, 1]], ['1', [4]]]);
  } finally {
    copy.dispose();
  }
});

test('a value scraped as NaN or ±Infinity is null in JSON and listed in nonfinite, as /api/metrics lists it', async () => {
  const { appendFileSync } = await import('node:fs');
  const copy = copyFixtureRun();
  try {
    const dash = join(copy.dir, 'dashboard');
    const live = TelemetryStore.open(dash);
    // bare NaN/Infinity, as miles' collector (Python's json.dumps) writes them
    const line = (ts: number, value: string) => `{"ts":${ts},"addr":"http://10.0.0.1:15000","metric":"sglang_kv_transfer_speed_gb_s","labels":{},"value":${value}}\n`;
    appendFileSync(join(dash, 'engine_series', '19700112_13.jsonl'), line(1000330, 'NaN') + line(1000332, '2.5') + line(1000334, 'Infinity') + line(1000336, '-Infinity'));
    live.follow();
    const [s] = engineSeries(live, { metric: 'sglang_kv_transfer_speed_gb_s' }).series;
    assert.deepEqual(s.nonfinite, [[0, 'NaN'], [2, 'Infinity'], [3, '-Infinity']]);
    assert.deepEqual(JSON.parse(JSON.stringify(s.value)), [null, 2.5, null, null]);
    assert.equal(engineSeries(live, { metric: 'sglang_num_running_reqs' }).series.every((x) => x.nonfinite === undefined), true);
  } finally {
    copy.dispose();
  }
});
