// Runs of different kinds in one app (headless Chromium): a metrics-only run recorded by `rlsight collect
// --tensorboard`, a miles run and a slime run. Each empty state says what the run holds, what it lacks and why
// (never "yet" of a finished run); Trace on a run without traces says so once, before any step; the Diff gives
// no staleness change between runs that count it in different units; downloads name their run.
import assert from 'node:assert/strict';
import { cpSync, mkdirSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Browser } from 'playwright-core';
import { fixturePath, ageTree } from '../support/fixtures.ts';
import { placeMetricsOnlyRun } from '../support/metricsOnlyRun.ts';
import { hasChromium, openPage, screenshot, type Served, spawnServer, startBrowserSuite, stopBrowserSuite } from './harness.ts';

declare const document: any;

/** `rlsight serve miles-run slime-run tb-only` over copies of the fixtures and a metrics-only run. */
async function serveKinds(): Promise<Served> {
  const base = mkdtempSync(join(tmpdir(), 'rlsight-e2e-kinds-'));
  const miles = join(base, 'miles-run');
  cpSync(fixturePath('miles-demo', 'run'), miles, { recursive: true });
  mkdirSync(join(base, 'slime-run'));
  cpSync(fixturePath('slime-trace', 'rollout_data'), join(base, 'slime-run', 'rollout_data'), { recursive: true });
  placeMetricsOnlyRun(join(base, 'tb-only'), 40);
  ageTree(base);
  return spawnServer(base, miles, ['serve', miles, join(base, 'slime-run'), join(base, 'tb-only'), '--no-cache']);
}

describe('runs of different kinds in the app (headless Chromium)', { skip: hasChromium ? false : 'Debian chromium is not installed at /usr/bin/chromium' }, () => {
  let served: Served;
  let browser: Browser;

  before(async () => ({ served, browser } = await startBrowserSuite(serveKinds)));
  after(() => stopBrowserSuite({ served, browser }));

  async function viewText(hash: string, selector = '#view .empty'): Promise<{ text: string; w: Awaited<ReturnType<typeof openPage>> }> {
    const w = await openPage(browser);
    await w.page.goto(`${served.url}${hash}`);
    await w.page.waitForSelector(selector);
    return { text: (await w.page.textContent(selector))!.replace(/\s+/g, ' ').trim(), w };
  }

  it('a metrics-only run recorded by the collector: Compute Utilization, Health and Trace say what it holds and why, without "yet"', async () => {
    const timeline = await viewText('#/timeline?run=tb-only');
    assert.match(timeline.text, /^No timeline for this run\. It was recorded by rlsight collect, but no phases or GPU samples reached the collector/);
    assert.match(timeline.text, /It holds only logged metrics \(2 keys, read from a TensorBoard logdir\): no rollout dumps, request traces or compute telemetry\. Open Metrics\.$/);
    assert.doesNotMatch(timeline.text, /without the collector|dump\/\*|work as usual|yet/);
    await screenshot(timeline.w.page, 'kinds-timeline-metrics-only');
    assert.deepEqual(timeline.w.problems(), []);

    const health = await viewText('#/health?run=tb-only');
    assert.match(health.text, /^The health board reads rollout dumps, and this run holds none: no samples reached its collector/);
    assert.doesNotMatch(health.text, /yet/);
    assert.deepEqual(health.w.problems(), []);

    const rollouts = await viewText('#/rollout?run=tb-only');
    assert.match(rollouts.text, /^Rollouts reads rollout dumps, and this run holds none: no samples reached its collector/);
    assert.doesNotMatch(rollouts.text, /yet/);
    assert.deepEqual(rollouts.w.problems(), []);

    const trace = await viewText('#/trace/1?run=tb-only');
    assert.match(trace.text, /^This run holds no per-request traces: they come from slime rollout dumps/);
    assert.doesNotMatch(trace.text, /not recorded|yet/);
    assert.equal(await trace.w.page.locator('[data-testid=url-note]').count(), 0, 'no step note on a run without traces');
    assert.deepEqual(trace.w.problems(), []);
  });

  it('Trace on a miles run says it holds no traces before any step, and asks the server nothing', async () => {
    const w = await openPage(browser);
    const asked: string[] = [];
    w.page.on('request', (r) => {
      if (r.url().includes('rlsight/trace')) asked.push(r.url());
    });
    // from a slime run's step the miles run lacks: the capability is said, not the step
    await w.page.goto(`${served.url}#/trace/1?run=slime-run`);
    await w.page.waitForSelector('[data-testid=trace-canvas]');
    await w.page.goto(`${served.url}#/trace/1?run=miles-run`);
    await w.page.waitForSelector('[data-testid=no-traces]');
    const text = (await w.page.textContent('#view .empty'))!.replace(/\s+/g, ' ');
    assert.match(text, /This run holds no per-request traces: they come from slime rollout dumps \(each sample’s trace of spans and events\), and this is a miles run\./);
    assert.match(text, /It holds rollout dumps \(3 train steps, 1 eval step\), compute telemetry and metrics \(5 keys\), but no request traces\. Open Metrics, Compute Utilization, Rollouts or Health\./);
    assert.equal(await w.page.locator('[data-testid=url-note]').count(), 0);
    await screenshot(w.page, 'kinds-trace-miles');
    assert.deepEqual(
      asked.map((u) => new URL(u).pathname),
      ['/api/runs/slime-run/rlsight/trace'],
      'only the slime run was asked for traces',
    );
    assert.deepEqual(w.problems(), []);
  });

  it('Trace on a run with traces names a step it lacks and the steps it holds (no "yet" for a finished run)', async () => {
    const w = await openPage(browser);
    const note = () => w.page.locator('[data-testid=url-note]').first().textContent();
    await w.page.goto(`${served.url}#/trace/abc?run=slime-run`);
    await w.page.waitForSelector('[data-testid=url-note]');
    assert.match((await note())!, /“abc” is not a step number.*Recorded steps: 0–1\./);
    await w.page.goto(`${served.url}#/trace/99?run=slime-run`);
    await w.page.waitForFunction(() => /Step 99 is not recorded/.test(document.querySelector('[data-testid=url-note]')?.textContent ?? ''));
    assert.match((await note())!, /Step 99 is not recorded in this run\. Recorded steps: 0–1\. Open the latest \(1\)/);
    assert.deepEqual(w.problems(), []);
  });

  it('the runs × signals board says why a run has no cells', async () => {
    const { text, w } = await viewText('#/health?runs=all&run=miles-run', '[data-testid=runs-board-none]');
    assert.equal(text, 'no train steps dumped: the health board reads rollout dumps (its metrics)');
    assert.equal(await w.page.getAttribute('[data-testid=runs-board-none]', 'colspan'), String(await w.page.locator('.runs-board thead th[data-signal]').count()));
    assert.equal(await w.page.locator('.runs-board tr[data-run="tb-only"] td[data-testid=runs-board-none]').count(), 1);
    assert.deepEqual(w.problems(), []);
  });

  it('the step diff of a miles and a slime run gives no staleness change, and says why', async () => {
    const w = await openPage(browser);
    await w.page.goto(`${served.url}#/diff?run_a=miles-run&run_b=slime-run&a=2&b=1&run=miles-run`);
    await w.page.waitForSelector('.diff-dist[data-metric=staleness] h3');
    const panel = w.page.locator('.diff-dist[data-metric=staleness]');
    assert.equal(await panel.locator('[data-testid=delta]').textContent(), '');
    assert.equal(
      await panel.locator('[data-testid=delta-note]').textContent(),
      "Not comparable: A counts rollout steps behind, B counts weight updates behind its step's newest version: no change is given.",
    );
    // the other panels keep their change
    assert.notEqual(await w.page.locator('.diff-dist[data-metric=reward] [data-testid=delta]').textContent(), '');
    await screenshot(w.page, 'kinds-diff-staleness');
    assert.deepEqual(w.problems(), []);
  });

  it('download links name the run they export, and the files are named after its id', async () => {
    const w = await openPage(browser);
    const { page } = w;
    await page.goto(`${served.url}#/?run=slime-run`);
    await page.waitForSelector('.downloads a[data-download="csv"]');
    assert.equal((await page.textContent('.downloads'))!.replace(/\s+/g, ' ').trim(), '⤓ all metrics of slime-run: CSV · PARQUET');
    const [download] = await Promise.all([page.waitForEvent('download'), page.locator('.downloads a[data-download="csv"]').click()]);
    assert.equal(download.suggestedFilename(), 'slime-run.metrics.csv');
    assert.ok(readFileSync((await download.path())!, 'utf8').split('\n').length > 2, 'the metrics of the run');
    await page.goto(`${served.url}#/trace/1?run=slime-run`);
    await page.waitForSelector('[data-testid=perfetto-download]');
    const [perfetto] = await Promise.all([page.waitForEvent('download'), page.locator('[data-testid=perfetto-download]').click()]);
    assert.equal(perfetto.suggestedFilename(), 'slime-run.1.perfetto.json');
    assert.deepEqual(w.problems(), []);
  });
});
