// The server over slime runs: the --dump-details layout and a --save-debug-rollout-data glob.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { answersFor } from '../src/queries/slimeAnswers.ts';
import { SlimeRunModel } from '../src/run/slime/index.ts';
import { startServer, type RunningServer } from '../src/server/listen.ts';
import { ageTree, fixturePath, readFixtureJson } from './support/fixtures.ts';

const REPO = join(import.meta.dirname, '..');

async function get(server: RunningServer, path: string): Promise<{ status: number; body: any }> {
  const r = await fetch(new URL(path, server.url));
  return { status: r.status, body: await r.json() };
}

describe('serving a slime --dump-details folder', () => {
  let server: RunningServer;
  const tmp = mkdtempSync(join(tmpdir(), 'rlsight-slime-serve-'));
  before(async () => {
    // A copy, with one more dump that is damaged.
    mkdirSync(join(tmp, 'rollout_data'), { recursive: true });
    for (const f of ['0.pt', '1.pt', 'eval_0.pt']) copyFileSync(fixturePath('slime-trace', 'rollout_data', f), join(tmp, 'rollout_data', f));
    writeFileSync(join(tmp, 'rollout_data', '2.pt'), 'PK\u0003\u0004 truncated');
    // a finished run's files: a damaged one is damage, not a dump still being written
    ageTree(tmp);
    server = await startServer(answersFor(SlimeRunModel.fromDumpDetails(tmp), { slime: { evalDatasetNames: ['aime24', 'gsm8k_test'] } }), { port: 0 });
  });
  after(async () => {
    await server.close();
    rmSync(tmp, { recursive: true, force: true });
  });

  it('meta lists the steps and slime metric keys; the timeline is empty', async () => {
    const { body } = await get(server, '/api/meta');
    assert.deepEqual(body.rollout_ids, { train: [0, 1, 2], eval: [0] });
    assert.ok(body.metric_keys.includes('perf/request/e2e_latency/mean'));
    assert.ok(body.metric_keys.includes('perf_fixed/request/count'));
    assert.ok(body.metric_keys.includes('eval/aime24'));
    assert.equal(body.capabilities.has_timeline, false);
    // slime writes no compute timeline: the timeline answers are empty, and meta says so.
    const t = await get(server, '/api/timeline/topology');
    assert.deepEqual(t.body, { lanes: [], windows: [] });
    // nor does the runs table state a GPU count it does not know
    const runs = await get(server, '/api/runs');
    assert.equal(runs.body.runs[0].gpus, null);
    // but it has a start and an end: those of its request traces
    let first = Infinity;
    let last = -Infinity;
    for (const [id, ev] of [[0, 0], [1, 0], [0, 1]]) {
      const tr = (await get(server, `/api/rlsight/trace?rollout_id=${id}&eval=${ev}`)).body;
      for (const r of tr.rows) {
        first = Math.min(first, tr.t0 + r.start);
        last = Math.max(last, tr.t0 + r.end);
      }
    }
    assert.ok(first > 1.7e9 && last > first);
    assert.equal(runs.body.runs[0].start_ts, first);
    assert.equal(runs.body.runs[0].end_ts, last);
  });

  it('/api/metrics serves slime perf/ keys with x = rollout id, equal to slime, and the corrected keys', async () => {
    const keys = ['perf/request/e2e_latency/mean', 'perf/decode/throughput/max', 'rollout/response_len/mean', 'perf_fixed/request/count', 'eval/gsm8k_test'];
    const { status, body } = await get(server, `/api/metrics?keys=${keys.join(',')}`);
    assert.equal(status, 200);
    const g0 = readFixtureJson('slime-trace', 'golden', 'perf_0.json').log_rollout_data.logged;
    const g1 = readFixtureJson('slime-trace', 'golden', 'perf_1.json').log_rollout_data.logged;
    for (const k of keys.slice(0, 3)) assert.deepEqual(body[k], { x: [0, 1], y: [g0[k], g1[k]], ts: [] }, k);
    assert.deepEqual(body['perf_fixed/request/count'].y, [12, 23]);
    assert.deepEqual(body['eval/gsm8k_test'], { x: [0], y: [0.6666666666666666], ts: [] });
  });

  it("the perf/ keys that need no rollout_time are served, equal to slime's; the rates over it are not", async () => {
    const { body: meta } = await get(server, '/api/meta');
    assert.ok(!meta.metric_keys.some((k: string) => k === 'perf/rollout_time' || /tokens_per_(gpu_per_)?sec/.test(k)), meta.metric_keys.join(' '));
    const keys = ['perf/longest_sample_non_generation_time', 'perf/longest_effective_sample_non_generation_time'];
    for (const k of keys) assert.ok(meta.metric_keys.includes(k), k);
    const { body } = await get(server, `/api/metrics?keys=${keys.join(',')}`);
    // rollout 0 has no non-generation time (slime logs neither key there); rollout 1's agentic samples do
    const g1 = readFixtureJson('slime-trace', 'golden', 'perf_1.json').log_rollout_data.logged;
    assert.equal(readFixtureJson('slime-trace', 'golden', 'perf_0.json').log_rollout_data.logged[keys[0]], undefined);
    for (const k of keys) assert.deepEqual(body[k], { x: [1], y: [g1[k]], ts: [] }, k);
    assert.deepEqual(keys.map((k) => g1[k]), [0, 32.400675535202026]);
  });

  it('Rollouts and Sample answers come from the samples', async () => {
    const s = await get(server, '/api/rollout/0/summary');
    assert.equal(s.body.rows.length, 12);
    assert.equal(s.body.rows[0].raw_reward, s.body.rows[0].reward);
    const rewards = s.body.rows.map((r: any) => r.reward as number);
    const agg = await get(server, '/api/metrics?keys=dump/reward_mean');
    assert.ok(Math.abs(agg.body['dump/reward_mean'].y[0] - rewards.reduce((a: number, b: number) => a + b, 0) / rewards.length) < 1e-12);
    // a small run's steps are read before the step-wide answers, which are complete at once
    const health = await get(server, '/api/rlsight/health');
    assert.equal(health.body.coverage, undefined);
    assert.deepEqual(health.body.rows.map((r: { step: number }) => r.step), [0, 1, 2]);
    assert.equal((await get(server, '/api/metrics?keys=dump/reward_mean&progressive=true')).body['dump/reward_mean'].coverage, undefined);
    const g = await get(server, '/api/rollout/0/groups');
    assert.deepEqual(g.body.rows.map((r: any) => r.group_index), [0, 1, 3]);
    const m = await get(server, '/api/rollout/0/sample/0/messages');
    assert.equal(m.body.messages.at(-1).role, 'assistant');
    const t = await get(server, '/api/rollout/0/sample/0/tokens?start=0&end=10');
    assert.equal(t.body.token_ids.length, 10);
    const e = await get(server, '/api/rollout/0/sample/2/messages?eval=1');
    assert.equal(e.status, 200);
  });

  it("the step diff sets slime's own metrics side by side, as the Metrics view computes them", async () => {
    const d = await get(server, '/api/rlsight/diff/steps?a=0&b=1');
    assert.equal(d.status, 200);
    const pairs = new Map<string, any>(d.body.metrics.map((m: any) => [m.key, m]));
    const series = (await get(server, '/api/metrics?keys=perf/request/e2e_latency/mean,rollout/response_len/mean,perf_fixed/request/count')).body;
    for (const key of ['perf/request/e2e_latency/mean', 'rollout/response_len/mean', 'perf_fixed/request/count']) {
      assert.ok(pairs.has(key), `${key} in ${[...pairs.keys()].join(', ')}`);
      assert.equal(pairs.get(key).a, series[key].y[series[key].x.indexOf(0)]);
      assert.equal(pairs.get(key).b, series[key].y[series[key].x.indexOf(1)]);
    }
    assert.ok(pairs.has('dump/reward_mean'));
  });

  it('eval samples are addressed by their place in the dump: every dataset restarts its indices at 0', async () => {
    // eval_0.pt holds aime24 (indices 0-3) then gsm8k_test (indices 0-2)
    const s = await get(server, '/api/rollout/0/summary?eval=1');
    assert.deepEqual(s.body.rows.map((r: any) => r.sample_index), [0, 1, 2, 3, 4, 5, 6]);
    const tr = await get(server, '/api/rlsight/trace?rollout_id=0&eval=1');
    assert.deepEqual(tr.body.rows.map((r: any) => r.sample_index), [0, 1, 2, 3, 4, 5, 6]);
    // each row opens its own sample: the second dataset's first sample is 4, not the first dataset's 0
    const rows = new Map<number, any>(s.body.rows.map((r: any) => [r.sample_index, r]));
    for (const i of [0, 4]) {
      const t = await get(server, `/api/rollout/0/sample/${i}/tokens?eval=1`);
      assert.equal(t.status, 200);
      assert.equal(t.body.total_len, rows.get(i).total_len ?? t.body.total_len);
      assert.equal(t.body.total_len - t.body.prompt_len, rows.get(i).response_length);
    }
    const first = await get(server, '/api/rollout/0/sample/0/messages?eval=1');
    const second = await get(server, '/api/rollout/0/sample/4/messages?eval=1');
    assert.equal(second.body.reward, rows.get(4).reward);
    assert.notDeepEqual(second.body.messages, first.body.messages);
    assert.equal((await get(server, '/api/rollout/0/sample/7/tokens?eval=1')).status, 404);
  });

  it('a dump that does not decode while it is new is still being written: a 503, then a 422 once it is old', async () => {
    // the damaged 2.pt, as if it had just been written
    const file = join(tmp, 'rollout_data', '2.pt');
    const now = Date.now() / 1000;
    utimesSync(file, now, now);
    try {
      const writing = await get(server, '/api/rollout/2/summary');
      assert.equal(writing.status, 503, JSON.stringify(writing.body));
      assert.equal(writing.body.detail, 'dump still being written: rollout_data/2.pt');
    } finally {
      const old = now - 86_400;
      utimesSync(file, old, old);
    }
    const damaged = await get(server, '/api/rollout/2/summary');
    assert.equal(damaged.status, 422);
    assert.match(damaged.body.detail, /^rollout_data\/2\.pt: not a readable torch dump/);
  });

  it('the trace answers; a damaged dump is a 422 naming the file', async () => {
    const tr = await get(server, '/api/rlsight/trace?rollout_id=0');
    assert.equal(tr.status, 200);
    assert.equal(tr.body.rows.length, 12);
    const d = await get(server, '/api/rlsight/trace/details?rollout_id=0&row=4');
    assert.ok(d.body.items.some((i: any) => i.kind === 'pd'));
    const beyond = await get(server, '/api/rlsight/trace/details?rollout_id=0&row=99');
    assert.equal(beyond.status, 404);
    assert.equal(beyond.body.detail, 'row 99 is not in rollout_data/0.pt (rows 0-11)');
    const bad = await get(server, '/api/rlsight/trace?rollout_id=2');
    assert.equal(bad.status, 422);
    assert.match(bad.body.detail, /^rollout_data\/2\.pt: not a readable torch dump/);
    assert.doesNotMatch(bad.body.detail, new RegExp(tmp));
    const badSummary = await get(server, '/api/rollout/2/summary');
    assert.equal(badSummary.status, 422);
    // The Trace view's download: that dump's traces as Chrome trace-event JSON.
    const pf = await fetch(new URL('/api/rlsight/export/perfetto?rollout_id=0', server.url));
    assert.equal(pf.status, 200);
    // named after the run (its folder's name) and the step
    assert.equal(pf.headers.get('content-disposition'), `attachment; filename="${basename(tmp)}.0.perfetto.json"`);
    const events = ((await pf.json()) as any).traceEvents;
    assert.ok(events.filter((e: any) => e.ph === 'b').length === events.filter((e: any) => e.ph === 'e').length && events.length > 100);
    const badWindow = await get(server, '/api/rlsight/export/perfetto?t0=10&t1=5');
    assert.equal(badWindow.status, 400);
    // a step the run does not hold, and eval without a step to name
    assert.equal((await get(server, '/api/rlsight/export/perfetto?rollout_id=99')).status, 404);
    const evalAlone = await get(server, '/api/rlsight/export/perfetto?eval=1');
    assert.equal(evalAlone.status, 400);
    assert.match(evalAlone.body.detail, /^eval: /);
    const arg = await get(server, '/api/rlsight/trace?rollout_id=x');
    assert.equal(arg.status, 400);
    const missing = await get(server, '/api/rlsight/trace/details?rollout_id=0&row=99');
    assert.equal(missing.status, 404);
  });
});

describe('rlsight serve GLOB (a --save-debug-rollout-data template)', () => {
  const tmp = mkdtempSync(join(tmpdir(), 'rlsight-slime-glob-'));
  after(() => rmSync(tmp, { recursive: true, force: true }));

  it('serves rollout_*.pt with the ids and eval flags from the names', async () => {
    copyFileSync(fixturePath('slime-trace-legacy-pd', 'rollout_data', '0.pt'), join(tmp, 'rollout_0.pt'));
    copyFileSync(fixturePath('slime-trace-legacy-pd', 'rollout_data', '1.pt'), join(tmp, 'rollout_1.pt'));
    copyFileSync(fixturePath('slime-trace', 'rollout_data', 'eval_0.pt'), join(tmp, 'rollout_eval_0.pt'));
    const child = spawn(process.execPath, ['--import', 'tsx', join(REPO, 'src', 'cli.ts'), 'serve', join(tmp, 'rollout_*.pt'), '--port', '0'], { cwd: REPO, stdio: ['ignore', 'pipe', 'pipe'] });
    try {
      const url = await new Promise<string>((ok, fail) => {
        let log = '';
        child.stdout.on('data', (d) => {
          log += d;
          const m = /serving (http:\/\/\S+)/.exec(log);
          if (m) ok(m[1]);
        });
        child.stderr.on('data', (d) => (log += d));
        child.once('exit', (code) => fail(new Error(`exited ${code}: ${log}`)));
      });
      const meta: any = await (await fetch(new URL('/api/meta', url))).json();
      assert.deepEqual(meta.rollout_ids, { train: [0, 1], eval: [0] });
      const perf: any = await (await fetch(new URL('/api/metrics?keys=perf/prefill/forward_duration/mean', url))).json();
      const g = readFixtureJson('slime-trace-legacy-pd', 'golden', 'perf_0.json').log_rollout_data.logged;
      assert.equal(perf['perf/prefill/forward_duration/mean'].y[0], g['perf/prefill/forward_duration/mean']);
    } finally {
      child.kill('SIGTERM');
    }
  });
});

describe('the Perfetto download over a miles run (Compute Utilization)', () => {
  it('one window of phases and counters', async () => {
    const { openRun } = await import('../src/commands/openRun.ts');
    const tmp = mkdtempSync(join(tmpdir(), 'rlsight-miles-perfetto-'));
    const { cpSync } = await import('node:fs');
    const { ageTree } = await import('./support/fixtures.ts');
    cpSync(fixturePath('miles-demo', 'run'), join(tmp, 'run'), { recursive: true });
    ageTree(join(tmp, 'run'));
    const run = await openRun(join(tmp, 'run'));
    const server = await startServer(run, { port: 0 });
    try {
      const meta: any = await (await fetch(new URL('/api/meta', server.url))).json();
      const [t0, t1] = meta.time_range;
      const r = await fetch(new URL(`/api/rlsight/export/perfetto?t0=${t0}&t1=${Math.min(t1, t0 + 3600)}`, server.url));
      assert.equal(r.status, 200);
      const events = ((await r.json()) as any).traceEvents;
      assert.ok(events.some((e: any) => e.ph === 'X' && e.cat === 'phase'));
      assert.ok(events.some((e: any) => e.ph === 'C'));
      assert.ok(events.some((e: any) => e.ph === 'M' && e.name === 'process_name'));
    } finally {
      await server.close();
      await run.close();
      rmSync(tmp, { recursive: true, force: true });
    }
  });
});
