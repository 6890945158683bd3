// `serve --follow` started on a collector's run before its first samples step: the run holds telemetry only,
// and once a step's samples file is written the next follow tick serves them (no restart).
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { openRun } from '../src/commands/openRun.ts';
import { SAMPLES_DIR, sampleStepFile } from '../src/formats/collectedSamples.ts';
import { encodeSampleStep } from '../src/formats/collectedSamplesWrite.ts';
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
