// A followed slime or collected run's whole-run answers (meta, metrics, the dump/* aggregates, the runs table's span)
// read each step's dump once: asked again, they decode only the steps that are new or rewritten, however many steps
// the run has (they decoded every step for each answer once the run had more than the few dumps a source keeps),
// and with a cache directory a restarted server decodes none it derived before.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { sampleStepFile, SAMPLES_DIR, type SampleFields } from '../src/formats/collectedSamples.ts';
import { encodeSampleStep } from '../src/formats/collectedSamplesWrite.ts';
import { openRunModel } from '../src/run/open.ts';
import type { RunModel } from '../src/run/model.ts';
import { answersOver } from '../src/commands/openRun.ts';
import { SLIME_STEPS_ENTRY, SlimeAnswers } from '../src/queries/slimeAnswers.ts';
import { ageTree } from './support/fixtures.ts';

const root = mkdtempSync(join(tmpdir(), 'rlsight-slime-steps-'));
after(() => rmSync(root, { recursive: true, force: true }));

const sample = (step: number, i: number): SampleFields => ({
  index: step * 100 + i,
  group_index: i >> 1,
  prompt: `question ${i}`,
  response: `answer ${i} of step ${step}`,
  response_length: 3 + i,
  tokens: [1, 2, 3, 4, 5, 6, 7, 8, 9].slice(0, 4 + i),
  reward: (i + step) % 3 === 0 ? 1 : 0,
  status: 'completed',
});

function writeStep(dir: string, step: number): void {
  writeFileSync(join(dir, SAMPLES_DIR, sampleStepFile(step, false)), encodeSampleStep(Array.from({ length: 4 }, (_, i) => sample(step, i))));
}

/** Every decode of a step file, counted where the collected run reads one (whatever asks for it). */
function countDecodes(model: RunModel): string[] {
  const decoded: string[] = [];
  const source = (model as unknown as { run: { read: (f: { name: string }) => Promise<unknown> } }).run;
  const read = source.read.bind(source);
  source.read = (f) => {
    decoded.push(f.name);
    return read(f);
  };
  return decoded;
}

test('asked again, whole-run answers decode only new or rewritten steps, past the dumps a source keeps', async () => {
  const dir = join(root, 'run');
  mkdirSync(join(dir, SAMPLES_DIR), { recursive: true });
  mkdirSync(join(dir, 'dashboard'));
  for (let step = 0; step < 12; step++) writeStep(dir, step);
  ageTree(dir);
  const model = await openRunModel(dir);
  try {
    const decoded = countDecodes(model);
    const answers = new SlimeAnswers(model, model.traces!);
    const ask = async () => {
      const meta = await answers.meta({ follow: true, useUtilizationOverview: false });
      const metrics = await answers.metrics({ keys: ['rollout/response_len/max', 'dump/reward_mean'], x: 'rollout/step' });
      const listing = await answers.listing('run', true, { follow: true });
      return { keys: meta.metric_keys, metrics, span: [listing.start_ts, listing.end_ts] };
    };
    const first = await ask();
    assert.equal(first.metrics['rollout/response_len/max']!.x.length, 12, JSON.stringify(first.metrics['rollout/response_len/max']));
    assert.equal(first.metrics['dump/reward_mean']!.x.length, 12);
    const once = decoded.length;
    assert.ok(once >= 12, `every step read at first (${once})`);
    decoded.length = 0;
    const again = await ask();
    assert.deepEqual(decoded, [], 'nothing is decoded again while the steps are unchanged');
    assert.deepEqual(again, first);

    // a new step, and step 3 recorded again with other rewards: only those two are decoded
    writeStep(dir, 12);
    writeFileSync(join(dir, SAMPLES_DIR, sampleStepFile(3, false)), encodeSampleStep(Array.from({ length: 4 }, (_, i) => ({ ...sample(3, i), reward: 1, response_length: 40 }))));
    // the two files aged as the others are (re-aging the whole tree would change every step's stamp)
    const old = Date.now() / 1000 - 86_400;
    for (const step of [3, 12]) utimesSync(join(dir, SAMPLES_DIR, sampleStepFile(step, false)), old, old);
    await model.advance();
    const later = await ask();
    assert.deepEqual([...new Set(decoded)].sort(), ['samples/rollout_000003.parquet', 'samples/rollout_000012.parquet']);
    const lengths = later.metrics['rollout/response_len/max']!;
    assert.equal(lengths.x.length, 13);
    assert.equal(lengths.y[lengths.x.indexOf(3)], 40, 'the rewritten step is answered from its new file');
    const rewards = later.metrics['dump/reward_mean']!;
    assert.equal(rewards.y[rewards.x.indexOf(3)], 1);
  } finally {
    await model.close();
  }
});

test('with a cache directory, a restarted server decodes none of the steps it derived before, and a rewritten one again', async () => {
  const dir = join(root, 'kept');
  const cacheDir = join(root, 'kept-cache');
  mkdirSync(join(dir, SAMPLES_DIR), { recursive: true });
  mkdirSync(join(dir, 'dashboard'));
  mkdirSync(cacheDir);
  for (let step = 0; step < 10; step++) writeStep(dir, step);
  ageTree(dir);
  const entry = join(cacheDir, SLIME_STEPS_ENTRY);
  const start = async () => {
    const model = await openRunModel(dir, { cacheDir });
    const decoded = countDecodes(model);
    // as the server opens it: its cache directory's entries handed in
    const answers = answersOver(model);
    const ask = async () => ({
      keys: (await answers.meta({ follow: false, useUtilizationOverview: false })).metric_keys,
      metrics: await answers.metrics({ keys: ['rollout/response_len/max', 'dump/reward_mean', 'dump/mean_abs_lp_diff'], x: 'rollout/step' }),
      span: await answers.listing('run', true).then((l) => [l.start_ts, l.end_ts]),
    });
    return { model, decoded, ask };
  };
  const first = await start();
  const answer = await first.ask();
  assert.ok(first.decoded.length >= 10);
  // kept once no answer is being given: every value each answer derived
  const keptAll = (): boolean => {
    try {
      const steps = (JSON.parse(readFileSync(entry, 'utf8')) as { steps: Record<string, unknown> }).steps;
      return ['metrics', 'aggregate', 'span'].every((what) => Array.from({ length: 10 }, (_, step) => `${what}:train:${step}`).every((k) => k in steps));
    } catch {
      return false;
    }
  };
  for (let i = 0; i < 100 && !keptAll(); i++) await new Promise((r) => setTimeout(r, 100));
  assert.ok(keptAll(), 'the derived values are kept in the cache directory');
  await first.model.close();

  const second = await start();
  assert.deepEqual(await second.ask(), answer, 'the same answers, non-finite values included');
  assert.deepEqual(second.decoded, [], 'nothing decoded after a restart');
  await second.model.close();

  writeFileSync(join(dir, SAMPLES_DIR, sampleStepFile(4, false)), encodeSampleStep(Array.from({ length: 4 }, (_, i) => ({ ...sample(4, i), response_length: 50 }))));
  const old = Date.now() / 1000 - 86_400;
  utimesSync(join(dir, SAMPLES_DIR, sampleStepFile(4, false)), old, old);
  const third = await start();
  const after = await third.ask();
  assert.deepEqual([...new Set(third.decoded)], ['samples/rollout_000004.parquet']);
  assert.equal(after.metrics['rollout/response_len/max']!.y[4], 50);
  await third.model.close();
});
