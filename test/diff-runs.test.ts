// Step and sample diffs across the demo's two runs (same recipe and seed; one collapses), served by one server.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { generateDemoRun } from '../src/demo/index.ts';
import { type RunningServer, startRunsServer } from '../src/server/listen.ts';
import { openRun } from '../src/commands/openRun.ts';
import { ServedRuns } from '../src/server/runSet.ts';
import type { SampleDiff, StepDiff, TokenView } from '../src/wire/index.ts';
import { assertAlignmentHolds } from './support/alignment.ts';

describe('diffs across two runs', () => {
  let base: string;
  let server: RunningServer;
  before(async () => {
    base = mkdtempSync(join(tmpdir(), 'rlsight-diff-runs-'));
    const runs = new ServedRuns({}, (dir) => openRun(dir));
    for (const collapse of [false, true]) {
      const dir = join(base, collapse ? 'collapse' : 'healthy');
      await generateDemoRun(dir, { steps: 3, seed: 7, collapse });
      runs.add(dir, await openRun(dir));
    }
    server = await startRunsServer(runs, { port: 0 });
  });
  after(async () => {
    await server?.close();
    rmSync(base, { recursive: true, force: true });
  });

  async function json<T>(path: string): Promise<T> {
    const res = await fetch(new URL(path, server.url));
    assert.equal(res.status, 200, `${path}: ${await res.clone().text()}`);
    return (await res.json()) as T;
  }

  test('step 0 is the same draw in both runs: every delta is zero, no group flipped, pairs by sample index', async () => {
    const d = await json<StepDiff>('/api/rlsight/diff/steps?a=0&b=0&run_a=healthy&run_b=collapse');
    assert.deepEqual([d.a.run, d.b.run], ['healthy', 'collapse']);
    for (const x of d.distributions) {
      assert.deepEqual(x.counts_a, x.counts_b, x.metric);
      if (x.delta_mean !== null) assert.equal(x.delta_mean, 0, x.metric);
    }
    assert.ok(d.groups_matched > 0);
    assert.deepEqual(d.flipped, []);
    assert.ok(d.moved.length > 0);
    for (const m of d.moved) assert.deepEqual([m.a.sample_index, m.delta_reward, m.delta_length], [m.b.sample_index, 0, 0]);
  });

  test('a later step: the collapsing run solves more, its groups matched by prompt across the runs', async () => {
    const d = await json<StepDiff>('/api/rlsight/diff/steps?a=2&b=2&run_a=healthy&run_b=collapse');
    const reward = d.distributions.find((x) => x.metric === 'reward')!;
    assert.ok(reward.delta_mean! > 0, `reward ${reward.a.mean} → ${reward.b.mean}`);
    assert.ok(d.groups_matched > 0);
    // Every flip is towards more solved samples in the collapsing run.
    for (const f of d.flipped) assert.ok(f.b.reward_mean! > f.a.reward_mean!, JSON.stringify(f));
    // Run B defaults to run A: the healthy run against itself.
    const self = await json<StepDiff>('/api/rlsight/diff/steps?a=2&b=2&run_a=healthy');
    assert.deepEqual([self.b.run, self.flipped.length], ['healthy', 0]);
  });

  test('under a run’s own path the diff starts from that run and still reaches the other; search stays in that run', async () => {
    const own = await json<StepDiff>('/api/runs/collapse/rlsight/diff/steps?a=2&b=2');
    assert.deepEqual([own.a.run, own.b.run], ['collapse', 'collapse']);
    const across = await json<StepDiff>('/api/runs/collapse/rlsight/diff/steps?a=2&b=2&run_b=healthy');
    assert.deepEqual([across.a.run, across.b.run], ['collapse', 'healthy']);
    const samples = await json<SampleDiff>('/api/runs/collapse/rlsight/diff/samples?a=0:3&b=0:3&run_b=healthy');
    assert.deepEqual([samples.a.run, samples.b.run], ['collapse', 'healthy']);
    const missing = await fetch(new URL('/api/runs/nope/rlsight/diff/steps?a=2&b=2', server.url));
    assert.equal(missing.status, 404);
    assert.match(((await missing.json()) as { detail: string }).detail, /no run named "nope"/);
  });

  test('a sample against itself in the other run aligns as one matched stretch', async () => {
    const d = await json<SampleDiff>('/api/rlsight/diff/samples?a=0:3&b=0:3&run_a=healthy&run_b=collapse');
    assert.deepEqual([d.a.run, d.b.run], ['healthy', 'collapse']);
    assert.equal(d.first_divergence.token, null);
    assert.deepEqual(d.alignment.stretches, [{ kind: 'same', column: 0, a_start: 0, a_end: d.a.response_length, b_start: 0, b_end: d.a.response_length }]);
  });

  test('a moved pair aligns by content: the stretches cover both responses and the series keep every token', async () => {
    const step = await json<StepDiff>('/api/rlsight/diff/steps?a=2&b=2&run_a=healthy&run_b=collapse');
    const m = step.moved.find((x) => x.delta_length !== 0)!;
    const d = await json<SampleDiff>(`/api/rlsight/diff/samples?a=2:${m.a.sample_index}&b=2:${m.b.sample_index}&run_a=healthy&run_b=collapse`);
    assert.equal(d.alignment.fell_back, false);
    assert.ok(d.alignment.stretches.some((s) => s.kind !== 'same'));
    const tokens = async (run: string, i: number) => json<TokenView>(`/api/runs/${run}/rollout/2/sample/${i}/tokens`);
    assertAlignmentHolds(d, await tokens('healthy', m.a.sample_index), await tokens('collapse', m.b.sample_index));
  });

  test('bad run names are a 400 naming the parameter; a group’s best and worst stay in run A', async () => {
    const bad = await fetch(new URL('/api/rlsight/diff/samples?a=0:3&b=0:3&run_b=nope', server.url));
    assert.equal(bad.status, 400);
    assert.match(((await bad.json()) as { detail: string }).detail, /run_b: no run named "nope"/);
    // a step one of two runs cannot answer is said to be that run's, each time alike
    for (let i = 0; i < 2; i++) {
      const unheld = await fetch(new URL('/api/rlsight/diff/steps?a=0&b=99&run_a=healthy&run_b=collapse', server.url));
      assert.equal(unheld.status, 404);
      assert.match(((await unheld.json()) as { detail: string }).detail, /^run collapse: [^:]*99/);
    }
    const missing = await fetch(new URL('/api/rlsight/diff/samples?a=0:3&b=0:99999&run_a=healthy&run_b=collapse', server.url));
    assert.equal(missing.status, 404);
    assert.match(((await missing.json()) as { detail: string }).detail, /^sample B \(run collapse\): .*99999/);
    const summary = await json<{ rows: { group_index: number }[] }>('/api/runs/collapse/rollout/1/summary');
    const g = summary.rows[0]!.group_index;
    const d = await json<SampleDiff>(`/api/rlsight/diff/samples?step=1&group=${g}&run_a=collapse&run_b=healthy`);
    assert.deepEqual([d.a.run, d.b.run, d.a.group_index, d.b.group_index], ['collapse', 'collapse', g, g]);
  });
});
