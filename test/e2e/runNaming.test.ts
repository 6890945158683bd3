// The header and the run names over a miles and two slime runs (`serve --runs ROOT` over copies of the
// miles-demo, slime-trace and slime-trace-legacy-pd fixtures): the run selector works from the keyboard; a
// run is named by its id everywhere (its meta.json name beside it) and keeps its colour in Diff; a diff's
// header names side A's run; Compute Utilization says what a slime run has instead of a timeline; Metrics
// lists the keys of every ticked run; wide tables say that they scroll sideways.
import assert from 'node:assert/strict';
import { cpSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import type { Meta, RunsAnswer } from '../../src/wire/index.ts';
import { SERIES_COLORS } from '../../web/theme.ts';
import { ageTree, fixturePath } from '../support/fixtures.ts';
import { hasChromium, hashParams, hashPath, openPage, screenshot, type Served, spawnServer, startBrowserSuite, stopBrowserSuite } from './harness.ts';

declare const document: any;
declare const getComputedStyle: any;

const rgb = (h: string) => `rgb(${parseInt(h.slice(1, 3), 16)}, ${parseInt(h.slice(3, 5), 16)}, ${parseInt(h.slice(5, 7), 16)})`;

/** What the keyboard is on: the focused element's test id or role, and the listbox's active option. */
async function focus(page: Page): Promise<{ testid: string | null; role: string | null; active: string | null; expanded: string | null }> {
  return page.evaluate(() => {
    const el = document.activeElement;
    const active = el?.getAttribute('aria-activedescendant');
    return {
      testid: el?.getAttribute('data-testid') ?? null,
      role: el?.getAttribute('role') ?? null,
      active: active ? document.getElementById(active)?.getAttribute('data-run') ?? null : null,
      expanded: document.querySelector('[data-testid=run-selector]')?.getAttribute('aria-expanded') ?? null,
    };
  });
}

/** Waits until the run list is open with the keyboard in it. */
async function opened(page: Page): Promise<void> {
  await page.waitForFunction(() => document.activeElement?.getAttribute('role') === 'listbox');
}

describe('run selector, run names, diff header, slime notes and wide tables (serve --runs ROOT, headless Chromium)', { skip: hasChromium ? false : 'Debian chromium is not installed at /usr/bin/chromium' }, () => {
  let served: Served;
  let browser: Browser;
  let runs: RunsAnswer['runs'];
  const api = async <T>(path: string) => (await (await fetch(`${served.url}api/${path}`)).json()) as T;

  before(async () => {
    ({ served, browser } = await startBrowserSuite(async () => {
      const base = mkdtempSync(join(tmpdir(), 'rlsight-e2e-naming-'));
      const root = join(base, 'runs');
      mkdirSync(root);
      cpSync(fixturePath('miles-demo', 'run'), join(root, 'run'), { recursive: true });
      cpSync(fixturePath('slime-trace'), join(root, 'slime-trace'), { recursive: true });
      cpSync(fixturePath('slime-trace-legacy-pd'), join(root, 'slime-trace-legacy-pd'), { recursive: true });
      // git keeps no mtimes, and the dump reader hides young files
      ageTree(root);
      return spawnServer(base, join(root, 'run'), ['serve', '--runs', root]).catch((e) => {
        rmSync(base, { recursive: true, force: true });
        throw e;
      });
    }));
    runs = (await api<RunsAnswer>('runs')).runs;
  });
  after(() => stopBrowserSuite({ served, browser }));

  const colourOf = (id: string) => SERIES_COLORS[runs.findIndex((r) => r.id === id) % SERIES_COLORS.length]!;

  it('serves the three runs, the miles run first under an id unlike its name', () => {
    assert.deepEqual(runs.map((r) => r.id).sort(), ['run', 'slime-trace', 'slime-trace-legacy-pd']);
    assert.equal(runs.find((r) => r.id === 'run')!.name, 'dummy-telemetry');
  });

  it('the header run selector works from the keyboard: open, move, choose, Esc; focus returns to the button', async () => {
    const w = await openPage(browser, 1366, 800);
    const { page } = w;
    await page.goto(`${served.url}#/health?run=run`);
    await page.waitForSelector('[data-testid=run-selector]');
    await page.waitForSelector('table.health-board tbody tr');
    // Tab reaches the button (after the search box).
    let onButton = false;
    for (let i = 0; i < 40 && !onButton; i++) {
      await page.keyboard.press('Tab');
      onButton = (await focus(page)).testid === 'run-selector';
    }
    assert.ok(onButton, 'Tab reaches the run selector');
    assert.equal(await page.getAttribute('[data-testid=run-selector]', 'aria-haspopup'), 'listbox');

    // Enter opens the list on the chosen run, with the focus in it.
    await page.keyboard.press('Enter');
    await opened(page);
    assert.deepEqual(await focus(page), { testid: null, role: 'listbox', active: 'run', expanded: 'true' });
    assert.equal(await page.getAttribute('[data-testid=run-selector]', 'aria-controls'), await page.getAttribute('[role=listbox]', 'id'));
    // the listbox holds options only, each with an id for aria-activedescendant and its selection said
    const options = await page.$$eval('[role=listbox] > *', (els) => els.map((e: any) => ({ role: e.getAttribute('role'), id: e.id, selected: e.getAttribute('aria-selected'), run: e.dataset.run })));
    assert.deepEqual(
      options.map((o) => [o.role, o.selected, o.run]),
      runs.map((r) => ['option', String(r.id === 'run'), r.id]),
    );
    assert.ok(options.every((o) => o.id !== ''), 'every option has an id');
    await screenshot(page, 'run-selector-keyboard-open');

    // ↓ moves (the page does not scroll), Enter chooses: the whole app switches, the focus is back on the button.
    const scrollY = await page.evaluate(() => (globalThis as any).scrollY);
    await page.keyboard.press('ArrowDown');
    const second = runs[1]!.id;
    assert.equal((await focus(page)).active, second);
    assert.equal(await page.evaluate(() => (globalThis as any).scrollY), scrollY, 'ArrowDown moves in the list, not the page');
    await page.keyboard.press('Enter');
    await page.waitForFunction((id) => (globalThis as any).location.hash.includes(`run=${id}`), second);
    await page.waitForSelector('[role=listbox]', { state: 'detached' });
    assert.equal(await page.getAttribute('[data-testid=run-selector]', 'data-run'), second);
    assert.equal((await focus(page)).testid, 'run-selector', 'focus returns to the button');
    assert.equal(hashPath(page), '#/health', 'the same view');

    // ↓ on the button opens too; End goes to the last run; Esc closes without choosing, focus on the button.
    await page.keyboard.press('ArrowDown');
    await opened(page);
    assert.equal((await focus(page)).active, second);
    await page.keyboard.press('End');
    assert.equal((await focus(page)).active, runs.at(-1)!.id);
    await page.keyboard.press('Escape');
    await page.waitForSelector('[role=listbox]', { state: 'detached' });
    assert.deepEqual(await focus(page), { testid: 'run-selector', role: null, active: null, expanded: 'false' });
    assert.equal(hashParams(page).get('run'), second, 'Esc chooses nothing');

    // Space opens; a letter goes to the run it starts; Home and ↑ stay in the list.
    await page.keyboard.press(' ');
    await opened(page);
    await page.keyboard.press('Home');
    assert.equal((await focus(page)).active, runs[0]!.id);
    await page.keyboard.press('ArrowUp');
    assert.equal((await focus(page)).active, runs[0]!.id, 'no option above the first');
    await page.keyboard.press('End');
    await page.keyboard.press('r');
    assert.equal((await focus(page)).active, 'run');
    await page.keyboard.press('Enter');
    await page.waitForFunction(() => /run=run(&|$)/.test((globalThis as any).location.hash));
    assert.equal(await page.getAttribute('[data-testid=run-selector]', 'data-run'), 'run');
    // Back returns to the run chosen before.
    await page.goBack();
    await page.waitForFunction((id) => (globalThis as any).location.hash.includes(`run=${id}`), second);
    assert.deepEqual(w.problems(), []);
  });

  it('a run is named by its id everywhere, its meta.json name beside it: run picker, chart legends, Diff pickers, runs table', async () => {
    const w = await openPage(browser, 1366, 800);
    const { page } = w;
    await page.goto(`${served.url}#/?run=run&runs=run,slime-trace&cat=dump`);
    await page.waitForSelector('[data-testid=run-picker] input[data-run]');
    const picker = await page.$$eval('[data-testid=run-picker] label', (ls) => ls.map((l: any) => l.textContent.trim()));
    assert.deepEqual(picker, runs.map((r) => (r.id === 'run' ? 'run (dummy-telemetry)' : r.id)));
    // a chart of a key both runs have: one series per run, each named as the header names it
    const panel = '.chart-panel[data-metric="dump/reward_mean"]';
    await page.waitForFunction((sel) => document.querySelectorAll(`${sel} .u-legend .u-series`).length === 3, panel, { timeout: 20_000 });
    const legend = await page.$$eval(`${panel} .u-legend .u-series .u-label`, (els) => els.slice(1).map((e: any) => e.textContent));
    assert.deepEqual(legend, ['run (dummy-telemetry)', 'slime-trace']);
    await screenshot(page, 'run-names-metrics');

    await page.goto(`${served.url}#/diff?run_a=run&run_b=slime-trace`);
    await page.waitForSelector('[data-testid=run-a] option', { state: 'attached' });
    const options = await page.$$eval('[data-testid=run-a] option', (os) => os.map((o: any) => [o.value, o.textContent]));
    assert.deepEqual(options, runs.map((r) => [r.id, r.id === 'run' ? 'run (dummy-telemetry)' : r.id]));

    await page.goto(`${served.url}#/runs`);
    await page.waitForSelector('table.runs-table tbody tr[data-run=run]');
    assert.equal((await page.textContent('table.runs-table tr[data-run=run] th[scope=row]'))!.trim(), 'run (dummy-telemetry)');
    assert.deepEqual(w.problems(), []);
  });

  it('a diff of two runs: the header names side A’s run, and each side carries its run’s colour', async () => {
    const w = await openPage(browser, 1366, 800);
    const { page } = w;
    await page.goto(`${served.url}#/runs`);
    await page.waitForSelector('table.runs-table tbody tr');
    await page.goto(`${served.url}#/diff?run_a=slime-trace-legacy-pd&a=1&run_b=slime-trace&b=1`);
    await page.waitForSelector('.diff-dist svg.histogram');
    assert.equal(await page.getAttribute('[data-testid=run-selector]', 'data-run'), 'slime-trace-legacy-pd', 'the header names side A’s run');
    assert.equal(hashParams(page).get('run'), 'slime-trace-legacy-pd');
    assert.equal(await page.locator('[data-testid=run-a]').inputValue(), 'slime-trace-legacy-pd');
    assert.equal(await page.locator('[data-testid=run-b]').inputValue(), 'slime-trace');
    const swatch = (side: string) => page.$eval(`[data-testid=swatch-${side}]`, (e: any) => getComputedStyle(e).backgroundColor);
    assert.equal(await swatch('a'), rgb(colourOf('slime-trace-legacy-pd')), 'side A in its run’s colour');
    assert.equal(await swatch('b'), rgb(colourOf('slime-trace')), 'side B in its run’s colour');
    assert.equal(await page.$eval('[data-testid=run-selector] .swatch', (e: any) => getComputedStyle(e).backgroundColor), await swatch('a'), 'the header’s swatch is side A’s');
    // the histograms draw each side in its colour too
    const fills = await page.$$eval('.diff-dist[data-metric=reward] svg rect', (rs) => [...new Set(rs.map((r: any) => r.getAttribute('fill')))]);
    assert.deepEqual(fills.sort(), [colourOf('slime-trace'), colourOf('slime-trace-legacy-pd')].sort());
    await screenshot(page, 'diff-runs-header-colours');
    // The header names the run the address gave (its entry replaced): Back goes to the page before.
    await page.goBack();
    await page.waitForFunction(() => (globalThis as any).location.hash.startsWith('#/runs'));

    // Choosing another run in the header on a diff changes side A.
    await page.goForward();
    await page.waitForSelector('.diff-dist svg.histogram');
    await page.click('[data-testid=run-selector]');
    await page.click('[role=option][data-run=slime-trace]');
    await page.waitForFunction(() => new URLSearchParams((globalThis as any).location.hash.split('?')[1]).get('run_a') === 'slime-trace');
    await page.waitForFunction(() => document.querySelector('[data-testid=run-a]')?.value === 'slime-trace');
    assert.equal(await page.getAttribute('[data-testid=run-selector]', 'data-run'), 'slime-trace');

    // The sample diff of two runs likewise.
    await page.goto(`${served.url}#/diff/sample?run_a=slime-trace&a=1:16&run_b=slime-trace-legacy-pd&b=1:8`);
    await page.waitForSelector('.diff-sample[data-side="b"]');
    assert.equal(await page.getAttribute('[data-testid=run-selector]', 'data-run'), 'slime-trace');
    assert.equal(await swatch('a'), rgb(colourOf('slime-trace')));
    assert.equal(await swatch('b'), rgb(colourOf('slime-trace-legacy-pd')));
    assert.match((await page.textContent('svg.token-series'))!, /A’s run colour: only A/);
    // A side A picked in its picker moves the header with it.
    await page.locator('[data-testid=run-a]').selectOption('slime-trace-legacy-pd');
    await page.waitForFunction(() => document.querySelector('[data-testid=run-selector]')?.getAttribute('data-run') === 'slime-trace-legacy-pd');
    w.expect(/^http 404: \/api\/runs\/slime-trace-legacy-pd\/rlsight\/diff\/samples\?/);
    assert.deepEqual(w.problems(), []);
  });

  it('Compute Utilization on a slime run says slime writes no compute timeline, and what Metrics has instead', async () => {
    const w = await openPage(browser, 1366, 800);
    const { page } = w;
    await page.goto(`${served.url}#/timeline?run=slime-trace`);
    const note = page.locator('#view .empty', { hasText: 'No timeline' });
    await note.waitFor();
    const text = (await note.textContent())!;
    assert.match(text, /slime writes no compute timeline/);
    for (const prefix of ['perf/', 'rollout/', 'eval/', 'perf_fixed/']) assert.ok(text.includes(prefix), `names ${prefix}: ${text}`);
    assert.doesNotMatch(text, /without the collector|fall back/);
    await screenshot(page, 'timeline-slime-note');
    assert.deepEqual(w.problems(), []);
  });

  it('Metrics with two slime runs ticked lists the keys of both; a chart of a key one run lacks says so', async () => {
    const w = await openPage(browser, 1366, 800);
    const { page } = w;
    const [current, legacy] = await Promise.all([api<Meta>('runs/slime-trace/meta'), api<Meta>('runs/slime-trace-legacy-pd/meta')]);
    const legacyOnly = legacy.metric_keys.filter((k) => k.startsWith('perf/prefill/') && !current.metric_keys.includes(k));
    assert.ok(legacyOnly.length > 0, 'the legacy dump has perf/prefill/* keys the current one lacks');
    const perf = new Set([...current.metric_keys, ...legacy.metric_keys].filter((k) => k.startsWith('perf/')));

    await page.goto(`${served.url}#/?run=slime-trace&runs=slime-trace,slime-trace-legacy-pd&cat=perf`);
    await page.waitForSelector('.chart-panel[data-metric]');
    assert.equal(Number(await page.textContent('.categories a:has-text("perf") .count')), perf.size, 'the perf category counts both runs’ keys');
    assert.match((await page.textContent('[data-testid=keys-of-runs]'))!, /keys of all 2 ticked runs/);

    await page.goto(`${served.url}#/?run=slime-trace&runs=slime-trace,slime-trace-legacy-pd&q=perf/prefill/`);
    const panel = `.chart-panel[data-metric="${legacyOnly[0]}"]`;
    await page.waitForSelector(`${panel} .u-legend .u-series`, { timeout: 20_000 });
    assert.equal(await page.locator('.chart-panel[data-metric^="perf/prefill/"]').count(), legacy.metric_keys.filter((k) => k.startsWith('perf/prefill/')).length);
    assert.equal(await page.getAttribute(`${panel} [data-testid=key-absent]`, 'data-runs'), 'slime-trace', 'the chart says which ticked run lacks its key');
    const legend = await page.$$eval(`${panel} .u-legend .u-series .u-label`, (els) => els.slice(1).map((e: any) => e.textContent));
    assert.deepEqual(legend, ['slime-trace-legacy-pd']);
    await screenshot(page, 'metrics-union-keys');
    // a key both runs list says nothing of the kind
    await page.goto(`${served.url}#/?run=slime-trace&runs=slime-trace,slime-trace-legacy-pd&q=perf/request/e2e_latency/mean`);
    await page.waitForSelector('.chart-panel[data-metric="perf/request/e2e_latency/mean"] .u-legend .u-series');
    assert.equal(await page.locator('[data-testid=key-absent]').count(), 0);
    assert.deepEqual(w.problems(), []);
  });

  it('wide tables say they scroll sideways: the runs table at 1366 px and a Health board at 1024 px', async () => {
    const w = await openPage(browser, 1366, 800);
    const { page } = w;
    await page.goto(`${served.url}#/runs`);
    await page.waitForSelector('table.runs-table tbody tr');
    const cue = page.locator('[data-testid=side-scroll-cue]');
    await cue.waitFor();
    // the columns cut at the right edge, counted in the page as the cue counts them
    const cut = () =>
      page.evaluate(() => {
        const box = document.querySelector('.runs-scroll');
        const right = box.getBoundingClientRect().left + box.clientWidth;
        return [...document.querySelectorAll('table.runs-table thead th')].filter((th: any) => th.getBoundingClientRect().right > right + 1).length;
      });
    const hidden = await cut();
    assert.ok(hidden > 0, 'at 1366 px the metric columns are past the right edge');
    assert.equal(Number(await cue.getAttribute('data-right')), hidden);
    assert.match((await cue.textContent())!, new RegExp(`${hidden} more columns? →`));
    assert.ok(await page.locator('table.runs-table th[data-col^="m:"]').last().evaluate((th: any) => th.getBoundingClientRect().right > document.querySelector('.runs-scroll').getBoundingClientRect().right));
    await screenshot(page, 'runs-table-scroll-cue');
    // its button scrolls to them
    await cue.locator('button', { hasText: 'more' }).click();
    await page.waitForFunction(() => document.querySelector('.runs-scroll').scrollLeft > 0);
    await page.evaluate(() => {
      const box = document.querySelector('.runs-scroll');
      box.scrollLeft = box.scrollWidth;
    });
    await page.waitForFunction(() => document.querySelector('[data-testid=side-scroll-cue]')?.getAttribute('data-right') === '0');
    assert.ok(Number(await cue.getAttribute('data-left')) > 0, 'scrolled to the end, it counts the columns to the left');
    assert.match((await cue.textContent())!, /← \d+ columns?/);

    await page.setViewportSize({ width: 1024, height: 700 });
    await page.goto(`${served.url}#/health?run=run`);
    await page.waitForSelector('table.health-board tbody tr');
    const board = page.locator('.health-scroll').last();
    assert.ok(await board.evaluate((b: any) => b.scrollWidth > b.clientWidth), 'the board is wider than the window at 1024 px');
    const boardCue = page.locator('[data-testid=side-scroll-cue]').last();
    await boardCue.waitFor();
    assert.ok(Number(await boardCue.getAttribute('data-right')) > 0);
    await screenshot(page, 'health-board-scroll-cue');
    assert.deepEqual(w.problems(), []);
  });
});
