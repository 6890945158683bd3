// `rlsight demo`'s run, served: every endpoint family answers and the run reads without a warning.
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { generateDemoRun } from '../src/demo/index.ts';
import { type RunningServer, startServer } from '../src/server/listen.ts';
import { type OpenRun, openRun } from '../src/commands/openRun.ts';

/**
 * How the API names the engine series the demo's Prometheus scrapes write: gauges as written; counters
 * as rates; `_seconds` sum/count pairs as means.
 */
const EXPOSED_AS: Record<string, string> = {
  sglang_prompt_tokens_total: 'sglang_prompt_tokens_per_s',
  sglang_generation_tokens_total: 'sglang_generation_tokens_per_s',
  sglang_num_requests_total: 'sglang_requests_per_s',
  sglang_num_aborted_requests_total: 'sglang_aborted_requests_per_s',
  sglang_time_to_first_token_seconds_sum: 'sglang_ttft_mean_s',
  sglang_time_to_first_token_seconds_count: 'sglang_ttft_mean_s',
  sglang_inter_token_latency_seconds_sum: 'sglang_inter_token_latency_mean_s',
  sglang_inter_token_latency_seconds_count: 'sglang_inter_token_latency_mean_s',
  sglang_time_per_output_token_seconds_sum: 'sglang_time_per_output_token_mean_s',
  sglang_time_per_output_token_seconds_count: 'sglang_time_per_output_token_mean_s',
  sglang_e2e_request_latency_seconds_sum: 'sglang_e2e_latency_mean_s',
  sglang_e2e_request_latency_seconds_count: 'sglang_e2e_latency_mean_s',
};
const GAUGES = ['sglang_num_running_reqs', 'sglang_num_queue_reqs', 'sglang_gen_throughput', 'sglang_token_usage', 'sglang_cache_hit_rate'];

/** Metric names on the engine-series lines the generator wrote, read straight from the files. */
function writtenEngineMetrics(runDir: string): Set<string> {
  const dir = join(runDir, 'dashboard', 'engine_series');
  const names = new Set<string>();
  for (const f of readdirSync(dir))
    for (const line of readFileSync(join(dir, f), 'utf8').split('\n')) if (line) names.add((JSON.parse(line) as { metric: string }).metric);
  return names;
}

describe('the demo run, served', () => {
  let base: string;
  let run: OpenRun;
  let server: RunningServer;
  before(async () => {
    base = mkdtempSync(join(tmpdir(), 'rlsight-demo-serve-'));
    await generateDemoRun(join(base, 'run'));
    run = await openRun(join(base, 'run'));
    server = await startServer(run, { port: 0 });
  });
  after(async () => {
    await server?.close();
    rmSync(base, { recursive: true, force: true });
  });

  const get = async (path: string): Promise<any> => {
    const res = await fetch(new URL(path, server.url));
    const body = res.headers.get('content-type')?.startsWith('application/json') ? await res.json() : await res.arrayBuffer();
    assert.equal(res.status, 200, `${path}: ${JSON.stringify(body).slice(0, 300)}`);
    return body;
  };

  test('every endpoint family answers 200 and nothing was skipped', async () => {
    const meta = await get('/api/meta');
    assert.ok(meta.rollout_ids.train.length >= 4, 'at least 4 steps');
    assert.ok(meta.rollout_ids.eval.length >= 1, 'an eval step');
    assert.ok(meta.capabilities.has_timeline && meta.capabilities.has_engine_series && meta.capabilities.has_tokenizer);
    const [t0, t1] = meta.time_range;
    const w = `t0=${t1 - 3600 > t0 ? t1 - 3600 : t0}&t1=${t1}`;
    const topo = await get('/api/timeline/topology');
    assert.ok(topo.lanes.length >= 8 && topo.lanes.length <= 16, `${topo.lanes.length} GPUs`);
    assert.ok((await get(`/api/timeline/phases?${w}`)).phases.length > 0);
    assert.ok(Object.keys((await get(`/api/timeline/gpu?${w}&lanes=g:0-3`)).lanes).length === 4);
    await get(`/api/timeline/gpu_processes?${w}`);
    for (const metric of ['util', 'mem_mb', 'power_w', 'phase', 'lifecycle']) await get(`/api/timeline/heatmap?metric=${metric}&x_buckets=200`);
    assert.equal((await get('/api/timeline/fleet?x_buckets=100')).lanes, topo.lanes.length);
    assert.ok((await get('/api/timeline/outliers?criterion=lowest_util')).outliers.length > 0);
    assert.ok((await get('/api/timeline/outliers?criterion=slowest_phase:train_wait')).outliers.length > 0);
    // The catalog names exactly the series the generator wrote (as the API exposes them), nothing more or less.
    const written = writtenEngineMetrics(join(base, 'run'));
    assert.deepEqual([...written].filter((m) => !(m in EXPOSED_AS)).sort(), [...GAUGES].sort(), 'the demo writes these gauges and the known counters');
    const expected = [...new Set([...written].map((m) => EXPOSED_AS[m] ?? m))].sort();
    assert.equal(expected.length, 13);
    assert.deepEqual(meta.engine_metric_keys, expected);
    for (const m of meta.engine_metric_keys) assert.ok((await get(`/api/timeline/engine_series?metric=${m}`)).series.length > 0, m);
    assert.ok((await get('/api/timeline/bubbles')).bubbles.length >= 4);
    const metrics = await get(`/api/metrics?keys=${meta.metric_keys.join(',')}`);
    assert.deepEqual(Object.keys(metrics).sort(), [...meta.metric_keys].sort());
    const advisory = await get('/api/advisory');
    assert.ok(Array.isArray(advisory.advisories) && advisory.mfu !== null);
    for (const rid of meta.rollout_ids.train) {
      const summary = await get(`/api/rollout/${rid}/summary`);
      await get(`/api/rollout/${rid}/groups`);
      assert.ok((await get(`/api/rollout/${rid}/trajectories`)).lanes.length > 0);
      const sample = summary.rows[0].sample_index;
      const tokens = await get(`/api/rollout/${rid}/sample/${sample}/tokens`);
      assert.ok(tokens.token_ids.length > 0 && tokens.token_text !== null);
    }
    for (const rid of meta.rollout_ids.eval) await get(`/api/rollout/${rid}/summary?eval=1`);
    const messages = await Promise.all(
      (await get(`/api/rollout/${meta.rollout_ids.train[0]}/summary`)).rows
        .slice(0, 16)
        .map((r: any) => fetch(new URL(`/api/rollout/${meta.rollout_ids.train[0]}/sample/${r.sample_index}/messages`, server.url))),
    );
    assert.ok(messages.some((r) => r.status === 200), 'some samples carry a conversation');
    assert.deepEqual(run.warnings(), []);
  });
});
