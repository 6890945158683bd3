import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fixturePath, readFixtureJson } from '../../test/support/fixtures.ts';
import { readSlimeDump } from '../run/slime/dump.ts';
import {
  computeStatistics,
  evalDatasets,
  evalMetrics,
  pairwiseSum,
  perfMetricsCompat,
  requestPerfMetricsCompat,
  requestPerfMetricsFixed,
  rolloutStepMetrics,
  sampleMetrics,
} from './slimePerf.ts';

const FIXTURES = ['slime-trace', 'slime-trace-legacy-pd'];

/** Keys and values in slime's order; values to the last bit. */
function assertSameDict(actual: Record<string, number>, expected: Record<string, number>, what: string): void {
  assert.deepEqual(Object.keys(actual), Object.keys(expected), `${what}: keys / key order`);
  for (const k of Object.keys(expected)) assert.equal(actual[k], expected[k], `${what}: ${k}`);
}

for (const fixture of FIXTURES) {
  for (const id of [0, 1]) {
    test(`${fixture} rollout ${id}: perf/, rollout/ and the logged dict equal slime's`, async () => {
      const golden = readFixtureJson(fixture, 'golden', `perf_${id}.json`);
      const dump = await readSlimeDump(fixturePath(fixture, 'rollout_data', `${id}.pt`));
      const inputs = { rolloutTime: golden.inputs.rollout_time, rolloutNumGpus: golden.inputs.args.rollout_num_gpus };
      assertSameDict(requestPerfMetricsCompat(dump.samples), golden._compute_sglang_request_perf_metrics, 'request perf');
      assertSameDict(perfMetricsCompat(dump.samples, inputs), golden.compute_perf_metrics_from_samples, 'perf');
      assertSameDict(sampleMetrics(dump.samples, { advantageEstimator: golden.inputs.args.advantage_estimator }), golden.compute_metrics_from_samples, 'rollout');
      const logged = rolloutStepMetrics(dump.samples, { ...inputs, extra: golden.inputs.rollout_extra_metrics, advantageEstimator: 'grpo' });
      const slimeKeys = Object.fromEntries(Object.entries(logged).filter(([k]) => !k.startsWith('perf_fixed/')));
      const { 'rollout/step': step, ...want } = golden.log_rollout_data.logged;
      assert.equal(step, id);
      assertSameDict(slimeKeys, want, 'logged');
    });
  }
}

test('eval metrics equal slime log_eval_rollout_data once the dataset names are given', async () => {
  const golden = readFixtureJson('slime-trace', 'golden', 'eval_metrics_0.json');
  const dump = await readSlimeDump(fixturePath('slime-trace', 'rollout_data', 'eval_0.pt'));
  assert.equal(dump.evaluation, true);
  const sets = evalDatasets(dump.samples, Object.keys(golden.inputs.datasets));
  assert.deepEqual(sets.map((s) => [s.name, s.samples.length]), Object.entries(golden.inputs.datasets));
  const { 'eval/step': step, ...want } = golden.log_eval_rollout_data.logged;
  assert.equal(step, 0);
  assertSameDict(evalMetrics(sets), want, 'eval');
  assertSameDict(requestPerfMetricsCompat(dump.samples), golden._compute_sglang_request_perf_metrics__not_logged_for_eval, 'eval request perf');
  // Without names the split is the same, named by position.
  assert.deepEqual(evalDatasets(dump.samples).map((s) => s.name), ['dataset0', 'dataset1']);
});

test('without rollout_time the rate metrics are left out, not guessed', async () => {
  const dump = await readSlimeDump(fixturePath('slime-trace', 'rollout_data', '0.pt'));
  const m = perfMetricsCompat(dump.samples);
  assert.equal(m.rollout_time, undefined);
  assert.equal(m.longest_sample_tokens_per_sec, undefined);
  assert.ok(m['request/e2e_latency/mean'] > 0);
  const noGpus = perfMetricsCompat(dump.samples, { rolloutTime: 10 });
  assert.equal(noGpus.tokens_per_gpu_per_sec, undefined);
  assert.ok(noGpus.longest_sample_tokens_per_sec > 0);
});

for (const fixture of FIXTURES) {
  for (const id of [0, 1]) {
    test(`${fixture} rollout ${id}: without rollout_time, every perf/ key that does not divide by it equals slime's`, async () => {
      const golden = readFixtureJson(fixture, 'golden', `perf_${id}.json`).compute_perf_metrics_from_samples as Record<string, number>;
      const dump = await readSlimeDump(fixturePath(fixture, 'rollout_data', `${id}.pt`));
      // rollout_time itself and the rates over it (tokens_per_gpu_per_sec, *tokens_per_sec*) need it; nothing else does
      const needsTime = (k: string): boolean => k === 'rollout_time' || /tokens_per_(gpu_per_)?sec/.test(k);
      const want = Object.fromEntries(Object.entries(golden).filter(([k]) => !needsTime(k)));
      assertSameDict(perfMetricsCompat(dump.samples), want, 'perf without rollout_time');
      // the longest samples' non-generation time needs only the samples
      const longest = Object.keys(golden).filter((k) => /^longest_.*non_generation_time$/.test(k));
      assert.deepEqual(longest.length, id === 0 && fixture === 'slime-trace' ? 0 : 2, 'slime logs them whenever a sample has non-generation time');
      for (const k of longest) assert.equal(perfMetricsCompat(dump.samples, { rolloutNumGpus: 8 })[k], golden[k], k);
    });
  }
}

test('NumPy statistics: pairwise mean, even median, block sums', () => {
  assert.deepEqual(computeStatistics([3, 1, 2, 4]), { mean: 2.5, median: 2.5, max: 4, min: 1 });
  const many = Array.from({ length: 300 }, (_, i) => 0.1 * (i + 1));
  // Pairwise summation differs from a left fold in the last bits; it equals the blocked order.
  const blocked = pairwiseSum(many.slice(0, 144)) + pairwiseSum(many.slice(144));
  assert.equal(pairwiseSum(many), blocked);
});

test('corrected mode on the current layout: streaming counted, PD values from child spans and the summary event', async () => {
  const dump = await readSlimeDump(fixturePath('slime-trace', 'rollout_data', '0.pt'));
  const m = requestPerfMetricsFixed(dump.samples);
  // 8 sglang_generate + 4 sglang_generate_stream spans, every one with an e2e_latency.
  assert.equal(m['request/count'], 12);
  assert.equal(m['request/streaming_count'], 4);
  assert.equal(m['request/profiled_count'], 12);
  // Samples 4–7 are PD requests; their prefill forward durations live on sglang_pd_prefill_forward spans.
  const fwd = [0.023849010467529297, 0.0399630069732666, 0.03423309326171875, 0.02960371971130371];
  assert.equal(m['prefill/forward_duration/max'], 0.0399630069732666);
  assert.equal(m['prefill/forward_duration/min'], 0.023849010467529297);
  assert.equal(m['prefill/forward_duration/median'], (0.02960371971130371 + 0.03423309326171875) / 2);
  assert.ok(Math.abs(m['prefill/forward_duration/mean'] - fwd.reduce((a, b) => a + b) / 4) < 1e-15);
  // The summary event: retry counts 0, 0, 0, 1; sample 7 has no transfer speed.
  assert.equal(m['prefill/retry_count/mean'], 0.25);
  assert.equal(m['prefill/retry_count/max'], 1);
  assert.equal(m['prefill/transfer_total_mb/min'], 8.34375);
  assert.equal(m['prefill/transfer_speed_gb_s/max'], 2.7527595059177843);
  // Percentiles over the 12 latencies (linear interpolation).
  assert.equal(m['request/e2e_latency/p50'], (2.6824874877929688 + 2.9906251430511475) / 2);
  assert.equal(m['request/e2e_latency/p90'], 7.652953624725342 + (8.62163758277893 - 7.652953624725342) * (9.9 - 9));
  assert.equal(m['request/e2e_latency/max'], 9.172343492507935);
  // slime's own keys lack all of it (the regression the corrected mode fixes).
  const compat = requestPerfMetricsCompat(dump.samples);
  assert.equal(compat['prefill/forward_duration/mean'], undefined);
  assert.equal(compat['request/count'], undefined);
});

test('corrected mode on the legacy flat layout agrees with slime where slime is right', async () => {
  const dump = await readSlimeDump(fixturePath('slime-trace-legacy-pd', 'rollout_data', '0.pt'));
  const fixed = requestPerfMetricsFixed(dump.samples);
  const compat = requestPerfMetricsCompat(dump.samples);
  assert.equal(fixed['request/count'], 15);
  assert.equal(fixed['request/streaming_count'], 0);
  for (const k of ['prefill/forward_duration/mean', 'decode/forward_duration/max', 'request/e2e_latency/median']) assert.equal(fixed[k], compat[k], k);
  const later = requestPerfMetricsFixed((await readSlimeDump(fixturePath('slime-trace-legacy-pd', 'rollout_data', '1.pt'))).samples);
  assert.equal(later['request/count'], 9);
  assert.equal(later['request/streaming_count'], 1);
});
