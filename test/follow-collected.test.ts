// `serve --follow` started on a collector's run before its first samples step: the run holds telemetry only,
// and once a step's samples file is written the next follow tick serves them (no restart). A step whose
// samples are still arriving is a 503 while the collector runs, and a 422 naming it once the collector stopped.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { openRun } from '../src/commands/openRun.ts';
import { PENDING_SUFFIX, SAMPLES_DIR, sampleStepFile } from '../src/formats/collectedSamples.ts';
import { encodeSampleStep } from '../src/formats/collectedSamplesWrite.ts';
import { createApp } from '../src/server/app.ts';
import { startRunsServer } from '../src/server/listen.ts';
import { ServedRuns } from '../src/server/runSet.ts';

const root = mkdtempSync(join(tmpdir(), 'rlsight-follow-collected-'));
after(() => rmSync(root, { recursive: true, force: true }));

test('a followed run gains the Rollouts of its first samples step without a restart', async () => {
  const dir = join(root, 'live');
  mkdirSync(join(dir, 'dashboard'), { recursive: true });
  writeFileSync(join(dir, 'dashboard', 'meta.json'), JSON.stringify({ run_name: 'live', start_ts: 1000, schema_version: 1 }));
  writeFileSync(join(dir, 'dashboard', 'metrics.jsonl'), JSON.stringify({ ts: 1001, step_key: 'rollout/step', step: 0, metrics: { 'rollout/step': 0, loss: 0.5 } }) + '\n');
  const runs = new ServedRuns({ follow: true, followTimer: false }, (d) => openRun(d));
  runs.add(dir, await openRun(dir));
  const server = await startRunsServer(runs, { port: 0, follow: true });
  try {
    const get = (path: string) => fetch(new URL(path, server.url));
    const before = (await (await get('/api/meta')).json()) as { rollout_ids: unknown };
    assert.deepEqual(before.rollout_ids, { train: [], eval: [] });
    assert.equal((await get('/api/rollout/0/summary')).status, 404);

    const samples = [0, 1, 2, 3].map((i) => ({ index: i, group_index: i >> 1, prompt: `question ${i}`, response: `answer ${i}`, tokens: [1, 2, 3, 4], response_length: 2, reward: i % 2, status: 'completed', loss_mask: [1, 1] }));
    mkdirSync(join(dir, SAMPLES_DIR));
    writeFileSync(join(dir, SAMPLES_DIR, sampleStepFile(0, false)), encodeSampleStep(samples));
    const events = await runs.firstFollower()!.tick();

    const after = (await (await get('/api/meta')).json()) as { rollout_ids: unknown };
    assert.deepEqual(after.rollout_ids, { train: [0], eval: [] });
    assert.ok(events.some((e) => JSON.stringify(e).includes('rollout')), `events ${JSON.stringify(events)}`);
    const summary = await get('/api/rollout/0/summary');
    assert.equal(summary.status, 200, await summary.clone().text());
    const table = (await summary.json()) as { rows: Record<string, unknown>[] };
    const col = (name: string) => table.rows.map((r) => r[name]);
    assert.deepEqual(col('sample_index'), [0, 1, 2, 3]);
    assert.deepEqual(col('reward'), [0, 1, 0, 1]);
    const listed = (await (await get('/api/runs')).json()) as { runs: { formats: string[] }[] };
    assert.deepEqual(listed.runs[0].formats, ['collected']);
  } finally {
    await server.close();
  }
});

test('a step still arriving is a 503 while its collector runs and a 422 naming it once the collector stopped', async () => {
  const dir = join(root, 'stopped');
  mkdirSync(join(dir, 'dashboard'), { recursive: true });
  mkdirSync(join(dir, SAMPLES_DIR));
  writeFileSync(join(dir, 'dashboard', 'meta.json'), JSON.stringify({ run_name: 'stopped', start_ts: 1000, schema_version: 1 }));
  const collectorFile = join(dir, 'dashboard', 'collector.json');
  writeFileSync(collectorFile, JSON.stringify({ address: 'http://127.0.0.1:1', token: 't', pid: 1, started_ts: 1000 }));
  writeFileSync(join(dir, SAMPLES_DIR, sampleStepFile(0, false)), encodeSampleStep([{ index: 0, group_index: 0, prompt: 'q', response: 'a', tokens: [1, 2], response_length: 1, reward: 1, status: 'completed', loss_mask: [1] }]));
  writeFileSync(join(dir, SAMPLES_DIR, sampleStepFile(1, false) + PENDING_SUFFIX), '');
  const app = createApp({ run: await openRun(dir) });
  const get = (path: string) => app.request(path, { headers: { host: '127.0.0.1' } });
  const arriving = await get('/api/rollout/1/summary');
  assert.equal(arriving.status, 503);
  assert.ok(arriving.headers.get('retry-after'));
  unlinkSync(collectorFile);
  const stopped = await get('/api/rollout/1/summary');
  assert.equal(stopped.status, 422);
  assert.match(((await stopped.json()) as { detail: string }).detail, /samples\/rollout_000001\.parquet: its samples did not all arrive before the collector stopped/);
  assert.equal((await get('/api/rollout/0/summary')).status, 200);
  // the whole run's Perfetto export leaves that step out and says so (the other holds nothing to draw, so the
  // export is refused as the CLI refuses it); that step's own export is refused
  const perfetto = await get('/api/rlsight/export/perfetto');
  assert.equal(perfetto.status, 404, await perfetto.clone().text());
  assert.match(((await perfetto.json()) as { detail: string }).detail, /^nothing to export; .*; left out: samples\/rollout_000001\.parquet: its samples did not all arrive/);
  assert.equal((await get('/api/rlsight/export/perfetto?rollout_id=1')).status, 422);
});
