// Runs of several kinds under one root (`serve --runs ROOT`): two runs in folders of the same name, a slime run and
// a miles run without rollout dumps. Each run is told by its folder; comparisons take the runs that can show them
// and say which they leave out; Rollouts compares a step another run lacks with that run's nearest one; the runs
// table offers the metric keys of every run.
import assert from 'node:assert/strict';
import { cpSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Browser } from 'playwright-core';
import { generateDemoRun } from '../../src/demo/index.ts';
import { ageTree, fixturePath } from '../support/fixtures.ts';
import { hashParams, hasChromium, openPage, screenshot, type Served, spawnServer, startBrowserSuite, stopBrowserSuite } from './harness.ts';

declare const document: any;
declare const location: { hash: string };

describe('runs of several kinds under --runs ROOT (headless Chromium)', { skip: hasChromium ? false : 'Debian chromium is not installed at /usr/bin/chromium' }, () => {
  let served: Served;
  let browser: Browser;

  before(async () => {
    ({ served, browser } = await startBrowserSuite(async () => {
      const base = mkdtempSync(join(tmpdir(), 'rlsight-e2e-root-'));
      const root = join(base, 'runs');
      try {
        // demo runs: steps 0–3 dumped, a timeline and perf/step_time
        await generateDemoRun(join(root, 'teamA', 'healthy'), { steps: 4, seed: 7 });
        await generateDemoRun(join(root, 'teamB', 'healthy'), { steps: 4, seed: 7, collapse: true });
        // slime: steps 0 and 1 dumped, no timeline, no perf/step_time
        cpSync(fixturePath('slime-trace'), join(root, 'slime-trace'), { recursive: true });
        // a miles run's telemetry and metrics without its dumps
        mkdirSync(join(root, 'nodumps'));
        cpSync(fixturePath('miles-demo', 'run', 'dashboard'), join(root, 'nodumps', 'dashboard'), { recursive: true });
        ageTree(root);
        return await spawnServer(base, join(root, 'nodumps'), ['serve', '--runs', root, '--no-cache']);
      } catch (e) {
        rmSync(base, { recursive: true, force: true });
        throw e;
      }
    }));
  });
  after(() => stopBrowserSuite({ served, browser }));

  it('runs in folders of the same name are told apart by their folder, in the runs table and the header’s run list', async () => {
    const w = await openPage(browser);
    const { page } = w;
    await page.goto(`${served.url}#/runs`);
    await page.waitForSelector('table.runs-table tbody tr[data-run="teamB-healthy"]');
    const rows = await page.$$eval('table.runs-table tbody tr', (trs) => trs.map((t: any) => [t.getAttribute('data-run'), t.querySelector('[data-testid=run-folder]')?.textContent ?? null]));
    assert.deepEqual(rows.sort(), [
      ['nodumps', null],
      ['slime-trace', null],
      ['teamA-healthy', 'teamA/healthy'],
      ['teamB-healthy', 'teamB/healthy'],
    ]);
    await page.click('[data-testid=run-selector]');
    await page.waitForSelector('[role=option][data-run="teamA-healthy"]');
    assert.equal(await page.textContent('[role=option][data-run="teamA-healthy"] [data-testid=run-folder]'), 'teamA/healthy');
    await screenshot(page, 'runs-root-folders');
    // a link to an id no run has any more says so
    await page.goto(`${served.url}#/health?run=healthy`);
    await page.waitForSelector('text=No run named “healthy” is served here');
    w.expect(/http 404: \/api\/runs\/healthy\//);
    assert.deepEqual(w.problems(), []);
  });

  it('the runs table’s Rollouts, Compute and Diff links take the ticked runs that can show them, and say which they leave out', async () => {
    const w = await openPage(browser);
    const { page } = w;
    const link = (label: string) => page.getAttribute(`[data-testid=runs-compare] a:text-is("${label}")`, 'href');
    const runsOf = (h: string | null) => new URLSearchParams(h!.split('?')[1]).get('runs');
    // listed (and so ticked) in the order nodumps, slime-trace, teamA-healthy, teamB-healthy
    await page.goto(`${served.url}#/runs?pick=nodumps,slime-trace,teamA-healthy,teamB-healthy`);
    await page.waitForSelector('[data-testid=runs-compare] a:text-is("Rollouts")');
    assert.equal(runsOf(await link('Rollouts')), 'slime-trace,teamA-healthy', 'nodumps has no dumps');
    // Compute: the shown run has a timeline (nodumps, whose dashboard holds one); the other logs perf/step_time
    assert.equal(runsOf(await link('Compute')), 'nodumps,teamA-healthy', 'slime-trace has no perf/step_time');
    const diff = new URLSearchParams((await link('Diff'))!.split('?')[1]);
    assert.deepEqual([diff.get('run_a'), diff.get('run_b')], ['slime-trace', 'teamA-healthy']);
    const notes = await page.$$eval('[data-testid=pair-notes] li', (ls) => ls.map((l: any) => [l.getAttribute('data-view'), l.textContent]));
    assert.deepEqual(notes, [
      ['rollout', 'Rollouts compares slime-trace with teamA-healthy; left out: nodumps (no rollout dumps), teamB-healthy (two runs at most are compared).'],
      ['timeline', 'Compute compares nodumps with teamA-healthy; left out: slime-trace (no perf/step_time), teamB-healthy (two runs at most are compared).'],
      ['diff', 'Diff compares slime-trace with teamA-healthy; left out: nodumps (no rollout dumps), teamB-healthy (two runs at most are compared).'],
    ]);
    await screenshot(page, 'runs-root-compare-links');
    // fewer than two runs can show Rollouts: no link, and why
    await page.goto(`${served.url}#/runs?pick=nodumps,slime-trace`);
    await page.waitForSelector('[data-testid=runs-compare] a:text-is("Metrics")');
    await page.waitForSelector('[data-testid=pair-notes] li[data-view=rollout]');
    assert.equal(await page.locator('[data-testid=runs-compare] a:text-is("Rollouts")').count(), 0);
    assert.equal(await page.locator('[data-testid=runs-compare] [data-view=rollout][aria-disabled=true]').count(), 1);
    assert.equal(await page.textContent('[data-testid=pair-notes] li[data-view=rollout]'), 'Rollouts needs two runs with rollout dumps (only slime-trace has them); left out: nodumps (no rollout dumps).');
    assert.equal(await page.textContent('[data-testid=pair-notes] li[data-view=timeline]'), 'Compute needs a second run with perf/step_time to set beside nodumps; left out: slime-trace (no perf/step_time).');
    assert.deepEqual(w.problems(), []);
  });

  it('the metric columns offer the keys of every run, dump/* and slime’s own too, whichever run the header shows', async () => {
    const w = await openPage(browser);
    const { page } = w;
    await page.goto(`${served.url}#/runs?run=nodumps`);
    await page.waitForSelector('table.runs-table tbody tr');
    await page.click('summary:text-is("metric columns")');
    await page.waitForSelector('input[data-option="dump/reward_mean"]');
    assert.equal(await page.locator('input[data-option="perf/tokens_per_gpu_per_sec"]').count(), 1, 'a key only slime-trace logs');
    assert.match((await page.textContent('label:has(input[data-option="dump/reward_mean"])'))!, /3 of 4 runs/);
    await screenshot(page, 'runs-root-metric-chooser');
    await page.click('input[data-option="dump/reward_mean"]');
    await page.waitForSelector('table.runs-table th[data-col="m:dump/reward_mean"]');
    const listed = (await (await fetch(`${served.url}api/runs?latest=dump/reward_mean`)).json()) as { runs: { id: string; latest: Record<string, number | null> }[] };
    const want = listed.runs.find((r) => r.id === 'slime-trace')!.latest['dump/reward_mean']!;
    await page.waitForFunction((v) => document.querySelector('tr[data-run="slime-trace"] td[data-col="m:dump/reward_mean"]')?.textContent === v, String(Number(want.toFixed(3))));
    await screenshot(page, 'runs-root-metric-columns');
    assert.deepEqual(w.problems(), []);
  });

  it('Rollouts compares a step the other run lacks with its nearest, lets another be chosen, and says which runs it leaves out', async () => {
    const w = await openPage(browser);
    const { page } = w;
    // the runs table's link: the newest step (3) of teamA-healthy; slime-trace holds steps 0 and 1
    await page.goto(`${served.url}#/rollout?runs=teamA-healthy,slime-trace&run=teamA-healthy`);
    await page.waitForSelector('[data-testid=rollout-runs-compare] [data-metric=zero_std] .share-bar');
    assert.match((await page.textContent('[data-testid=rollout-runs-compare] h3'))!, /^Step 3 of teamA-healthy against step 1 of slime-trace /);
    assert.match((await page.textContent('[data-testid=compare-step-note]'))!, /slime-trace has no step 3 \(its steps: 0–1\): its nearest, step 1, is shown/);
    for (const metric of ['reward', 'response_length']) assert.equal(await page.locator(`[data-testid=rollout-runs-compare] [data-metric=${metric}] svg.histogram`).count(), 1, metric);
    assert.equal(await page.locator('text=Could not load').count(), 0);
    await screenshot(page, 'rollouts-root-nearest-step');
    // another step of the other run
    await page.selectOption('[data-testid=compare-step]', '0');
    await page.waitForFunction(() => location.hash.includes('other_step=0'));
    await page.waitForFunction(() => /against step 0 of slime-trace/.test(document.querySelector('[data-testid=rollout-runs-compare] h3')?.textContent ?? ''));
    await page.waitForSelector('[data-testid=rollout-runs-compare] [data-metric=reward] svg.histogram');

    // a third run is said to be left out
    await page.goto(`${served.url}#/rollout/3?runs=teamA-healthy,teamB-healthy,slime-trace&run=teamA-healthy`);
    await page.waitForSelector('[data-testid=compare-left-out]');
    assert.match((await page.textContent('[data-testid=compare-left-out]'))!, /Left out: slime-trace \(Rollouts compares two runs: compare with it instead\)/);
    // a run without dumps is passed over for the next that has them
    await page.goto(`${served.url}#/rollout/3?runs=teamA-healthy,nodumps,teamB-healthy&run=teamA-healthy`);
    await page.waitForFunction(() => /Step 3: teamA-healthy against teamB-healthy/.test(document.querySelector('[data-testid=rollout-runs-compare] h3')?.textContent ?? ''));
    assert.match((await page.textContent('[data-testid=compare-left-out]'))!, /nodumps \(no rollout dumps\)/);
    assert.deepEqual(w.problems(), []);
  });

  it('the offer to compare a step names the runs with dumps, those holding the step first', async () => {
    const w = await openPage(browser);
    const { page } = w;
    // the run each offer compares with: the second of its `runs=`
    const offered = () => page.$$eval('[data-testid=rollout-compare]', (as) => as.map((a: any) => new URLSearchParams(a.getAttribute('href').split('?')[1]).get('runs')!.split(',')[1]));
    await page.goto(`${served.url}#/rollout/1?run=slime-trace`);
    await page.waitForSelector('[data-testid=rollout-compare]');
    assert.deepEqual(await offered(), ['teamA-healthy', 'teamB-healthy'], 'nodumps has no dumps to compare');
    await page.goto(`${served.url}#/rollout/3?run=teamA-healthy`);
    await page.waitForSelector('[data-testid=rollout-compare]');
    assert.deepEqual(await offered(), ['teamB-healthy', 'slime-trace']);
    assert.match((await page.textContent('[data-testid=rollout-compare-offer]'))!, /slime-trace \(no step 3: its step 1\)/);
    await page.click('[data-testid=rollout-compare][data-run=slime-trace]');
    await page.waitForSelector('[data-testid=rollout-runs-compare] [data-metric=zero_std] .share-bar');
    assert.deepEqual(w.problems(), []);
  });
});
