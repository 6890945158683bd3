// A slime or collected run's whole-run answers (`/api/meta`, the computed and `dump/*` series, the runs table's
// row) while the server still reads its steps: the first answer comes at once over the steps read within its
// time budget with their `coverage`, the others are read in the background one at a time, the newest train and
// eval step first, then in rollout id order (a step's train dump before its eval dump), each answer meanwhile is the complete one over the steps read so
// far, and once all are read the answers equal the complete ones byte for byte. What is kept in the cache
// directory is each step whole: never some of a step's values, never the steps read so far taken for the run.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { answersOver } from '../src/commands/openRun.ts';
import { SLIME_STEPS_ENTRY, type SlimeAnswers } from '../src/queries/slimeAnswers.ts';
import { openRunModel } from '../src/run/open.ts';
import type { SlimeRunModel } from '../src/run/slime/index.ts';
import { createApp } from '../src/server/app.ts';
import type { Meta, MetricsAnswer, RunsAnswer, StepCoverage } from '../src/wire/index.ts';
import { heldSlimeSteps as held, writeTracedCollectedRun } from './support/heldSlimeSteps.ts';

const TRAIN = [0, 1, 2, 3, 4, 5];
const EVAL = [0, 3];
/** The dumps in the order the background reads them. */
const ORDER = ['train:5', 'eval:3', 'train:0', 'eval:0', 'train:1', 'train:2', 'train:3', 'train:4'];
const KEYS = ['rollout/response_len/mean', 'perf/request/e2e_latency/mean', 'eval/gsm8k_test', 'dump/reward_mean', 'dump/zero_std_group_frac'];
const METRICS = `/api/metrics?keys=${KEYS.join(',')}&x=rollout/step&progressive=true`;
const RUNS = '/api/runs?latest=rollout/response_len/mean,dump/reward_mean';
const SLIME = { evalDatasetNames: ['aime24', 'gsm8k_test'] };

describe('progressive whole-run answers of a collected run', () => {
  const root = mkdtempSync(join(tmpdir(), 'rlsight-slime-progressive-'));
  const dir = join(root, 'run');
  let complete: { meta: string; metrics: string; runs: string };

  async function open(cacheDir?: string) {
    const model = (await openRunModel(dir, cacheDir ? { cacheDir } : {})) as SlimeRunModel;
    const answers = answersOver(model, { slime: SLIME }) as SlimeAnswers;
    return { model, answers, app: createApp({ run: answers }) };
  }
  async function get(app: ReturnType<typeof createApp>, url: string): Promise<{ text: string; partial: string | null }> {
    const res = await app.request(url, { headers: { host: '127.0.0.1' } });
    assert.equal(res.status, 200, url);
    return { text: await res.text(), partial: res.headers.get('x-rlsight-coverage') };
  }

  before(async () => {
    writeTracedCollectedRun(dir, TRAIN, EVAL);
    // the complete answers: every step read before answering
    const c = await open();
    c.answers.stepBudgetMs = Infinity;
    complete = { meta: (await get(c.app, '/api/meta')).text, metrics: (await get(c.app, METRICS)).text, runs: (await get(c.app, RUNS)).text };
    await c.answers.close();
  });
  after(() => rmSync(root, { recursive: true, force: true }));

  test('the fixture run is what the test needs: computed, eval and dump/* series, and a span', () => {
    const meta = JSON.parse(complete.meta) as Meta;
    assert.equal(meta.coverage, undefined);
    for (const k of KEYS.slice(0, 3)) assert.ok(meta.metric_keys.includes(k), k);
    const metrics = JSON.parse(complete.metrics) as MetricsAnswer;
    for (const k of KEYS) assert.deepEqual(metrics[k]!.x, k.startsWith('eval/') ? EVAL : TRAIN, k);
    const row = (JSON.parse(complete.runs) as RunsAnswer).runs[0]!;
    assert.ok(row.start_ts !== null && row.end_ts !== null && row.end_ts > row.start_ts + 500, JSON.stringify(row));
  });

  test('answer at once with their coverage, grow step by step as the complete answers over the steps read, and end byte for byte equal', async () => {
    const { model, answers, app } = await open();
    const bg = held(answers, model);
    // the run is a moment's read: answered partial anyway, as a big run's is
    answers.partialStepsFromBytes = 0;
    answers.stepBudgetMs = 0;
    try {
      const full = { meta: JSON.parse(complete.meta) as Meta, metrics: JSON.parse(complete.metrics) as MetricsAnswer, run: (JSON.parse(complete.runs) as RunsAnswer).runs[0]! };
      const check = async (read: number) => {
        const ids = new Set(ORDER.slice(0, read));
        const coverageOf = (kind: string | null): StepCoverage | undefined => {
          const mine = ORDER.filter((k) => kind === null || k.startsWith(`${kind}:`));
          const unreadIds = [...new Set(mine.filter((k) => !ids.has(k)).map((k) => Number(k.split(':')[1])))];
          if (unreadIds.length === 0) return undefined;
          const all = [...new Set(mine.map((k) => Number(k.split(':')[1])))].sort((a, b) => a - b);
          const runs: [number, number][] = [];
          for (const id of all) {
            if (!unreadIds.includes(id)) continue;
            const last = runs.at(-1);
            if (last && all.indexOf(last[1]) === all.indexOf(id) - 1) last[1] = id;
            else runs.push([id, id]);
          }
          return { steps_done: mine.length - mine.filter((k) => !ids.has(k)).length, steps_total: mine.length, unread: runs };
        };
        const whole = coverageOf(null);
        const m = await get(app, '/api/meta');
        const meta = JSON.parse(m.text) as Meta;
        assert.deepEqual(meta.coverage, whole, `meta after ${read} steps`);
        assert.equal(m.partial, whole ? `${whole.steps_done}/${whole.steps_total} steps` : null, 'a partial answer is marked so no cache keeps it');
        assert.deepEqual(meta.rollout_ids, full.meta.rollout_ids, 'every step is listed at once');
        // the keys computed from the steps read, all of them keys of the complete answer
        assert.deepEqual([...meta.metric_keys].sort(), full.meta.metric_keys.filter((k) => meta.metric_keys.includes(k)).sort());
        const s = await get(app, METRICS);
        const series = JSON.parse(s.text) as MetricsAnswer;
        for (const k of KEYS) {
          const kind = k.startsWith('eval/') ? 'eval' : 'train';
          const want = full.metrics[k]!;
          const at = want.x.flatMap((x, i) => (ids.has(`${kind}:${x}`) ? [i] : []));
          // the points of the complete series at the steps read, as they are there
          assert.deepEqual({ x: series[k]!.x, y: series[k]!.y }, { x: at.map((i) => want.x[i]), y: at.map((i) => want.y[i]) }, `${k} after ${read} steps`);
          assert.deepEqual(series[k]!.coverage, coverageOf(kind), `${k}'s coverage after ${read} steps`);
        }
        const row = (JSON.parse((await get(app, RUNS)).text) as RunsAnswer).runs[0]!;
        assert.deepEqual(row.coverage, whole);
        if (read === 0) assert.deepEqual([row.start_ts, row.end_ts], [null, null]);
        else {
          assert.ok(row.start_ts !== null && row.start_ts >= full.run.start_ts! && row.end_ts! <= full.run.end_ts!, 'the span of the steps read, within the whole span');
          assert.equal(row.latest['dump/reward_mean'], series['dump/reward_mean']!.y.at(-1) ?? null);
        }
        return { meta: m.text, metrics: s.text };
      };

      const first = await check(0);
      assert.deepEqual(bg.decoded, [], 'the first answers decoded nothing (a budget of 0)');
      assert.ok(JSON.parse(first.meta).metric_keys.every((k: string) => k.startsWith('dump/')), 'only what needs no step');
      for (let read = 1; read < ORDER.length; read++) {
        await bg.letOneGo();
        assert.deepEqual(bg.decoded, ORDER.slice(0, read), 'one step at a time: the newest train and eval step first, then by rollout id');
        await check(read);
      }
      await bg.letOneGo();
      await answers.stepsSettled();
      const last = { meta: await get(app, '/api/meta'), metrics: await get(app, METRICS), runs: await get(app, RUNS) };
      assert.equal(last.meta.partial, null);
      assert.equal(last.meta.text, complete.meta, 'the final meta is the complete one, byte for byte');
      assert.equal(last.metrics.partial, null);
      assert.equal(last.metrics.text, complete.metrics, 'the final series are the complete ones, byte for byte');
      assert.equal(last.runs.partial, null);
      assert.equal(last.runs.text, complete.runs, "the final runs table's row is the complete one, byte for byte");
      // each step decoded once for every answer; the reference's route (no `progressive`) is complete, and reads nothing more
      assert.deepEqual(bg.decoded, ORDER);
      assert.equal((await get(app, METRICS.replace('&progressive=true', ''))).text, complete.metrics);
      assert.deepEqual(bg.decoded, ORDER);
    } finally {
      await answers.close();
      bg.release();
    }
  });

  test("the health board's background read of the steps waits for a turn between requests, as the whole-run answers' does", async () => {
    const { model, answers, app } = await open();
    const bg = held(answers, model);
    answers.partialStepsFromBytes = 0;
    // the board reads each step's tables (not the dump the whole-run answers derive from)
    const tables: number[] = [];
    const step = model.step.bind(model);
    model.step = (...args: Parameters<typeof step>) => {
      tables.push(args[0]);
      return step(...args);
    };
    try {
      const board = JSON.parse((await get(app, '/api/rlsight/health')).text) as { coverage?: StepCoverage };
      assert.equal(board.coverage?.steps_done, 0, 'answered at once, nothing read');
      await new Promise((r) => setTimeout(r, 100));
      assert.equal(tables.length, 0, 'no step read while the turn is held');
      bg.release();
      for (let i = 0; i < 300 && !TRAIN.every((id) => tables.includes(id)); i++) await new Promise((r) => setTimeout(r, 10));
      assert.ok(TRAIN.every((id) => tables.includes(id)), `read once its turn came: ${tables.join(' ')}`);
    } finally {
      bg.release();
      await answers.close();
    }
  });

  test('a request reads steps itself for its time budget; a step opened is read ahead of the background', async () => {
    const { model, answers, app } = await open();
    const bg = held(answers, model);
    answers.partialStepsFromBytes = 0;
    try {
      answers.stepBudgetMs = 0;
      await get(app, '/api/rollout/4/summary');
      // (read right after the step's own answer, without waiting for a turn of the background)
      for (let i = 0; i < 200 && !bg.decoded.includes('train:4'); i++) await new Promise((r) => setTimeout(r, 5));
      const partial = JSON.parse((await get(app, METRICS)).text) as MetricsAnswer;
      assert.deepEqual(partial['dump/reward_mean']!.x, [4], 'the step opened is read for the dump/* series at once');
      assert.deepEqual(partial['dump/reward_mean']!.coverage?.unread, [
        [0, 3],
        [5, 5],
      ]);
      answers.stepBudgetMs = 60_000;
      const m = await get(app, '/api/meta');
      assert.equal(m.partial, null);
      assert.equal(m.text, complete.meta, 'within its budget, the answer read every step itself');
      assert.deepEqual([...bg.decoded].sort(), [...ORDER].sort());
    } finally {
      await answers.close();
      bg.release();
    }
  });

  test('the kept entry holds each step read whole and nothing of the others; a restart answers partial over it until every step is read', async () => {
    const cacheDir = join(root, 'cache');
    mkdirSync(cacheDir, { recursive: true });
    const entry = join(cacheDir, SLIME_STEPS_ENTRY);
    const kept = (): Record<string, { stamp: string; value: unknown }> | null => {
      try {
        return (JSON.parse(readFileSync(entry, 'utf8')) as { steps: Record<string, { stamp: string; value: unknown }> }).steps;
      } catch {
        return null;
      }
    };
    const first = await open(cacheDir);
    const bg = held(first.answers, first.model);
    first.answers.partialStepsFromBytes = 0;
    first.answers.stepBudgetMs = 0;
    try {
      assert.deepEqual(JSON.parse((await get(first.app, '/api/meta')).text).coverage?.steps_done, 0);
      await bg.letOneGo();
      await bg.letOneGo();
      await bg.letOneGo();
      // a value derived apart from its step's others (as an older server kept `metrics` alone) is no step read
      const stamp = await first.model.stepStamp(4, false);
      for (let i = 0; i < 200 && Object.keys(kept() ?? {}).length < 8; i++) await new Promise((r) => setTimeout(r, 25));
      const steps = kept()!;
      assert.deepEqual(Object.keys(steps).sort(), ['aggregate:train:0', 'aggregate:train:5', 'metrics:eval:3', 'metrics:train:0', 'metrics:train:5', 'span:eval:3', 'span:train:0', 'span:train:5']);
      writeFileSync(entry, JSON.stringify({ version: 1, steps: { ...steps, 'metrics:train:4': { stamp: `${stamp}|`, value: { rolloutId: 4, evaluation: false, metrics: { 'rollout/response_len/mean': -1 } } } } }));
    } finally {
      await first.answers.close();
      bg.release();
    }

    const second = await open(cacheDir);
    const bg2 = held(second.answers, second.model);
    second.answers.partialStepsFromBytes = 0;
    second.answers.stepBudgetMs = 0;
    try {
      const meta = JSON.parse((await get(second.app, '/api/meta')).text) as Meta;
      assert.deepEqual(meta.coverage, { steps_done: 3, steps_total: 8, unread: [[0, 4]] }, 'the kept steps are read, no more: step 4 alone is not');
      assert.deepEqual(bg2.decoded, [], 'the kept steps are not decoded again');
      const series = JSON.parse((await get(second.app, METRICS)).text) as MetricsAnswer;
      assert.deepEqual(series['rollout/response_len/mean']!.x, [0, 5], 'nothing of a step with only some of its values kept');
      await bg2.letOneGo();
      // rewritten with the steps whole: step 4's lone value is not kept as a step read
      for (let i = 0; i < 200 && !('metrics:eval:0' in (kept() ?? {})); i++) await new Promise((r) => setTimeout(r, 25));
      assert.ok(!('metrics:train:4' in kept()!), 'a step is kept whole or not at all');
      bg2.release();
      await second.answers.stepsSettled();
      assert.equal((await get(second.app, '/api/meta')).text, complete.meta);
      assert.equal((await get(second.app, METRICS)).text, complete.metrics);
      for (let i = 0; i < 200 && !('aggregate:train:4' in (kept() ?? {})); i++) await new Promise((r) => setTimeout(r, 25));
      const four = kept()!['metrics:train:4']!.value as { metrics: Record<string, number> };
      assert.notEqual(four.metrics['rollout/response_len/mean'], -1, 'step 4 kept as read whole, not as it was found');
    } finally {
      await second.answers.close();
      bg2.release();
    }
  });
});
