// Comparing runs in the app: pick two runs, every Metrics chart overlays both in their colours with the run
// names in the legend and the CSV, and a reload restores the choice from the URL.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import type { Browser } from 'playwright-core';
import { canvasPixels, hasChromium, hashParams, openPage, screenshot, type Served, serveDemo, startBrowserSuite, stopBrowserSuite } from './harness.ts';

declare const location: { hash: string };
declare const document: any;

const FIRST_COLOUR = '#4ea1ff';
const SECOND_COLOUR = '#ff8a3d';

describe('comparing runs (headless Chromium)', { skip: hasChromium ? false : 'Debian chromium is not installed at /usr/bin/chromium' }, () => {
  let served: Served;
  let browser: Browser;
  let names: string[];

  before(async () => {
    ({ served, browser } = await startBrowserSuite(() => serveDemo({ steps: 5, compare: true })));
    const listed = (await (await fetch(`${served.url}api/runs`)).json()) as { runs: { id: string; name: string }[] };
    names = listed.runs.map((r) => r.name);
  });
  after(() => stopBrowserSuite({ served, browser }));

  it('two chosen runs draw two coloured series per chart, named in legend and CSV; reload keeps them', async () => {
    assert.equal(names.length, 2);
    const w = await openPage(browser);
    const { page } = w;
    await page.goto(`${served.url}#/?cat=rollout`);
    await page.waitForSelector('[data-testid=run-picker] input[data-run]');
    await page.waitForSelector('.chart-panel .uplot canvas');
    // One run at first: the primary.
    assert.deepEqual(await page.$$eval('[data-testid=run-picker] input[data-run]', (els) => els.map((e: any) => e.checked)), [true, false]);
    await page.click('[data-testid=run-picker] input[data-run="collapse"]');
    await page.waitForFunction(() => /runs=run(%2C|,)collapse/.test(location.hash), undefined, { timeout: 15_000 });

    const checkOverlay = async () => {
      await page.waitForFunction(
        (n) => [...document.querySelectorAll('.chart-panel[data-metric]')].every((p) => p.querySelectorAll('.u-legend .u-series').length === n + 1),
        2,
        { timeout: 20_000 },
      );
      const panels = await page.$$('.chart-panel[data-metric]');
      assert.ok(panels.length >= 3, `${panels.length} charts`);
      for (const panel of panels) {
        const metric = await panel.getAttribute('data-metric');
        const labels = await panel.$$eval('.u-legend .u-series .u-label', (els) => els.slice(1).map((e) => e.textContent));
        assert.deepEqual(labels, names, `${metric}: the legend names the runs`);
      }
      const zeroStd = '.chart-panel[data-metric="rollout/zero_std_group_ratio"] .uplot canvas';
      const px = await canvasPixels(page, zeroStd, [FIRST_COLOUR, SECOND_COLOUR]);
      assert.ok(px.matches[FIRST_COLOUR]! > 30 && px.matches[SECOND_COLOUR]! > 30, `both runs drawn in their colours: ${JSON.stringify(px.matches)}`);
    };
    await page.waitForTimeout(300);
    await checkOverlay();
    await screenshot(page, 'metrics-compare');

    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.click('.chart-panel[data-metric="rollout/zero_std_group_ratio"] [data-testid=csv-download]'),
    ]);
    const csv = readFileSync((await download.path())!, 'utf8');
    assert.deepEqual(csv.split('\n')[0]!.split(',').slice(1), names, 'the CSV columns are named after the runs');

    // Time since start lines the runs up; the choice survives a reload.
    await page.selectOption('.controls-col select', 'rel');
    await page.waitForFunction(() => /x=rel/.test(location.hash));
    await page.reload();
    await page.waitForSelector('[data-testid=run-picker] input[data-run]');
    assert.deepEqual(await page.$$eval('[data-testid=run-picker] input[data-run]', (els) => els.map((e: any) => e.checked)), [true, true]);
    assert.equal(hashParams(page).get('runs'), 'run,collapse');
    await checkOverlay();
    assert.match(await page.$eval('.chart-panel[data-metric="rollout/zero_std_group_ratio"] .u-legend .u-series .u-label', (e) => e.textContent ?? ''), /since start/);
    await screenshot(page, 'metrics-compare-relative');
    assert.deepEqual(w.problems(), []);
  });
});
