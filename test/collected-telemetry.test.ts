// A collected run's telemetry behaves as a miles run's: served with a cache directory, its hours are warmed
// in the background so whole-run answers complete on their own; followed, its streams gain what is appended.
import assert from 'node:assert/strict';
import { appendFileSync, cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { openRun } from '../src/commands/openRun.ts';
import { SAMPLES_DIR, sampleStepFile } from '../src/formats/collectedSamples.ts';
import { encodeSampleStep } from '../src/formats/collectedSamplesWrite.ts';
import { createApp } from '../src/server/app.ts';
import { startRunsServer } from '../src/server/listen.ts';
import { ServedRuns } from '../src/server/runSet.ts';
import { warmedUp } from './support/cli.ts';
import { fixturePath } from './support/fixtures.ts';

const root = mkdtempSync(join(tmpdir(), 'rlsight-collected-telemetry-'));
after(() => rmSync(root, { recursive: true, force: true }));

const SAMPLES = [0, 1, 2, 3].map((i) => ({ index: i, group_index: i >> 1, prompt: `q ${i}`, response: `a ${i}`, tokens: [1, 2, 3, 4], response_length: 2, reward: i % 2, status: 'completed', loss_mask: [1, 1] }));

/** A collected run: the demo fixture's telemetry streams beside one samples step. */
function collectedRun(name: string): string {
  const dir = join(root, name);
  cpSync(join(fixturePath('miles-demo', 'run'), 'dashboard'), join(dir, 'dashboard'), { recursive: true });
  mkdirSync(join(dir, SAMPLES_DIR));
  writeFileSync(join(dir, SAMPLES_DIR, sampleStepFile(0, false)), encodeSampleStep(SAMPLES));
  return dir;
}

test('served with a cache directory, whole-run answers complete on their own and equal the answers read without one', async () => {
  const dir = collectedRun('warmed');
  const plain = createApp({ run: await openRun(dir) });
  const cached = createApp({ run: await openRun(dir, { cacheDir: join(root, 'cache') }) });
  const get = async (app: ReturnType<typeof createApp>, path: string) => (await app.request(path, { headers: { host: '127.0.0.1' } })).json() as Promise<any>;
  const complete = await get(plain, '/api/timeline/fleet');
  assert.equal(complete.coverage, undefined);
  // Nobody asks for the hours: the background warm-up reads them (a run that never warmed stays at 0 of 1).
  await warmedUp(() => get(cached, '/api/meta'));
  assert.deepEqual(await get(cached, '/api/timeline/fleet'), complete);
});

test('followed, its metrics gain the rows appended after it opened', async () => {
  const dir = join(root, 'followed');
  mkdirSync(join(dir, 'dashboard'), { recursive: true });
  writeFileSync(join(dir, 'dashboard', 'meta.json'), JSON.stringify({ run_name: 'followed', start_ts: 1000, schema_version: 1 }));
  const row = (step: number) => JSON.stringify({ ts: 1001 + step, step_key: 'rollout/step', step, metrics: { 'rollout/step': step, loss: 0.5 - step / 10 } }) + '\n';
  writeFileSync(join(dir, 'dashboard', 'metrics.jsonl'), row(0));
  mkdirSync(join(dir, SAMPLES_DIR));
  writeFileSync(join(dir, SAMPLES_DIR, sampleStepFile(0, false)), encodeSampleStep(SAMPLES));
  const runs = new ServedRuns({ follow: true, followTimer: false }, (d) => openRun(d));
  runs.add(dir, await openRun(dir));
  const server = await startRunsServer(runs, { port: 0, follow: true });
  try {
    const loss = async () => ((await (await fetch(new URL('/api/metrics?keys=loss&x=rollout/step', server.url))).json()) as any).loss;
    assert.deepEqual((await loss()).y, [0.5]);
    appendFileSync(join(dir, 'dashboard', 'metrics.jsonl'), row(1));
    await runs.firstFollower()!.tick();
    assert.deepEqual((await loss()).y, [0.5, 0.4]);
  } finally {
    await server.close();
  }
});

test('a garbled line of its telemetry is among the run’s warnings, as a miles run says it', async () => {
  const dir = collectedRun('garbled');
  appendFileSync(join(dir, 'dashboard', 'metrics.jsonl'), '{garbled\n');
  const run = await openRun(dir);
  try {
    assert.equal(run.model.format, 'collected');
    await run.meta({ follow: false, useUtilizationOverview: false });
    assert.ok(run.warnings().some((w) => /^dashboard\/metrics\.jsonl:\d+: not JSON/.test(w)), JSON.stringify(run.warnings()));
  } finally {
    await run.close();
  }
});
