// Comparing runs in the app: pick two runs, every Metrics chart overlays both in their colours with the run
// names in the legend and the CSV, and a reload restores the choice from the URL. Runs of different lengths:
// every chart spans the longer one, and only a drag sets a zoom.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { appendDemoStep, generateDemoRun } from '../../src/demo/index.ts';
import { canvasPixels, chartsWithSeries, hasChromium, hashParams, openPage, screenshot, type Served, serveDemo, spawnServer, startBrowserSuite, stopBrowserSuite } from './harness.ts';

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
    // each run as the header names it: its id, its meta.json name beside it when that differs
    names = listed.runs.map((r) => (r.name === r.id ? r.id : `${r.id} (${r.name})`));
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
      await chartsWithSeries(page, 3);
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

describe('comparing runs of different lengths (headless Chromium)', { skip: hasChromium ? false : 'Debian chromium is not installed at /usr/bin/chromium' }, () => {
  let served: Served;
  let browser: Browser;
  // `run` logs steps 0..39; `live`, still running, 0..19 and one key `run` does not have.
  const LONG_LAST = 39;
  const SHORT_LAST = 19;
  const ONLY_LIVE = 'rollout/tool_error_ratio';

  before(async () => {
    ({ served, browser } = await startBrowserSuite(async () => {
      const base = mkdtempSync(join(tmpdir(), 'rlsight-e2e-lengths-'));
      try {
        await generateDemoRun(join(base, 'run'), { steps: 4, historySteps: LONG_LAST - 3, seed: 7 });
        await generateDemoRun(join(base, 'live'), { steps: 4, historySteps: SHORT_LAST - 3, seed: 7, collapse: true });
        const metrics = join(base, 'live', 'dashboard', 'metrics.jsonl');
        const lines = readFileSync(metrics, 'utf8').split('\n').filter(Boolean);
        const withKey = lines.map((l) => {
          const rec = JSON.parse(l) as { step: number; metrics: Record<string, number> };
          if ('rollout/rewards_mean' in rec.metrics) rec.metrics[ONLY_LIVE] = rec.step / 100;
          return JSON.stringify(rec);
        });
        writeFileSync(metrics, `${withKey.join('\n')}\n`);
        return await spawnServer(base, join(base, 'live'), ['serve', join(base, 'live'), join(base, 'run'), '--follow']);
      } catch (e) {
        rmSync(base, { recursive: true, force: true });
        throw e;
      }
    }));
  });
  after(() => stopBrowserSuite({ served, browser }));

  /** Per chart, the largest x tick shown (its x range's right end, to a tick). */
  const lastTicks = (page: Page) =>
    page.$$eval('.chart-panel[data-metric]', (els) =>
      els.map((e: any) => {
        const ticks = JSON.parse(e.querySelector('.uplot')?.getAttribute('data-xticks') ?? '[]') as [number, number, string][];
        return [e.getAttribute('data-metric'), Math.max(...ticks.map((t) => Number(t[2])))] as [string, number];
      }),
    );
  const assertFullRange = async (page: Page, when: string) => {
    assert.equal(hashParams(page).get('zx'), null, `${when}: no zoom in the URL without a drag`);
    for (const [metric, tick] of await lastTicks(page)) assert.ok(tick > SHORT_LAST + 5, `${when}: ${metric} shows the longer run's steps (last tick ${tick})`);
  };

  it('every chart spans the longer run and no zoom is set without a drag, also as the shorter run grows; a drag zooms all charts', async () => {
    const w = await openPage(browser);
    const { page } = w;
    await page.goto(`${served.url}#/?cat=rollout&runs=live,run`);
    await page.waitForFunction(() => {
      const panels = [...document.querySelectorAll('.chart-panel[data-metric]')];
      return panels.length > 3 && panels.every((p: any) => p.querySelector('.uplot[data-xticks]'));
    });
    await page.waitForTimeout(500);
    await assertFullRange(page, 'on load');
    // The right end of a chart both runs have reads the longer run's last step.
    const over = (await page.locator('.chart-panel[data-metric="rollout/rewards_mean"] .u-over').boundingBox())!;
    await page.mouse.move(over.x + over.width * 0.999, over.y + over.height / 2);
    await page.waitForTimeout(100);
    assert.equal(await page.$eval('.chart-panel[data-metric="rollout/rewards_mean"] .u-legend .u-series:first-child .u-value', (e) => e.textContent), String(LONG_LAST));
    await page.mouse.move(5, 5);
    await screenshot(page, 'metrics-compare-lengths');

    // The live run grows: its new steps redraw the charts, and still no chart narrows nor writes a zoom.
    for (let i = 0; i < 2; i++) {
      const { step } = await appendDemoStep(served.runDir);
      const until = Date.now() + 15_000;
      for (;;) {
        const r = (await (await fetch(`${served.url}api/runs/live/metrics?keys=rollout/rewards_mean&x=rollout/step`)).json()) as Record<string, { x: number[] }>;
        if (r['rollout/rewards_mean']!.x.includes(step)) break;
        assert.ok(Date.now() < until, `step ${step} of the live run was not served within 15 s`);
        await page.waitForTimeout(250);
      }
      await page.waitForTimeout(3000);
      await assertFullRange(page, `after step ${step} of the live run`);
    }

    // A drag zooms every chart and puts the window in the URL; Esc brings back the full range.
    await page.mouse.move(over.x + over.width * 0.2, over.y + over.height / 2);
    await page.mouse.down();
    await page.mouse.move(over.x + over.width * 0.5, over.y + over.height / 2, { steps: 6 });
    await page.mouse.up();
    await page.waitForFunction(() => /zx=/.test(location.hash));
    const [z0, z1] = hashParams(page).get('zx')!.split(',').map(Number);
    assert.ok(z0! > 0 && z1! < 25 && z1! > z0!, `zoom window ${z0},${z1}`);
    await page.waitForTimeout(300);
    for (const [metric, tick] of await lastTicks(page)) assert.ok(tick <= z1!, `${metric} zoomed with the others (last tick ${tick})`);
    await screenshot(page, 'metrics-compare-lengths-zoomed');
    await page.keyboard.press('Escape');
    await page.waitForFunction(() => !/zx=/.test(location.hash));
    await page.waitForTimeout(300);
    await assertFullRange(page, 'after Esc');
    assert.deepEqual(w.problems(), []);
  });
});
