// The step-wide answers (the health board, the `dump/*` series) while the server still reads a run's steps: they
// answer at once over the steps read so far and say so (`coverage`, and a header that keeps them out of the kept
// answers), the steps are read in the background one at a time, newest first, and once all are read the
// answers equal the complete ones byte for byte; each step's facts are kept, so no step is decoded twice.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { answersOver, openRun } from '../src/commands/openRun.ts';
import { healthBoard, runHealth } from '../src/queries/health.ts';
import { STEP_FACTS_ENTRY } from '../src/queries/stepFacts.ts';
import type { RunAnswers } from '../src/queries/runAnswers.ts';
import { openRunModel } from '../src/run/open.ts';
import { createApp } from '../src/server/app.ts';
import type { HealthAnswer, MetricsAnswer, StepCoverage } from '../src/wire/index.ts';
import { ageTree, copyFixtureRun, type RunCopy } from './support/fixtures.ts';
import { heldSteps } from './support/heldSteps.ts';

const DUMP_KEYS = ['dump/reward_mean', 'dump/zero_std_group_frac', 'dump/mean_abs_lp_diff'];
const METRICS = `/api/metrics?keys=${DUMP_KEYS.join(',')},rollout/rewards_mean`;
const DIFF = '/api/rlsight/diff/steps?a=0&b=1';

async function get(app: ReturnType<typeof createApp>, url: string): Promise<{ text: string; partial: string | null }> {
  const res = await app.request(url, { headers: { host: '127.0.0.1' } });
  assert.equal(res.status, 200, url);
  return { text: await res.text(), partial: res.headers.get('x-rlsight-coverage') };
}

describe('progressive step-wide answers', () => {
  let run: RunCopy;
  let cache = '';
  let complete: { health: string; metrics: string; board: HealthAnswer; diff: string };
  before(async () => {
    run = copyFixtureRun('miles-demo');
    cache = mkdtempSync(join(tmpdir(), 'rlsight-step-facts-'));
    // the complete answers: every step read before answering, as the commands do
    const plain = await openRun(run.dir);
    const app = createApp({ run: plain });
    const board = await runHealth(plain);
    complete = { board, health: JSON.stringify(board), metrics: (await get(app, METRICS)).text, diff: (await get(app, DIFF)).text };
    await plain.close();
  });
  after(() => {
    run.dispose();
    rmSync(cache, { recursive: true, force: true });
  });

  test('the board over kept facts is the board over the step tables, byte for byte', async () => {
    const answers = await openRun(run.dir);
    const steps = [];
    for (const step of (await answers.rolloutIds()).train) steps.push({ step, summary: (await answers.summary(step, false)).rows, groups: (await answers.groups(step, false)).rows });
    const fromTables = healthBoard({ steps, metrics: answers.metricsRecords(), topology: answers.topologySnapshots(), phases: answers.phaseEvents(), startTs: answers.startTs(), warnings: [] });
    assert.equal(JSON.stringify(fromTables), complete.health);
    assert.ok(complete.board.rows.length === 3 && complete.board.coverage === undefined);
    await answers.close();
  });

  test('steps that are a moment\'s read (a small run\'s) are read before the first answer, which is complete', async () => {
    const held = heldSteps(await openRunModel(run.dir));
    const answers = answersOver(held.model) as RunAnswers;
    const app = createApp({ run: answers });
    const first = await get(app, '/api/rlsight/health');
    assert.equal(first.partial, null);
    assert.equal(first.text, complete.health);
    assert.deepEqual(held.reads.map((r) => [r.step, r.priority]), [[2, 'asked'], [1, 'asked'], [0, 'asked']]);
    await answers.close();
  });

  test('a step diff reads its two steps only, not every step for their dump/* aggregates', async () => {
    const held = heldSteps(await openRunModel(run.dir));
    const answers = answersOver(held.model) as RunAnswers;
    const diff = await get(createApp({ run: answers }), DIFF);
    assert.equal(diff.text, complete.diff);
    assert.deepEqual([...new Set(held.reads.map((r) => r.step))].sort(), [0, 1]);
    assert.ok(held.reads.every((r) => r.priority !== 'background'));
    await answers.close();
  });

  test('answer at once with their coverage, grow step by step newest first, and end equal to the complete answers', async () => {
    const held = heldSteps(await openRunModel(run.dir, { cacheDir: cache }));
    const answers = answersOver(held.model) as RunAnswers;
    // the fixture's steps are a moment's read: answered partial anyway, as a big run's are
    answers.partialStepsFromBytes = 0;
    const app = createApp({ run: answers });
    const train = (await answers.rolloutIds()).train;
    assert.deepEqual(train, [0, 1, 2]);

    const first = await get(app, '/api/rlsight/health');
    const board0 = JSON.parse(first.text) as HealthAnswer;
    assert.deepEqual(board0.coverage, { steps_done: 0, steps_total: 3, unread: [[0, 2]] } satisfies StepCoverage);
    assert.equal(first.partial, '0/3 steps', 'a partial answer is marked so no cache keeps it');
    assert.deepEqual(board0.rows, []);
    assert.deepEqual(board0.signals, complete.board.signals);
    // the app's dump/* series say the same; the reference's route stays complete
    const m0 = JSON.parse((await get(app, `${METRICS}&progressive=true`)).text) as MetricsAnswer;
    for (const k of DUMP_KEYS) assert.deepEqual(m0[k], { x: [], y: [], ts: [], coverage: board0.coverage }, k);
    assert.equal(m0['rollout/rewards_mean']!.coverage, undefined, 'a logged series is complete');

    await held.letOneGo();
    const h1 = await get(app, '/api/rlsight/health');
    const board1 = JSON.parse(h1.text) as HealthAnswer;
    assert.deepEqual(board1.coverage, { steps_done: 1, steps_total: 3, unread: [[0, 1]] });
    assert.equal(h1.partial, '1/3 steps');
    assert.deepEqual(board1.rows.map((r) => r.step), [2], 'the newest step is read first');
    const m1 = JSON.parse((await get(app, `${METRICS}&progressive=true`)).text) as MetricsAnswer;
    const want = JSON.parse(complete.metrics) as MetricsAnswer;
    for (const k of DUMP_KEYS) {
      assert.deepEqual(m1[k]!.coverage, board1.coverage, k);
      assert.deepEqual(m1[k]!.x, want[k]!.x.slice(-1), k);
      assert.deepEqual(m1[k]!.y, want[k]!.y.slice(-1), k);
    }
    // a step whose previous step is not read yet claims no jump
    assert.equal(board1.rows[0]!.cells.reward_jump.detail, 'previous step not read yet');
    assert.equal(board1.rows[0]!.cells.reward_jump.value, null);

    await held.letOneGo();
    const board2 = JSON.parse((await get(app, '/api/rlsight/health')).text) as HealthAnswer;
    assert.deepEqual(board2.coverage, { steps_done: 2, steps_total: 3, unread: [[0, 0]] });
    assert.deepEqual(board2.rows.map((r) => r.step), [1, 2]);
    // the step whose previous step is read has its complete row; the others' own dump cells are already the complete ones
    assert.deepEqual(board2.rows[1], complete.board.rows[2]);
    assert.deepEqual(board2.rows[0]!.cells.zero_std, complete.board.rows[1]!.cells.zero_std);
    assert.deepEqual(board2.rows[0]!.cells.lp_drift, complete.board.rows[1]!.cells.lp_drift);

    held.release();
    await answers.stepFactsSettled();
    const last = await get(app, '/api/rlsight/health');
    assert.equal(last.partial, null);
    assert.equal(last.text, complete.health, 'the final board is the complete one, byte for byte');
    const lastMetrics = await get(app, `${METRICS}&progressive=true`);
    assert.equal(lastMetrics.partial, null);
    assert.equal(lastMetrics.text, complete.metrics, 'the final dump/* series are the complete ones, byte for byte');
    // read once each, in the background, one at a time
    assert.deepEqual(
      held.reads.map((r) => [r.step, r.priority]),
      [
        [2, 'background'],
        [1, 'background'],
        [0, 'background'],
      ],
    );
    // asked again, nothing is decoded again, and the complete path (exports, commands) reads nothing either
    assert.equal(JSON.stringify(await runHealth(answers)), complete.health);
    assert.equal((await get(app, METRICS)).text, complete.metrics);
    assert.equal(held.reads.length, 3);
    await answers.close();
  });

  test('kept facts answer a new server at once without decoding a step; a step whose files changed is read again', async () => {
    const entry = join(cache, STEP_FACTS_ENTRY);
    for (let i = 0; i < 200 && !existsSync(entry); i++) await new Promise((r) => setTimeout(r, 20));
    const kept = JSON.parse(readFileSync(entry, 'utf8')) as { steps: [number, string, unknown][] };
    assert.deepEqual(kept.steps.map(([s]) => s).sort(), [0, 1, 2], 'only steps read are kept');

    const again = heldSteps(await openRunModel(run.dir, { cacheDir: cache }));
    again.release();
    const answers = answersOver(again.model) as RunAnswers;
    answers.partialStepsFromBytes = 0;
    const app = createApp({ run: answers });
    const h = await get(app, '/api/rlsight/health');
    assert.equal(h.partial, null);
    assert.equal(h.text, complete.health);
    assert.equal(again.reads.length, 0, 'no step decoded');

    // step 1's dump rewritten (same bytes, new mtime): its kept facts no longer count
    const t = Date.now() / 1000 - 7200;
    utimesSync(join(run.dir, 'rollout_data', '1.pt'), t, t);
    await answers.advance();
    const h2 = JSON.parse((await get(app, '/api/rlsight/health')).text) as HealthAnswer;
    assert.deepEqual(h2.coverage, { steps_done: 2, steps_total: 3, unread: [[1, 1]] });
    // step 2 is never compared with step 0 across the step not read between them
    const row2 = h2.rows.find((r) => r.step === 2)!;
    assert.equal(row2.cells.reward_jump.detail, 'previous step not read yet');
    assert.equal(row2.cells.length_jump.detail, 'previous step not read yet');
    await answers.stepFactsSettled();
    assert.equal((await get(app, '/api/rlsight/health')).text, complete.health);
    assert.deepEqual(again.reads.map((r) => r.step), [1]);
    await answers.close();
  });

  test('a damaged step read in the background is its damaged row and warning, as in the complete board, and is not kept', async () => {
    const broken = copyFixtureRun('miles-demo');
    const brokenCache = mkdtempSync(join(tmpdir(), 'rlsight-step-facts-damaged-'));
    try {
      const path = join(broken.dir, 'rollout_data', '0.pt');
      const bytes = readFileSync(path);
      writeFileSync(path, bytes.subarray(0, bytes.length >> 1));
      // older than the freshness window: damaged, not still being written
      const old = Date.now() / 1000 - 3600;
      utimesSync(path, old, old);
      const plain = await openRun(broken.dir);
      const want = JSON.stringify(await runHealth(plain));
      await plain.close();
      assert.match(want, /"damaged":"[^"]*0\.pt/);

      const held = heldSteps(await openRunModel(broken.dir, { cacheDir: brokenCache }));
      held.release();
      const answers = answersOver(held.model) as RunAnswers;
      answers.partialStepsFromBytes = 0;
      const first = await runHealth(answers, undefined, { progressive: true });
      assert.equal(first.coverage?.steps_done, 0);
      await answers.stepFactsSettled();
      const last = await runHealth(answers, undefined, { progressive: true });
      assert.equal(last.coverage, undefined);
      assert.equal(JSON.stringify(last), want, 'the damaged row and its warning, byte for byte');
      const entry = join(brokenCache, STEP_FACTS_ENTRY);
      for (let i = 0; i < 200 && (!existsSync(entry) || JSON.parse(readFileSync(entry, 'utf8')).steps.length < 2); i++) await new Promise((r) => setTimeout(r, 20));
      assert.deepEqual((JSON.parse(readFileSync(entry, 'utf8')) as { steps: [number][] }).steps.map(([s]) => s).sort(), [1, 2]);
      await answers.close();
    } finally {
      broken.dispose();
      rmSync(brokenCache, { recursive: true, force: true });
    }
  });

  test('a kept entry of the wrong shape is read again, never answered from', async () => {
    const own = mkdtempSync(join(tmpdir(), 'rlsight-step-facts-shape-'));
    try {
      const first = answersOver(await openRunModel(run.dir, { cacheDir: own })) as RunAnswers;
      assert.equal(JSON.stringify(await runHealth(first, undefined, { progressive: true })), complete.health);
      const entry = join(own, STEP_FACTS_ENTRY);
      const keptSteps = (): number => (existsSync(entry) ? (JSON.parse(readFileSync(entry, 'utf8')) as { steps: unknown[] }).steps.length : 0);
      for (let i = 0; i < 200 && keptSteps() < 3; i++) await new Promise((r) => setTimeout(r, 20));
      await first.close();
      const doc = JSON.parse(readFileSync(entry, 'utf8')) as { steps: [number, string, { step: number; health: unknown }][] };
      for (const e of doc.steps) if (e[0] === 2) e[2] = { step: 2, health: { step: 2, cells: {} } };
      writeFileSync(entry, JSON.stringify(doc));

      const held = heldSteps(await openRunModel(run.dir, { cacheDir: own }));
      held.release();
      const answers = answersOver(held.model) as RunAnswers;
      answers.partialStepsFromBytes = 0;
      const partial = await runHealth(answers, undefined, { progressive: true });
      assert.deepEqual(partial.coverage, { steps_done: 2, steps_total: 3, unread: [[2, 2]] });
      await answers.stepFactsSettled();
      assert.equal(JSON.stringify(await runHealth(answers, undefined, { progressive: true })), complete.health);
      assert.deepEqual(held.reads.map((r) => r.step), [2]);
      await answers.close();
    } finally {
      rmSync(own, { recursive: true, force: true });
    }
  });
});

test('a step that cannot be read breaks the dump/* lines the app draws (a point at y = null), never bridged over', async () => {
  const copy = copyFixtureRun('miles-demo');
  try {
    const dump = join(copy.dir, 'rollout_data', '1.pt');
    writeFileSync(dump, readFileSync(dump).subarray(0, 4096));
    ageTree(copy.dir);
    const answers = await openRun(copy.dir);
    try {
      const drawn = await answers.metrics({ keys: ['dump/reward_mean'], x: 'rollout/step', progressive: true });
      assert.deepEqual(drawn['dump/reward_mean'].x, [0, 1, 2]);
      assert.equal(drawn['dump/reward_mean'].y[1], null);
      assert.ok(drawn['dump/reward_mean'].y.every((v, i) => i === 1 || typeof v === 'number'));
      // asked as scripts ask (the reference's form), the step is left out
      assert.deepEqual((await answers.metrics({ keys: ['dump/reward_mean'], x: 'rollout/step' }))['dump/reward_mean'].x, [0, 2]);
    } finally {
      await answers.close();
    }
  } finally {
    copy.dispose();
  }
});
