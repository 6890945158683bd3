// Several runs of different kinds served at once (`serve --runs ROOT` over a miles run, a slime run and a run whose
// metrics are on `tensorboard/step`, as `collect --tensorboard` records them): the header search is of the run the
// header shows, also after another run is chosen there; Metrics always draws the header's run, so what it lists is
// what it draws; a time axis never draws a run's step numbers as times, and runs on different step keys are named on
// the axis, in the chart's description and in its CSV.
import assert from 'node:assert/strict';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import type { Meta } from '../../src/wire/index.ts';
import { buildCatalog, catalogKeys } from '../../web/views/metrics/catalog.ts';
import { ageTree, fixturePath } from '../support/fixtures.ts';
import { hasChromium, hashParams, openPage, screenshot, type Served, spawnServer, startBrowserSuite, stopBrowserSuite } from './harness.ts';

declare const document: any;

/** A key the miles run logs with a time per point, and the slime run computes per step with none. */
const SHARED = 'rollout/response_len/max';

/** Rewrites a miles run's metrics.jsonl: each record on `stepKey`, with SHARED logged too. */
function relog(runDir: string, stepKey: string): void {
  const file = join(runDir, 'dashboard', 'metrics.jsonl');
  const lines = readFileSync(file, 'utf8').split('\n').filter(Boolean);
  const out = lines.map((l) => {
    const rec = JSON.parse(l) as { step_key: string; step: number; metrics: Record<string, number> };
    rec.step_key = stepKey;
    rec.metrics[SHARED] = 400 + 50 * rec.step + (stepKey === 'rollout/step' ? 0 : 7);
    return JSON.stringify(rec);
  });
  writeFileSync(file, `${out.join('\n')}\n`);
}

/** Chooses `id` in the header's run selector and waits for the address to name it. */
async function chooseInHeader(page: Page, id: string): Promise<void> {
  await page.click('[data-testid=run-selector]');
  await page.click(`[role=option][data-run="${id}"]`);
  await page.waitForFunction((run) => new URLSearchParams((globalThis as any).location.hash.split('?')[1]).get('run') === run, id);
}

/** The legend labels of a chart: the x axis' first, then each series'. */
const legendOf = (page: Page, metric: string) => page.$$eval(`.chart-panel[data-metric="${metric}"] .u-legend .u-series .u-label`, (els) => els.map((e: any) => e.textContent));

describe('several runs of different kinds: header search, header run in Metrics, x units (serve --runs ROOT, headless Chromium)', { skip: hasChromium ? false : 'Debian chromium is not installed at /usr/bin/chromium' }, () => {
  let served: Served;
  let browser: Browser;
  const api = async <T>(path: string) => (await (await fetch(`${served.url}api/${path}`)).json()) as T;

  before(async () => {
    ({ served, browser } = await startBrowserSuite(async () => {
      const base = mkdtempSync(join(tmpdir(), 'rlsight-e2e-overlay-'));
      const root = join(base, 'runs');
      mkdirSync(root);
      cpSync(fixturePath('miles-demo', 'run'), join(root, 'miles'), { recursive: true });
      cpSync(fixturePath('miles-demo', 'run'), join(root, 'tbrun'), { recursive: true });
      cpSync(fixturePath('slime-trace'), join(root, 'slime-trace'), { recursive: true });
      relog(join(root, 'miles'), 'rollout/step');
      relog(join(root, 'tbrun'), 'tensorboard/step');
      // git keeps no mtimes, and the dump reader hides young files
      ageTree(root);
      return spawnServer(base, join(root, 'miles'), ['serve', '--runs', root]).catch((e) => {
        rmSync(base, { recursive: true, force: true });
        throw e;
      });
    }));
  });
  after(() => stopBrowserSuite({ served, browser }));

  it('the header search is of the run shown: another run chosen searches that one, and each result opens in its run', async () => {
    const w = await openPage(browser, 1400, 900);
    const { page } = w;
    await page.goto(`${served.url}#/?run=slime-trace`);
    await page.waitForSelector('.chart-panel[data-metric]');
    const input = page.locator('input[data-global-search]');
    await input.fill('Natalia');
    await page.waitForSelector('.search-results[data-run="slime-trace"][data-done] [role=option]', { timeout: 20_000 });
    assert.match((await page.textContent('.search-status'))!, /^slime-trace: \d+\+? matches in /, 'the status names the run searched');
    const hrefs = await page.$$eval('.search-results [role=option]', (els) => els.map((e: any) => e.getAttribute('href')));
    assert.ok(hrefs.length > 0 && hrefs.every((h) => /[?&]run=slime-trace(&|$)/.test(h)), `each result opens in slime-trace: ${hrefs}`);
    await page.keyboard.press('Escape');
    await page.waitForSelector('.search-results', { state: 'detached' });

    // The miles run holds no "Natalia": its search finds nothing, and the slime results are gone.
    await chooseInHeader(page, 'miles');
    await input.click();
    await page.waitForFunction(
      () => {
        const box = document.querySelector('.search-results');
        return box?.getAttribute('data-run') === 'miles' && box.hasAttribute('data-done');
      },
      undefined,
      { timeout: 20_000 },
    ).catch(() => {});
    const status = await page.textContent('.search-status');
    const left = await page.$$eval('.search-results [role=option]', (els) => els.map((e: any) => e.getAttribute('href')));
    assert.deepEqual(left, [], `no result of another run is offered after the switch (status: ${status})`);
    assert.match(status!, /^miles: 0 matches in /);
    await screenshot(page, 'search-after-run-switch');

    // Back in slime-trace, a result opens that run's sample.
    await page.keyboard.press('Escape');
    await chooseInHeader(page, 'slime-trace');
    await input.click();
    await page.waitForSelector('.search-results[data-run="slime-trace"][data-done] [role=option]', { timeout: 20_000 });
    await page.locator('.search-results [role=option]').first().click();
    await page.waitForFunction(() => (globalThis as any).location.hash.startsWith('#/rollout/'));
    assert.equal(hashParams(page).get('run'), 'slime-trace');
    await page.waitForSelector('#view > *:not(.loading)');
    assert.doesNotMatch((await page.textContent('#view'))!, /is not in step/);
    assert.deepEqual(w.problems(), []);
  });

  it('Metrics draws the header’s run even when the ticked runs do not hold it: its categories have charts, the key count is of the runs drawn', async () => {
    const w = await openPage(browser, 1400, 900);
    const { page } = w;
    await page.goto(`${served.url}#/?runs=miles,tbrun&run=miles&cat=rollout`);
    await page.waitForSelector(`.chart-panel[data-metric="${SHARED}"] .u-legend .u-series`);
    await chooseInHeader(page, 'slime-trace');
    assert.equal(hashParams(page).get('runs'), 'miles,tbrun', 'the ticked runs are kept');
    await page.click('.categories a:has-text("perf_fixed")');
    await page.waitForFunction(() => /cat=perf_fixed/.test((globalThis as any).location.hash));
    const listed = Number(await page.textContent('.categories a.active .count'));
    await page.waitForSelector('.chart-panel[data-metric^="perf_fixed/"] .u-legend .u-series', { timeout: 20_000 }).catch(() => {});
    const panels = await page.locator('.chart-panel[data-metric^="perf_fixed/"]').count();
    assert.equal(panels, listed, `every listed perf_fixed key is charted (${panels} of ${listed})`);
    const first = await page.getAttribute('.chart-panel[data-metric^="perf_fixed/"]', 'data-metric');
    assert.deepEqual((await legendOf(page, first!)).slice(1), ['slime-trace']);

    // The picker shows the header's run drawn (it stays so while it is the header's), and the note counts the runs drawn.
    const box = page.locator('[data-testid=run-picker] input[data-run="slime-trace"]');
    assert.equal(await box.isChecked(), true);
    assert.equal(await box.isDisabled(), true);
    const metas = await Promise.all(['slime-trace', 'miles', 'tbrun'].map((id) => api<Meta>(`runs/${id}/meta`)));
    const keys = metas.map((m) => catalogKeys(buildCatalog(m)));
    const union = new Set(keys.flatMap((k) => [...k]));
    const uneven = [...union].filter((k) => keys.some((own) => !own.has(k))).length;
    const note = (await page.textContent('[data-testid=keys-of-runs]'))!;
    assert.match(note, new RegExp(`keys of all 3 ticked runs are listed; ${uneven} of them are not in every run`));
    // the shared chart draws all three
    await page.click('.categories a:has-text("rollout")');
    await page.waitForFunction((m) => document.querySelectorAll(`.chart-panel[data-metric="${m}"] .u-legend .u-series`).length === 4, SHARED, { timeout: 20_000 });
    await screenshot(page, 'metrics-header-run-drawn');
    assert.deepEqual(w.problems(), []);
  });

  it('a time axis draws only the runs with a time per point and names the one left out; it never puts step numbers on it', async () => {
    const w = await openPage(browser, 1400, 900);
    const { page } = w;
    for (const x of ['rel', 'time'] as const) {
      await page.goto(`${served.url}#/?runs=miles,slime-trace,tbrun&run=miles&cat=rollout&x=${x}`);
      const panel = `.chart-panel[data-metric="${SHARED}"]`;
      await page.waitForSelector(`${panel} .u-legend .u-series`, { timeout: 20_000 });
      await page.waitForTimeout(300);
      const legend = await legendOf(page, SHARED);
      assert.deepEqual(legend, [x === 'rel' ? 'time since start (s)' : 'time (UTC)', 'miles (dummy-telemetry)', 'tbrun (dummy-telemetry)'], `${x}: the slime run is not drawn on a time axis`);
      assert.equal(await page.getAttribute(`${panel} [data-testid=left-out]`, 'data-runs'), 'slime-trace');
      assert.match((await page.textContent(`${panel} [data-testid=left-out]`))!, /slime-trace \(its points are counted on rollout\/step and carry no time\)/);
      // its description gives times, not steps 0–2
      const summary = (await page.textContent(`${panel} [data-testid=chart-summary]`))!;
      assert.doesNotMatch(summary, /slime-trace/);
      if (x === 'rel') assert.match(summary, /time since start \(s\) 125–325/);
      await screenshot(page, `metrics-time-axis-${x}`);
    }
    assert.deepEqual(w.problems(), []);
  });

  it('runs on different step keys: the axis, the description and the CSV name each run’s step key', async () => {
    const w = await openPage(browser, 1400, 900);
    const { page } = w;
    await page.goto(`${served.url}#/?runs=miles,slime-trace,tbrun&run=miles&cat=rollout`);
    const panel = `.chart-panel[data-metric="${SHARED}"]`;
    await page.waitForFunction((sel) => document.querySelectorAll(`${sel} .u-legend .u-series`).length === 4, panel, { timeout: 20_000 });
    const axis = 'rollout/step (miles, slime-trace) · tensorboard/step (tbrun)';
    assert.equal((await legendOf(page, SHARED))[0], axis);
    assert.match((await page.textContent(`${panel} [data-testid=axis-note]`))!, /different steps \(rollout\/step, tensorboard\/step\)/);
    const summary = (await page.textContent(`${panel} [data-testid=chart-summary]`))!;
    assert.match(summary, /miles \(dummy-telemetry\): 3 points, rollout\/step 0–2/);
    assert.match(summary, /tbrun \(dummy-telemetry\): 3 points, tensorboard\/step 0–2/);
    const [download] = await Promise.all([page.waitForEvent('download'), page.click(`${panel} [data-testid=csv-download]`)]);
    const header = readFileSync((await download.path())!, 'utf8').split('\n')[0]!;
    // (the axis' name holds a comma: quoted)
    assert.equal(header, `"${axis}",miles (dummy-telemetry) on rollout/step,slime-trace on rollout/step,tbrun (dummy-telemetry) on tensorboard/step`);
    // runs on one step key: named plainly, no note
    await page.goto(`${served.url}#/?runs=miles,slime-trace&run=miles&cat=rollout`);
    await page.waitForFunction((sel) => document.querySelectorAll(`${sel} .u-legend .u-series`).length === 3, panel, { timeout: 20_000 });
    assert.equal((await legendOf(page, SHARED))[0], 'rollout/step');
    assert.equal(await page.locator(`${panel} [data-testid=axis-note]`).count(), 0);
    await screenshot(page, 'metrics-step-keys');
    assert.deepEqual(w.problems(), []);
  });
});
