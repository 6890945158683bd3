// `rlsight demo`'s run, served: every endpoint family answers and the run reads without a warning.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { generateDemoRun } from '../src/demo/index.ts';
import { engineMetricNames } from '../src/queries/engineSeries.ts';
import { type RunningServer, startServer } from '../src/server/listen.ts';
import { type OpenRun, openRun } from '../src/server/run.ts';

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
    // The catalog read from partition edges names exactly what a full parse finds.
    assert.deepEqual(meta.engine_metric_keys, engineMetricNames(run.store));
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
