// The app reads its large series as columnar frames and draws them from the frame's views: the timeline's
// GPU lanes, phase bands and engine overlay, and the Metrics view's engine (sglang) charts. Every other
// request for those answers is refused here, so a view that fell back to JSON would draw nothing.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { canvasPixels, hasChromium, openPage, screenshot, type Served, serveDemo, startBrowserSuite, stopBrowserSuite } from './harness.ts';

// Code passed to page.waitForFunction runs in the browser, where this name exists.
declare const document: any;

const UTIL_COLOR = '#4ea1ff';
const ROLLOUT_PHASE = '#d55816';
const ACTOR_TRAIN_PHASE = '#2a78d6';
const COLUMNS = 'application/vnd.rlsight.columns';
const SERIES_PATHS = ['/api/timeline/gpu', '/api/timeline/phases', '/api/timeline/engine_series'];

interface Seen {
  path: string;
  accept: string | undefined;
  type: string | null;
}

/** A run-scoped path (`/api/runs/{id}/timeline/gpu`) as the family it asks for (`/api/timeline/gpu`). */
function familyPath(pathname: string): string {
  return pathname.replace(/^\/api\/runs\/[^/]+\//, '/api/');
}

/** Lets only columnar requests for the series answers through, and records what was asked and sent. */
async function framesOnly(page: Page): Promise<{ seen: Seen[]; refused: string[] }> {
  const seen: Seen[] = [];
  const refused: string[] = [];
  await page.route(
    (url) => SERIES_PATHS.includes(familyPath(url.pathname)),
    (route) => {
      const req = route.request();
      const url = new URL(req.url());
      const accept = req.headers()['accept'];
      if (accept !== COLUMNS && url.searchParams.get('format') !== 'columns') {
        refused.push(familyPath(url.pathname));
        return route.abort();
      }
      return route.continue();
    },
  );
  page.on('response', (r) => {
    const url = new URL(r.url());
    if (SERIES_PATHS.includes(familyPath(url.pathname))) seen.push({ path: familyPath(url.pathname), type: r.headers()['content-type'] ?? null, accept: r.request().headers()['accept'] });
  });
  return { seen, refused };
}

describe('views over columnar answers (headless Chromium)', { skip: hasChromium ? false : 'Debian chromium is not installed at /usr/bin/chromium' }, () => {
  let served: Served;
  let browser: Browser;
  before(async () => ({ served, browser } = await startBrowserSuite(() => serveDemo({ steps: 2 }))));
  after(() => stopBrowserSuite({ served, browser }));

  it('timeline: gpu series and phases arrive as frames; util lines and phase bands are painted from them', async () => {
    const w = await openPage(browser);
    const { seen, refused } = await framesOnly(w.page);
    await w.page.goto(`${served.url}#/timeline`);
    await w.page.waitForSelector('[data-testid=lanes]');
    await w.page.waitForTimeout(800);
    assert.deepEqual(refused, [], 'no JSON request for a series answer');
    for (const path of ['/api/timeline/gpu', '/api/timeline/phases']) assert.ok(seen.some((s) => s.path === path), `the timeline asked for ${path}`);
    for (const f of seen) {
      assert.equal(f.accept, COLUMNS, f.path);
      assert.equal(f.type, COLUMNS, f.path);
    }
    const px = await canvasPixels(w.page, '[data-testid=lanes]', [UTIL_COLOR, ROLLOUT_PHASE, ACTOR_TRAIN_PHASE]);
    assert.ok(px.matches[UTIL_COLOR]! > 200, `util line painted from the frame (${px.matches[UTIL_COLOR]} px)`);
    assert.ok(px.matches[ROLLOUT_PHASE]! > 500, `rollout phase bands painted from the frame (${px.matches[ROLLOUT_PHASE]} px)`);
    assert.ok(px.matches[ACTOR_TRAIN_PHASE]! > 500, `actor_train phase bands painted from the frame (${px.matches[ACTOR_TRAIN_PHASE]} px)`);
    assert.deepEqual(w.problems(), []);
    await screenshot(w.page, 'timeline-columns');
    await w.page.close();
  });

  it('metrics: every engine (sglang) chart comes from an engine_series frame and draws its lines', async () => {
    const w = await openPage(browser);
    const { seen, refused } = await framesOnly(w.page);
    await w.page.goto(`${served.url}#/?cat=sglang`);
    await w.page.waitForFunction(() => document.querySelectorAll('.chart-panel .uplot canvas').length > 0);
    // the charts are made again once the run list arrives: wait for the engine panels themselves
    await w.page.waitForFunction(() => document.querySelectorAll('.chart-panel[data-metric^="sglang"] .uplot canvas').length > 0);
    await w.page.waitForTimeout(500);
    assert.deepEqual(refused, [], 'no JSON request for an engine series');
    const charts = await w.page.$$eval('.chart-panel[data-metric]', (els) => els.map((e) => e.getAttribute('data-metric')!));
    assert.ok(charts.length > 0 && charts.every((m) => m.startsWith('sglang')), `engine charts shown: ${charts.join(', ')}`);
    const asked = seen.filter((s) => s.path === '/api/timeline/engine_series');
    assert.ok(asked.length >= charts.length, `one frame per engine chart (${asked.length} for ${charts.length})`);
    for (const f of asked) assert.equal(f.type, COLUMNS);
    // Every chart has values and paints coloured lines (the canvas is more than grid and axes).
    const empty = await w.page.$$eval('.chart-panel .chart-empty', (els) => els.length);
    assert.equal(empty, 0, 'no engine chart is empty');
    const first = await canvasPixels(w.page, '.chart-panel .uplot canvas', ['#4ea1ff', '#ff8a3d', '#2fcf8f']);
    const coloured = Object.values(first.matches).reduce((a, b) => a + b, 0);
    assert.ok(coloured > 150, `engine lines painted from the frame (${coloured} px)`);
    assert.deepEqual(w.problems(), []);
    await screenshot(w.page, 'metrics-engine-columns');
    await w.page.close();
  });
});
