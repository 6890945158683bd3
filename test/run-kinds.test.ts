// Runs of different kinds in one server say what each holds: a metrics-only run recorded by `rlsight collect
// --tensorboard`, a miles run and a slime run. Traces are asked of a run without any (a 404 saying so, for any
// step), downloads are named after the run's id, a missing step is said to be missing, and a followed slime
// run is live or quiet by its traces' newest end, never finished.
import assert from 'node:assert/strict';
import { cpSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { type RunningServer, startRunsServer } from '../src/server/listen.ts';
import { openRun } from '../src/commands/openRun.ts';
import { ServedRuns } from '../src/server/runSet.ts';
import type { Meta, RunListing } from '../src/wire/index.ts';
import { ageTree, fixturePath } from './support/fixtures.ts';
import { placeMetricsOnlyRun } from './support/metricsOnlyRun.ts';

async function serveKinds(root: string, follow: boolean): Promise<RunningServer> {
  const runs = new ServedRuns({ follow, followTimer: false }, (d) => openRun(d));
  for (const name of ['miles-run', 'slime-run', 'tb-only']) {
    const dir = join(root, name);
    runs.add(dir, await openRun(dir));
  }
  return startRunsServer(runs, { port: 0, follow, followTimer: false });
}

describe('runs of different kinds in one server', () => {
  let root: string;
  let server: RunningServer;
  const get = (path: string) => fetch(new URL(path, server.url));
  const json = async <T>(path: string): Promise<T> => {
    const r = await get(path);
    assert.equal(r.status, 200, `${path}: ${await r.clone().text()}`);
    return (await r.json()) as T;
  };
  const detail = async (r: Response): Promise<string> => ((await r.json()) as { detail: string }).detail;
  /** The runs table's rows once every slime step is read (the span of a slime run comes from its steps). */
  const listing = async (): Promise<Record<string, RunListing>> => {
    for (;;) {
      const { runs } = await json<{ runs: RunListing[] }>('/api/runs');
      if (runs.every((r) => r.coverage === undefined)) return Object.fromEntries(runs.map((r) => [r.id, r]));
      await new Promise((res) => setTimeout(res, 100));
    }
  };

  before(async () => {
    root = mkdtempSync(join(tmpdir(), 'rlsight-kinds-'));
    cpSync(fixturePath('miles-demo', 'run'), join(root, 'miles-run'), { recursive: true });
    mkdirSync(join(root, 'slime-run'));
    cpSync(fixturePath('slime-trace', 'rollout_data'), join(root, 'slime-run', 'rollout_data'), { recursive: true });
    placeMetricsOnlyRun(join(root, 'tb-only'), 40);
    ageTree(root);
    server = await serveKinds(root, false);
  });
  after(async () => {
    await server.close();
    rmSync(root, { recursive: true, force: true });
  });

  test('meta says which runs record per-request traces; the metrics-only run says its collector recorded it', async () => {
    const meta = async (id: string) => json<Meta>(`/api/runs/${id}/meta`);
    assert.equal((await meta('slime-run')).traces, true);
    assert.equal((await meta('miles-run')).traces, undefined);
    const tb = await meta('tb-only');
    assert.equal(tb.traces, undefined);
    assert.equal(tb.recorder, 'stopped');
    assert.deepEqual([tb.rollout_ids, tb.capabilities.has_timeline, tb.step_keys], [{ train: [], eval: [] }, false, ['tensorboard/step']]);
  });

  test('a run without traces answers every trace request with one 404 saying so, whatever the step', async () => {
    for (const path of [
      '/api/runs/miles-run/rlsight/trace?rollout_id=0',
      '/api/runs/miles-run/rlsight/trace?rollout_id=99',
      '/api/runs/tb-only/rlsight/trace?rollout_id=1',
      '/api/rlsight/trace?rollout_id=2',
      '/api/runs/miles-run/rlsight/trace/details?rollout_id=0&row=0',
    ]) {
      const r = await get(path);
      assert.equal(r.status, 404, path);
      assert.equal(await detail(r), 'this run holds no per-request traces (slime rollout dumps carry them)', path);
    }
    // a run with traces: its steps answer, a step it lacks is a 404 naming the step
    assert.equal((await json<{ has_traces: boolean }>('/api/runs/slime-run/rlsight/trace?rollout_id=1')).has_traces, true);
    const missing = await get('/api/runs/slime-run/rlsight/trace?rollout_id=7');
    assert.equal(missing.status, 404);
    assert.equal(await detail(missing), 'rollout 7 is not in this run');
    // a bad argument stays a 400 naming it
    assert.equal((await get('/api/runs/miles-run/rlsight/trace?rollout_id=x')).status, 400);
  });

  test('the runs table counts the steps a metrics-only run logged on its own step key', async () => {
    const rows = await listing();
    assert.equal(rows['tb-only']!.steps, 40);
    assert.equal(rows['miles-run']!.steps, 3);
    assert.equal(rows['slime-run']!.steps, 2);
  });

  test('downloads are named after the run id, with the step, sample or window', async () => {
    const saved = async (path: string): Promise<string> => {
      const r = await get(path);
      assert.equal(r.status, 200, `${path}: ${await r.clone().text()}`);
      await r.arrayBuffer();
      return /attachment; filename="([^"]+)"/.exec(r.headers.get('content-disposition') ?? '')?.[1] ?? '';
    };
    assert.equal(await saved('/api/runs/tb-only/rlsight/export/metrics?format=csv'), 'tb-only.metrics.csv');
    assert.equal(await saved('/api/runs/miles-run/rlsight/export/metrics?format=parquet'), 'miles-run.metrics.parquet');
    assert.equal(await saved('/api/runs/miles-run/rlsight/export/rollout/1?format=csv'), 'miles-run.1.rollout.csv');
    assert.equal(await saved('/api/runs/slime-run/rlsight/export/rollout/0?format=csv&eval=1'), 'slime-run.eval_0.rollout.csv');
    const sample = (await json<{ rows: { sample_index: number }[] }>('/api/runs/slime-run/rollout/1/summary')).rows[0]!.sample_index;
    assert.equal(await saved(`/api/runs/slime-run/rlsight/export/sample/1/${sample}`), `slime-run.1.sample_${sample}.json`);
    assert.equal(await saved('/api/runs/slime-run/rlsight/export/perfetto?rollout_id=1'), 'slime-run.1.perfetto.json');
    assert.equal(await saved('/api/runs/miles-run/rlsight/export/perfetto'), 'miles-run.perfetto.json');
    assert.equal(await saved('/api/runs/miles-run/rlsight/export/perfetto?t0=1000000&t1=1000329.5'), 'miles-run.19700112T134640Z-19700112T135209Z.perfetto.json');
    // the reference paths answer for the first run, and name it
    assert.equal(await saved('/api/rlsight/export/metrics?format=csv'), 'miles-run.metrics.csv');
  });

  test('a step the run does not hold is said to be missing on the reference conversation path, not to have recorded none', async () => {
    const r = await get('/api/runs/miles-run/rollout/5/sample/0/messages');
    assert.equal(r.status, 404);
    assert.equal(await detail(r), 'rollout 5 is not in this run');
    const evalStep = await get('/api/runs/miles-run/rollout/3/sample/0/messages?eval=1');
    assert.equal(evalStep.status, 404);
    assert.equal(await detail(evalStep), 'eval rollout 3 is not in this run');
    // a held step without a conversation for the sample still says that
    const held = await get('/api/runs/miles-run/rollout/0/sample/999999/messages');
    assert.equal(held.status, 404);
    assert.doesNotMatch(await detail(held), /is not in this run/);
  });
});

describe('a followed slime run in the runs table', () => {
  test('is live or quiet by its traces’ newest end (finished only when not followed)', async () => {
    const root = mkdtempSync(join(tmpdir(), 'rlsight-kinds-'));
    cpSync(fixturePath('miles-demo', 'run'), join(root, 'miles-run'), { recursive: true });
    mkdirSync(join(root, 'slime-run'));
    cpSync(fixturePath('slime-trace', 'rollout_data'), join(root, 'slime-run', 'rollout_data'), { recursive: true });
    placeMetricsOnlyRun(join(root, 'tb-only'), 3);
    ageTree(root);
    const server = await serveKinds(root, true);
    try {
      for (;;) {
        const { runs } = (await (await fetch(new URL('/api/runs', server.url))).json()) as { runs: RunListing[] };
        const slime = runs.find((r) => r.id === 'slime-run')!;
        if (slime.coverage !== undefined) {
          await new Promise((res) => setTimeout(res, 100));
          continue;
        }
        // the fixture's traces ended long ago: nothing new for 10 minutes, and nothing says it ended
        assert.ok(slime.end_ts !== null);
        assert.equal(slime.status, 'quiet');
        // the collector that recorded the metrics-only run stopped: finished
        assert.equal(runs.find((r) => r.id === 'tb-only')!.status, 'finished');
        break;
      }
    } finally {
      await server.close();
      rmSync(root, { recursive: true, force: true });
    }
  });
});
