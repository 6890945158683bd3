// One run choice for the whole app, on `rlsight demo`'s two runs: `?run=collapse` on every route sends every
// run-scoped request to /api/runs/collapse/… and shows collapse's values; the choice survives navigation,
// Back/Forward and reload; an unknown run names the known ones.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import type { HealthAnswer, RolloutTable } from '../../src/wire/index.ts';
import { SERIES_COLORS } from '../../web/theme.ts';
import { canvasPixels, hasChromium, hashParams, openPage, screenshot, type Served, serveRlsightDemo, startBrowserSuite, stopBrowserSuite } from './harness.ts';

declare const document: any;
declare const getComputedStyle: any;

/** Every API request the page makes from now on (path and query). */
function recordRequests(page: Page): string[] {
  const seen: string[] = [];
  page.on('request', (r) => {
    const u = new URL(r.url());
    if (u.pathname.startsWith('/api/')) seen.push(u.pathname + u.search);
  });
  return seen;
}

/**
 * The requests that are neither app-wide (`/api/runs`, `/api/events`) nor under `/api/runs/{run}/`. Another run's
 * meta is asked on purpose: Rollouts offers to compare a step only with runs whose meta says they hold dumps.
 */
function strays(seen: string[], run: string): string[] {
  return seen.filter((p) => !p.startsWith(`/api/runs/${run}/`) && !/^\/api\/(runs|events)(\?|$)/.test(p) && !/^\/api\/runs\/[^/]+\/meta$/.test(p));
}

describe('one run choice for the whole app (rlsight demo, headless Chromium)', { skip: hasChromium ? false : 'Debian chromium is not installed at /usr/bin/chromium' }, () => {
  let served: Served;
  let browser: Browser;
  const api = async <T>(path: string) => (await (await fetch(`${served.url}api/${path}`)).json()) as T;
  const completeBoard = async (path: string): Promise<HealthAnswer> => {
    for (;;) {
      const board = await api<HealthAnswer>(path);
      if (!board.coverage) return board;
      await new Promise((r) => setTimeout(r, 200));
    }
  };

  before(async () => ({ served, browser } = await startBrowserSuite(() => serveRlsightDemo())));
  after(() => stopBrowserSuite({ served, browser }));

  it('every view with ?run=collapse asks only /api/runs/collapse/… and shows collapse’s Health and Rollouts values', async () => {
    const w = await openPage(browser);
    const { page } = w;
    const seen = recordRequests(page);

    await page.goto(`${served.url}#/health?run=collapse`);
    await page.waitForSelector('table.health-board tbody tr');
    // the boards come at once over the steps read so far, complete once every step is read
    const board = await completeBoard('runs/collapse/rlsight/health');
    const healthy = await completeBoard('runs/healthy/rlsight/health');
    await page.locator('.health [data-testid=coverage]').waitFor({ state: 'detached', timeout: 30_000 });
    const zeroStd = board.signals.find((s) => /zero/.test(s.id))!.id;
    for (const step of [196, 199]) {
      const shown = await page.evaluate(
        ({ step, id }) => {
          const row = [...document.querySelectorAll('table.health-board tbody tr')].find((tr: any) => tr.cells[0].textContent.trim() === String(step));
          return row?.querySelector(`[data-signal="${id}"]`)?.textContent ?? null;
        },
        { step, id: zeroStd },
      );
      const want = board.rows.find((r) => r.step === step)!.cells[zeroStd]!.value;
      const other = healthy.rows.find((r) => r.step === step)!.cells[zeroStd]!.value;
      assert.notEqual(want, other, `step ${step}: the runs differ, so the board tells them apart`);
      // the cell's number (it also says its level in words and a mark, for a screen reader and beside the colour)
      assert.equal(Number(shown?.match(/-?[\d.]+/)?.[0]), Number(want!.toFixed(3)), `step ${step}: collapse's ${zeroStd}: ${shown}`);
    }
    assert.match((await page.textContent('header.topbar'))!, /collapse/);
    await screenshot(page, 'run-choice-health-collapse');

    await page.goto(`${served.url}#/rollout/199?run=collapse`);
    await page.waitForSelector('[data-testid=dump-summary]');
    assert.equal(Number(await page.textContent('.stat[title="dump/zero_std_group_frac"] .v')), 0.5, 'collapse zero-std share at step 199');
    const groups = await api<RolloutTable>('runs/collapse/rollout/199/groups');
    assert.ok(groups.rows.length > 0);
    await page.locator('.tabs', { hasText: 'zero-std)' }).waitFor();

    const sample = Number((await api<RolloutTable>('runs/collapse/rollout/199/summary')).rows[0]!.sample_index);
    for (const route of ['#/timeline', '#/', '#/trace/199', `#/rollout/199/sample/${sample}?tab=tokens`, '#/diff']) {
      const [path, q] = route.split('?');
      await page.goto(`${served.url}${path}?${q ? `${q}&` : ''}run=collapse`);
      await page.waitForLoadState('networkidle').catch(() => {});
      await page.waitForSelector('#view > *:not(.loading)');
      if (route.includes('tab=tokens')) await page.waitForSelector('[data-testid=token-text] [data-pos]', { timeout: 20_000 });
      const links = await page.$$eval('a[href*="api/"]', (as) => as.map((a: any) => a.getAttribute('href')));
      for (const link of links) assert.match(link, /(^|\/)api\/runs\/collapse\//, `${route}: a download link names the chosen run`);
    }
    for (const family of ['meta', 'metrics', 'timeline/', 'rollout/', 'rlsight/'])
      assert.ok(seen.some((p) => p.startsWith(`/api/runs/collapse/${family}`)), `a ${family} request was made: ${seen.join(' ')}`);
    assert.deepEqual(strays(seen, 'collapse'), [], 'every run-scoped request names the chosen run');
    assert.ok(seen.some((p) => p.startsWith('/api/runs/collapse/meta')), 'the header’s meta is the chosen run’s');
    assert.deepEqual(w.problems(), []);
  });

  it('the choice survives header navigation, Back/Forward and reload; the selector switches the whole app', async () => {
    const w = await openPage(browser);
    const { page } = w;
    await page.goto(`${served.url}#/health?run=collapse`);
    await page.waitForSelector('table.health-board tbody tr');
    for (const name of ['Compute Utilization', 'Rollouts', 'Metrics', 'Diff', 'Health']) {
      // the Compute Utilization link is named by its title (narrow windows show "Compute")
      await page.click(name === 'Compute Utilization' ? 'header.topbar nav a[title="Compute Utilization"]' : `header.topbar nav a:text-is("${name}")`);
      await page.waitForFunction(() => document.querySelector('#view > *:not(.loading)'));
      assert.equal(hashParams(page).get('run'), 'collapse', `${name} keeps the run`);
    }
    await page.goBack();
    await page.goBack();
    assert.equal(hashParams(page).get('run'), 'collapse');
    await page.goForward();
    await page.reload();
    await page.waitForSelector('header.topbar [data-testid=run-selector]');
    assert.equal(await page.getAttribute('header.topbar [data-testid=run-selector]', 'data-run'), 'collapse');
    assert.doesNotMatch((await page.textContent('header.topbar'))!, /healthy/, 'the header names the chosen run only');

    const seen = recordRequests(page);
    await page.goto(`${served.url}#/health?run=collapse`);
    await page.waitForSelector('table.health-board tbody tr');
    await page.click('header.topbar [data-testid=run-selector]');
    await page.click('header.topbar [role=option][data-run=healthy]');
    await page.waitForFunction(() => /run=healthy/.test(location.hash));
    await page.waitForFunction(() => /healthy/.test(document.querySelector('header.topbar [data-testid=run-selector]')?.textContent ?? ''));
    await page.waitForSelector('table.health-board tbody tr');
    assert.ok(seen.some((p) => p.startsWith('/api/runs/healthy/rlsight/health')));
    await page.goBack();
    await page.waitForFunction(() => /collapse/.test(document.querySelector('header.topbar [data-testid=run-selector]')?.textContent ?? ''));
    assert.deepEqual(w.problems(), []);
  });

  it('the runs table lists both runs with their configuration and latest values; sort, filter and compare picks live in the URL', async () => {
    const w = await openPage(browser);
    const { page } = w;
    await page.goto(`${served.url}#/?run=collapse`);
    await page.click('header.topbar nav a:text-is("Runs")');
    await page.waitForSelector('table.runs-table tbody tr');
    assert.equal(hashParams(page).get('run'), 'collapse');
    const headers = await page.$$eval('table.runs-table thead th[data-col]', (ths) => ths.map((t: any) => t.getAttribute('data-col')));
    for (const col of ['format', 'status', 'start', 'duration', 'gpus', 'steps', 'model', 'lr', 'batch', 'group', 'parallel', 'm:rollout/rewards_mean', 'm:rollout/zero_std_group_ratio', 'm:perf/step_time'])
      assert.ok(headers.includes(col), `column ${col} in ${headers}`);
    const cell = (run: string, col: string) => page.textContent(`table.runs-table tr[data-run="${run}"] td[data-col="${col}"]`);
    assert.deepEqual(await page.$$eval('table.runs-table tbody tr', (trs) => trs.map((t: any) => t.getAttribute('data-run'))), ['healthy', 'collapse']);
    assert.equal(await cell('collapse', 'model'), 'Qwen/Qwen3-8B');
    assert.equal(await cell('collapse', 'group'), '8');
    assert.equal(await cell('collapse', 'status'), 'finished');
    assert.equal(await cell('collapse', 'steps'), '200');
    const listed = await api<{ runs: { id: string; latest: Record<string, number> }[] }>('runs?latest=rollout/zero_std_group_ratio');
    const zs = listed.runs.find((r) => r.id === 'collapse')!.latest['rollout/zero_std_group_ratio']!;
    assert.equal(Number(await cell('collapse', 'm:rollout/zero_std_group_ratio')), Number(zs.toFixed(3)));
    // Sort by the latest zero-std share, highest first; then filter by text.
    await page.click('table.runs-table th[data-col="m:rollout/zero_std_group_ratio"] button');
    await page.click('table.runs-table th[data-col="m:rollout/zero_std_group_ratio"] button');
    assert.equal(hashParams(page).get('desc'), '1');
    const order = await page.$$eval('table.runs-table tbody tr', (trs) => trs.map((t: any) => t.getAttribute('data-run')));
    const healthyZs = listed.runs.find((r) => r.id === 'healthy')!.latest['rollout/zero_std_group_ratio']!;
    assert.deepEqual(order, zs > healthyZs ? ['collapse', 'healthy'] : ['healthy', 'collapse']);
    await page.fill('input[aria-label="filter runs"]', 'collapse');
    await page.waitForFunction(() => document.querySelectorAll('table.runs-table tbody tr').length === 1);
    // by a column's label and its value as shown, a number however it is written
    const lr = (await cell('collapse', 'lr'))!;
    await page.fill('input[aria-label="filter runs"]', `model=Qwen/Qwen3-8B group size=8 lr=${Number(lr).toExponential()} collapse`);
    await page.waitForFunction(() => document.querySelectorAll('table.runs-table tbody tr').length === 1);
    await page.fill('input[aria-label="filter runs"]', `lr=${Number(lr) * 1000}`);
    await page.waitForSelector('text=No run matches');
    await page.fill('input[aria-label="filter runs"]', '');
    await page.waitForFunction(() => document.querySelectorAll('table.runs-table tbody tr').length === 2);
    // An arg column chosen by the user is kept in the URL, like the picks to compare.
    await page.click('summary:text-is("arg columns")');
    await page.click('input[data-option="rollout_max_response_len"]');
    await page.waitForSelector('table.runs-table th[data-col="arg:rollout_max_response_len"]');
    await page.check('input[aria-label="compare healthy"]');
    await page.check('input[aria-label="compare collapse"]');
    await page.reload();
    await page.waitForSelector('table.runs-table th[data-col="arg:rollout_max_response_len"]');
    assert.equal(await page.isChecked('input[aria-label="compare collapse"]'), true);
    const metricsLink = await page.getAttribute('[data-testid=runs-compare] a:text-is("Metrics")', 'href');
    assert.match(metricsLink!, /runs=healthy(%2C|,)collapse/);
    await screenshot(page, 'runs-table');
    // Scrolled sideways (a narrow window, many columns), each row's tick box and name stay in view, above the columns passing under them.
    await page.setViewportSize({ width: 900, height: 700 });
    // columns cut at the right edge fade out there (a half-shown number is not read as a value), until scrolled to the end
    await page.waitForSelector('.runs-scroll[data-more-right="true"]');
    await screenshot(page, 'runs-table-more-right');
    const scrolled = await page.evaluate(() => {
      const box = document.querySelector('.runs-scroll');
      box.scrollLeft = box.scrollWidth;
      const left = box.getBoundingClientRect().left;
      const name = document.querySelector('table.runs-table tr[data-run="collapse"] th[scope=row]').getBoundingClientRect();
      const tick = document.querySelector('input[aria-label="compare collapse"]').getBoundingClientRect();
      const top = document.elementFromPoint(name.left + 4, name.top + name.height / 2);
      return { scrolled: box.scrollLeft, left, name: name.left, tick: tick.left, onTop: top?.closest('th[scope=row]') !== null };
    });
    assert.ok(scrolled.scrolled > 100, `the table scrolls sideways at 900 px: ${JSON.stringify(scrolled)}`);
    assert.ok(scrolled.tick >= scrolled.left && scrolled.tick < scrolled.left + 28, `tick box in view: ${JSON.stringify(scrolled)}`);
    assert.ok(scrolled.name >= scrolled.left + 20 && scrolled.name < scrolled.left + 40, `run name in view: ${JSON.stringify(scrolled)}`);
    assert.ok(scrolled.onTop, 'the name is drawn above the scrolled cells');
    await page.waitForSelector('.runs-scroll[data-more-right="false"]');
    await screenshot(page, 'runs-table-scrolled');
    assert.deepEqual(w.problems(), []);
  });

  it('the header fits 800 px: view names on one line, the run named in full', async () => {
    const w = await openPage(browser, 800, 700);
    const { page } = w;
    await page.goto(`${served.url}#/timeline?run=collapse`);
    await page.waitForSelector('header.topbar [data-testid=run-selector]');
    const fit = await page.evaluate(() => {
      const h = document.querySelector('header.topbar');
      const sel = document.querySelector('[data-testid=run-selector]');
      const heights = [...h.querySelectorAll('nav a')].map((a: any) => a.getBoundingClientRect().height);
      return { overflow: h.scrollWidth - h.clientWidth, heights, clipped: sel.scrollWidth - sel.clientWidth, right: sel.getBoundingClientRect().right, parts: [...h.querySelectorAll('.runinfo > *')].map((e: any) => `${e.className}:${Math.round(e.getBoundingClientRect().width)}`) };
    });
    await screenshot(page, 'header-800px');
    assert.equal(fit.overflow, 0, `nothing runs off the header: ${JSON.stringify(fit)}`);
    assert.ok(Math.max(...fit.heights) <= 50, `each view name on one line: ${fit.heights}`);
    assert.equal(fit.clipped, 0, 'the run name is not cut');
    assert.ok(fit.right <= 800);
    assert.deepEqual(w.problems(), []);
  });

  it('Metrics with collapse alone draws it in collapse’s colour, the swatch beside it in the run picker', async () => {
    const w = await openPage(browser);
    const { page } = w;
    await page.goto(`${served.url}#/?run=collapse`);
    const canvas = '[data-metric="rollout/raw_reward"] canvas';
    await page.waitForSelector(canvas);
    await page.waitForTimeout(300);
    // The server lists healthy first, collapse second: their colours are the first two series colours.
    const [healthyColour, collapseColour] = [SERIES_COLORS[0]!, SERIES_COLORS[1]!];
    const px = await canvasPixels(page, canvas, [healthyColour, collapseColour]);
    assert.ok(px.matches[collapseColour]! > 50, `collapse's line in its colour: ${JSON.stringify(px.matches)}`);
    assert.equal(px.matches[healthyColour], 0, 'nothing drawn in healthy’s colour');
    assert.deepEqual(w.problems(), []);
  });

  it('the runs table’s Rollouts link opens the newest step with both runs compared', async () => {
    const w = await openPage(browser);
    const { page } = w;
    await page.goto(`${served.url}#/runs?pick=healthy,collapse`);
    await page.locator('[data-testid=runs-compare] a', { hasText: 'Rollouts' }).click();
    await page.waitForURL(/#\/rollout\/199\?/);
    assert.equal(hashParams(page).get('runs'), 'healthy,collapse', 'the comparison is kept when `#/rollout` becomes the newest step');
    const shares = page.locator('[data-testid=rollout-runs-compare] [data-testid=zero-std-share]');
    await shares.first().waitFor();
    assert.equal(await shares.count(), 2);
    assert.deepEqual(w.problems(), []);
  });

  it('with two runs compared, each engine’s swatch in the Engines list is the colour its lines are drawn in, its run’s', async () => {
    const w = await openPage(browser);
    const { page } = w;
    await page.goto(`${served.url}#/?runs=healthy,collapse&run=healthy&cat=sglang`);
    await page.waitForSelector('.engine-legend [data-engine]');
    await page.waitForSelector('.chart-panel canvas');
    const swatches: { engine: string; colour: string }[] = await page.evaluate(() =>
      [...document.querySelectorAll('.engine-legend [data-engine]')].map((s: any) => ({ engine: s.dataset.engine, colour: getComputedStyle(s).backgroundColor })),
    );
    const rgb = (h: string) => `rgb(${parseInt(h.slice(1, 3), 16)}, ${parseInt(h.slice(3, 5), 16)}, ${parseInt(h.slice(5, 7), 16)})`;
    assert.ok(swatches.length >= 4, `engines of both runs listed: ${swatches.length}`);
    for (const s of swatches) {
      // each engine is named after its run's id first, as the header names the run
      const want = s.engine.startsWith('collapse ') ? SERIES_COLORS[1]! : SERIES_COLORS[0]!;
      assert.equal(s.colour, rgb(want), `${s.engine}`);
    }
    assert.deepEqual(w.problems(), []);
  });

  it('Diff with run_b naming no served run says so and which runs exist, instead of silently diffing run A with itself', async () => {
    const w = await openPage(browser);
    const { page } = w;
    await page.goto(`${served.url}#/diff?run_a=healthy&run_b=nosuch`);
    await page.waitForSelector('[data-testid=url-note]');
    const notes = (await page.locator('[data-testid=url-note]').allTextContents()).join(' ');
    assert.match(notes, /run_b=“nosuch” is not a run served here \(runs: healthy, collapse\): showing healthy instead/);
    assert.deepEqual(w.problems(), []);
  });

  it('runs= naming a run not served says so on every comparing view instead of dropping it silently', async () => {
    const w = await openPage(browser);
    const { page } = w;
    for (const path of ['/', '/timeline', '/rollout/199', '/health']) {
      await page.goto(`${served.url}#${path}?run=healthy&runs=healthy,nosuch`);
      const note = page.locator('#view [data-testid=url-note]', { hasText: 'nosuch' });
      await note.waitFor({ timeout: 10_000 });
      assert.match((await note.textContent())!, /“nosuch” is not a run served here \(runs: healthy, collapse\)/, path);
    }
    assert.deepEqual(w.problems(), []);
  });

  it('the Health runs board says when at= is no step number or a step no run recorded, instead of a silent board', async () => {
    const w = await openPage(browser);
    const { page } = w;
    const note = page.locator('[data-testid=health-runs] [data-testid=url-note]');
    await page.goto(`${served.url}#/health?runs=healthy,collapse&at=abc`);
    await note.waitFor({ timeout: 10_000 });
    assert.match((await note.textContent())!, /at=“abc” is not a step number: showing each run’s newest step/);
    await page.goto(`${served.url}#/health?runs=healthy,collapse&at=5`);
    await page.waitForFunction(() => /at=5 is a step none of these runs recorded/.test(document.querySelector('[data-testid=health-runs] [data-testid=url-note]')?.textContent ?? ''));
    await page.goto(`${served.url}#/health?runs=healthy,collapse&at=196`);
    // A recorded step needs no note.
    await page.waitForFunction(() => /at step 196/.test(document.querySelector('[data-testid=health-runs] h2')?.textContent ?? '') && !document.querySelector('[data-testid=health-runs] [data-testid=url-note]'));
    assert.deepEqual(w.problems(), []);
  });

  it('Metrics on time since start counts from the run\'s first record for a run whose logged history precedes its current attempt', async () => {
    const w = await openPage(browser);
    const { page } = w;
    await page.goto(`${served.url}#/?run=collapse&x=rel`);
    const panel = '.chart-panel[data-metric="rollout/raw_reward"]';
    await page.waitForSelector(`${panel} canvas`);
    await page.waitForFunction((sel) => /since start/.test(document.querySelector(`${sel} .u-legend .u-series .u-label`)?.textContent ?? ''), panel);
    const [download] = await Promise.all([page.waitForEvent('download'), page.click(`${panel} [data-testid=csv-download]`)]);
    const rows = readFileSync((await download.path())!, 'utf8').trim().split('\n').slice(1);
    const xs = rows.map((r) => Number(r.split(',')[0]));
    assert.ok(xs.length > 100, `${xs.length} points`);
    // The run began with its first record (of any stream), before the resumed attempt meta.json names.
    const listed = ((await (await fetch(`${served.url}api/runs`)).json()) as { runs: { id: string; start_ts: number }[] }).runs.find((r) => r.id === 'collapse')!;
    const logged = ((await (await fetch(`${served.url}api/runs/collapse/metrics?keys=rollout/raw_reward`)).json()) as Record<string, { ts: number[] }>)['rollout/raw_reward']!;
    const meta = (await (await fetch(`${served.url}api/runs/collapse/meta`)).json()) as { start_ts: number };
    assert.ok(logged.ts[0]! < meta.start_ts, 'the logged history precedes the current attempt');
    assert.ok(Math.abs(Math.min(...xs) - (logged.ts[0]! - listed.start_ts)) < 1, `the first point at ${Math.min(...xs)} s`);
    assert.ok(xs.every((x) => x >= 0), 'no point before the start');
    assert.deepEqual(w.problems(), []);
  });

  it('an unknown run is an error naming the runs served, not the first run', async () => {
    const w = await openPage(browser);
    const { page } = w;
    w.expect(/http 404: \/api\/runs\/zz\//);
    await page.goto(`${served.url}#/rollout/199?run=zz`);
    const alert = page.locator('#view [role=alert]');
    await alert.waitFor();
    const text = (await alert.textContent())!;
    assert.match(text, /zz/);
    assert.match(text, /healthy/);
    assert.match(text, /collapse/);
    assert.equal(await page.locator('[data-testid=dump-summary]').count(), 0, 'no view of another run');
    // Nor the first run's colour beside the unknown name in the header.
    await page.waitForSelector('[data-testid=run-selector][data-run=zz]');
    assert.equal(await page.locator('[data-testid=run-selector] .swatch').count(), 0, 'no run colour for a run not served');
    assert.deepEqual(w.problems(), []);
  });
});

declare const location: { hash: string };
