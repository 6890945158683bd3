// The web app in headless Chromium against `rlsight serve` on demo data: every view shows real content, interactions work.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { appendDemoStep } from '../../src/demo/index.ts';
import { ageTree, copyFixtureRun, type RunCopy } from '../support/fixtures.ts';
import { type BrowserCanvas, canvasPixels, hasChromium, hashParams, hashPath, openPage, screenshot, type Served, serveDemo, spawnServer, startBrowserSuite, stopBrowserSuite, type Watched } from './harness.ts';

// Code passed to page.evaluate runs in the browser; these names exist there, not in Node.
declare const document: any;
declare const location: { hash: string };

const PHASE_ROLLOUT = '#d55816';
const PHASE_ACTOR_TRAIN = '#2a78d6';

describe('web app (headless Chromium)', { skip: hasChromium ? false : 'Debian chromium is not installed at /usr/bin/chromium' }, () => {
  let served: Served;
  let browser: Browser;
  let meta: { rollout_ids: { train: number[]; eval: number[] }; metric_keys: string[] };

  before(async () => {
    ({ served, browser } = await startBrowserSuite(() => serveDemo({ steps: 4 })));
    meta = (await (await fetch(`${served.url}api/meta`)).json()) as typeof meta;
  });
  after(() => stopBrowserSuite({ served, browser }));

  async function open(hash: string, w?: Watched): Promise<Watched> {
    const watched = w ?? (await openPage(browser));
    await watched.page.goto(`${served.url}${hash}`);
    return watched;
  }
  function assertClean(w: Watched) {
    assert.deepEqual(w.problems(), [], 'no console errors, page errors or failed requests');
  }
  const waitHash = (page: Page, re: RegExp) => page.waitForFunction((src) => new RegExp(src).test(location.hash), re.source, { timeout: 15_000 });

  it('metrics: charts draw real series, hover shows values, drag zooms all charts, zoom survives reload', async () => {
    const w = await open('#/?cat=perf');
    const { page } = w;
    await page.waitForSelector('.chart-panel .uplot canvas');
    await page.waitForTimeout(300);
    const panels = await page.$$eval('.chart-panel[data-metric]', (els) => els.map((e) => e.getAttribute('data-metric')));
    assert.ok(panels.length >= 3, `perf charts shown: ${panels}`);
    assert.ok(panels.every((k) => k!.startsWith('perf/')));
    const px = await canvasPixels(page, '.chart-panel .uplot canvas', ['#4ea1ff']);
    assert.ok(px.matches['#4ea1ff']! > 50, `series line drawn in blue (${px.matches['#4ea1ff']} px)`);
    // Hover: the legend shows the value at the cursor in every chart (synced cursors).
    const over = await page.$('.chart-panel .u-over');
    const box = (await over!.boundingBox())!;
    await page.mouse.move(box.x + box.width * 0.5, box.y + box.height * 0.5);
    await page.waitForTimeout(150);
    const values = await page.$$eval('.chart-panel .u-legend .u-series:nth-child(2) .u-value', (els) => els.map((e) => e.textContent));
    assert.ok(values.length >= 3 && values.every((v) => v && v !== '—' && /\d/.test(v)), `values at cursor: ${values}`);
    await screenshot(page, 'metrics-perf');
    // Drag to zoom: the x window lands in the URL and applies to every chart.
    await page.mouse.move(box.x + box.width * 0.15, box.y + box.height * 0.5);
    await page.mouse.down();
    await page.mouse.move(box.x + box.width * 0.6, box.y + box.height * 0.5, { steps: 6 });
    await page.mouse.up();
    await waitHash(page, /zx=/);
    const zx = hashParams(page).get('zx')!;
    const [z0, z1] = zx.split(',').map(Number);
    assert.ok(z1! > z0!, `zoom window ${zx}`);
    await page.reload();
    await page.waitForSelector('.chart-panel .uplot canvas');
    assert.equal(hashParams(page).get('zx'), zx, 'zoom restored from the URL');
    assert.ok(await page.isVisible('text=reset zoom'));
    // Double-click resets the zoom everywhere.
    const over2 = (await page.locator('.chart-panel .u-over').first().boundingBox())!; // a locator waits out a redraw
    await page.mouse.dblclick(over2.x + over2.width / 2, over2.y + over2.height / 2);
    await page.waitForFunction(() => !location.hash.includes('zx='));
    // Resizing the window redraws at the new size (no stretched bitmaps).
    const wBefore = await page.$eval('.chart-panel .uplot canvas', (c) => (c as BrowserCanvas).width);
    await page.setViewportSize({ width: 1280, height: 900 });
    await page.waitForFunction((w) => (document.querySelector('.chart-panel .uplot canvas') as BrowserCanvas).width < w, wBefore);
    const resized = await canvasPixels(page, '.chart-panel .uplot canvas', ['#4ea1ff']);
    assert.ok(resized.matches['#4ea1ff']! > 50, 'still drawn after resize');
    await page.setViewportSize({ width: 1440, height: 900 });
    // The key filter (`/` focuses the header's run-wide search instead); typing filters across categories and reaches the URL.
    await page.click('input[data-search]');
    await page.keyboard.type('reward');
    await waitHash(page, /q=reward/);
    await page.waitForFunction(() => {
      const ks = [...document.querySelectorAll('.chart-panel[data-metric]')].map((e: any) => e.getAttribute('data-metric'));
      return ks.length > 0 && ks.every((k: string) => k.includes('reward'));
    });
    const found = await page.$$eval('.chart-panel[data-metric]', (els) => els.map((e) => e.getAttribute('data-metric')));
    assert.ok(found.length > 0 && found.every((k) => k!.includes('reward')), `search results ${found}`);
    await screenshot(page, 'metrics-search');
    assertClean(w);
    await page.close();
  });

  it('metrics: the sglang category plots one line per engine', async () => {
    const w = await open('#/?cat=sglang');
    await w.page.waitForSelector('.chart-panel .uplot canvas');
    // the charts are made again when the run list arrives, and lines come with their engine series: wait for them
    await w.page.waitForFunction(() => document.querySelectorAll('.engine-legend label').length >= 2).catch(() => {});
    const engines = await w.page.$$eval('.engine-legend label', (els) => els.length);
    assert.ok(engines >= 2, 'engine legend lists engines');
    let px = await canvasPixels(w.page, '.chart-panel .uplot canvas');
    for (let i = 0; i < 40 && px.colours < 4; i++) {
      await w.page.waitForTimeout(250);
      px = await canvasPixels(w.page, '.chart-panel .uplot canvas');
    }
    assert.ok(px.colours >= 4, `multi-colour engine lines (${px.colours} colours)`);
    await screenshot(w.page, 'metrics-sglang');
    assertClean(w);
    await w.page.close();
  });

  it('timeline: lanes paint phases and util; keyboard zoom, overlay change, lane grammar valid and invalid, quick pick', async () => {
    const w = await open('#/timeline');
    const { page } = w;
    await page.waitForSelector('[data-testid=lanes]');
    await page.waitForTimeout(400);
    const px = await canvasPixels(page, '[data-testid=lanes]', [PHASE_ROLLOUT, PHASE_ACTOR_TRAIN]);
    assert.ok(px.matches[PHASE_ROLLOUT]! > 500, `rollout phase painted (${px.matches[PHASE_ROLLOUT]} px)`);
    assert.ok(px.matches[PHASE_ACTOR_TRAIN]! > 200, `actor_train phase painted (${px.matches[PHASE_ACTOR_TRAIN]} px)`);
    const legend = await page.textContent('[data-testid=legend]');
    assert.match(legend!, /rollout/);
    assert.match(legend!, /actor_train/);
    assert.match(legend!, /GPU util/);
    assert.ok(await page.isVisible('[data-testid=advisory]'));
    await screenshot(page, 'timeline');
    const heightAll = (await page.$eval('[data-testid=lanes]', (c) => (c as BrowserCanvas).getBoundingClientRect().height));

    // Hover names the lane, phase and values.
    const box = (await page.locator('[data-testid=lanes]').first().boundingBox())!;
    await page.mouse.move(box.x + box.width * 0.5, box.y + 50);
    await page.waitForSelector('[data-testid=tooltip]');
    assert.match((await page.textContent('[data-testid=tooltip]'))!, /g0 .*\n?[\s\S]*phase: [\s\S]*util: \d+%/);

    // W zooms in (the window reaches the URL), Esc resets.
    const before = await page.textContent('[data-testid=window]');
    await page.mouse.move(box.x + 5, box.y - 40);
    await page.keyboard.press('w');
    await waitHash(page, /t0=.*t1=/);
    const after = await page.textContent('[data-testid=window]');
    assert.notEqual(after, before, 'window text follows the zoom');
    await page.keyboard.press('d');
    await page.waitForTimeout(200);
    await page.keyboard.press('Escape');
    await page.waitForFunction(() => !location.hash.includes('t0='));

    // Overlay: switching the series updates URL and legend.
    await page.selectOption('[data-testid=overlay]', 'sglang_gen_throughput');
    await waitHash(page, /overlay=sglang_gen_throughput/);
    await page.waitForFunction(() => document.querySelector('[data-testid=legend]')?.textContent?.includes('sglang_gen_throughput'));
    await screenshot(page, 'timeline-overlay-gen-throughput');

    // A valid grammar reaches the URL and narrows the lanes.
    await page.fill('[data-testid=lane-grammar]', 'g:0-1');
    await page.press('[data-testid=lane-grammar]', 'Enter');
    await waitHash(page, /lanes=g%3A0-1/);
    await page.waitForFunction((h) => (document.querySelector('[data-testid=lanes]') as BrowserCanvas)?.getBoundingClientRect().height < h, heightAll);
    assert.ok(await page.isVisible('.chip:has-text("g:0-1")'));
    await screenshot(page, 'timeline-lanes-g0-1');
    // the Perfetto download holds the lanes on screen, not the whole fleet
    const perfetto = new URL((await page.getAttribute('[data-testid=perfetto-download]', 'href'))!, page.url());
    assert.equal(perfetto.searchParams.get('lanes'), 'g:0-1');
    const exported = (await (await fetch(perfetto)).json()) as { traceEvents: { ph: string; name: string }[] };
    assert.deepEqual([...new Set(exported.traceEvents.filter((e) => e.ph === 'C' && e.name.startsWith('gpu ')).map((e) => e.name))].sort(), ['gpu 0 util %', 'gpu 1 util %']);

    // An invalid term shows the server's message and never reaches the URL.
    w.expect(/^http 400: \/api\/rlsight\/lanes\?lanes=g%3A0-1%2C\+bogus%3A7/);
    const urlBefore = page.url();
    await page.fill('[data-testid=lane-grammar]', 'bogus:7');
    await page.press('[data-testid=lane-grammar]', 'Enter');
    await page.waitForSelector('[data-testid=lane-error]');
    assert.match((await page.textContent('[data-testid=lane-error]'))!, /bogus/);
    assert.equal(page.url(), urlBefore, 'the bad grammar is not in the URL');
    assert.equal(await page.inputValue('[data-testid=lane-grammar]'), 'bogus:7', 'typed text kept for fixing');
    await screenshot(page, 'timeline-lanes-invalid');

    // Quick pick: lowest util lanes replace the selection as editable gpu: terms.
    await page.click('button:has-text("lowest util")');
    await waitHash(page, /lanes=gpu%3A/);
    assert.match((await page.textContent('[data-testid=pick-result]'))!, /lowest util, worst first: g\d+ /);
    assertClean(w);
    await page.close();
  });

  it('timeline: a bad grammar in the address is reported with a way out, not a dead end', async () => {
    const w = await open('#/timeline?lanes=bananas');
    w.expect(/^http 400: \/api\/(timeline\/phases|timeline\/gpu|rlsight\/lanes)\?.*lanes=bananas/);
    await w.page.waitForSelector('[data-testid=lane-error]');
    assert.match((await w.page.textContent('[data-testid=lane-error]'))!, /bananas/);
    await w.page.click('text=reset selection');
    await w.page.waitForSelector('[data-testid=lanes]');
    assert.ok(!w.page.url().includes('lanes='));
    assertClean(w);
    await w.page.close();
  });

  it('timeline: an advisory links to the window and lanes it concerns; the click sets both in the URL and on screen', async () => {
    // The demo's dp-imbalance warning concerns one engine over the span of its per-rank series.
    const located = (await (await fetch(`${served.url}api/rlsight/advisory`)).json()) as {
      advisories: { message: string; window: { t0: number; t1: number } | null; lanes: string | null }[];
    };
    const dp = located.advisories.find((a) => a.message.includes('dp ranks imbalanced'));
    assert.ok(dp?.window && typeof dp.lanes === 'string' && dp.lanes.startsWith('engine:'), `a located dp-imbalance advisory: ${JSON.stringify(located.advisories)}`);
    const w = await open('#/timeline');
    const { page } = w;
    const link = page.locator('[data-testid=advisory] li', { hasText: 'dp ranks imbalanced' }).locator('[data-testid=advisory-link]');
    await link.waitFor();
    const label = (await link.textContent())!;
    assert.ok(label.includes(dp.lanes), `the link names its lanes: ${label}`);
    await link.click();
    await waitHash(page, /t0=.*t1=/);
    assert.equal(hashPath(page), '#/timeline');
    const q = hashParams(page);
    assert.ok(Math.abs(Number(q.get('t0')) - dp.window.t0) < 1e-3 && Math.abs(Number(q.get('t1')) - dp.window.t1) < 1e-3, `window in the URL: ${q}`);
    assert.equal(q.get('lanes'), dp.lanes);
    // On screen: the window readout is the link's span, and the lane selection is that engine.
    const span = label.replace(/^↦\s*/, '').split(' · ')[0]!.trim();
    await page.waitForFunction((s) => document.querySelector('[data-testid=window]')?.textContent?.startsWith(s), span, { timeout: 15_000 });
    await page.waitForSelector(`.lane-selection .chip[title="${dp.lanes}"]`);
    assert.match((await page.textContent('[data-testid=advisory] header'))!, /engine and tuning: this window · the rest: whole run/);
    await screenshot(page, 'timeline-advisory-link');
    assertClean(w);
    await page.close();
  });

  it('timeline: the fleet overview draws composition and band when forced', async () => {
    const forced = await serveDemo({ steps: 2, extraArgs: ['--use-utilization-overview'] });
    try {
      const w = await openPage(browser);
      await w.page.goto(`${forced.url}#/timeline`);
      await w.page.waitForSelector('[data-testid=fleet] canvas');
      await w.page.waitForTimeout(300);
      const px = await canvasPixels(w.page, '[data-testid=fleet] canvas', [PHASE_ROLLOUT]);
      assert.ok(px.matches[PHASE_ROLLOUT]! > 300, `rollout share painted (${px.matches[PHASE_ROLLOUT]} px)`);
      assert.match((await w.page.textContent('[data-testid=fleet]'))!, /Fleet overview · \d+ GPUs/);
      await screenshot(w.page, 'timeline-fleet');
      assertClean(w);
      await w.page.close();
    } finally {
      await forced.stop();
    }
  });

  it('rollouts: a step\'s samples show from its preview while the train columns are still being joined', async () => {
    const last = meta.rollout_ids.train.at(-1)!;
    const w = await openPage(browser);
    const { page } = w;
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    await page.route('**/api/rollout/*/summary*', async (route) => {
      await held;
      await route.continue();
    });
    // the preview a cold big step gives while its rank files are joined: rollout columns, train columns empty
    await page.route('**/api/rlsight/rollout/*/preview*', async (route) => {
      const res = await route.fetch();
      const body = (await res.json()) as { rows: Record<string, unknown>[] };
      for (const r of body.rows) for (const c of ['raw_reward', 'normalized_reward', 'mean_entropy', 'max_entropy', 'adv_mean', 'adv_std', 'mean_abs_lp_diff', 'max_abs_lp_diff', 'mean_imp_ratio']) r[c] = null;
      await route.fulfill({ response: res, json: { ...body, train_pending: true } });
    });
    await page.goto(`${served.url}#/rollout/${last}`);
    await page.waitForSelector('[data-testid=samples-table] tbody tr td');
    const px = await canvasPixels(page, '[data-testid=scatter]');
    assert.ok(px.colours > 3 && px.painted > 500, 'the preview\'s samples are drawn (rollout reward on y)');
    assert.equal(await page.locator('.loading', { hasText: 'train columns' }).count(), 1, 'the pending train side is said');
    const headers = async () => (await page.$$eval('[data-testid=samples-table] th', (ths) => ths.map((t) => t.textContent ?? ''))).join(' ');
    assert.doesNotMatch(await headers(), /entropy/, 'no empty train column shown');
    release();
    await page.waitForSelector('.loading:has-text("train columns")', { state: 'detached' });
    await page.waitForFunction(() => [...document.querySelectorAll('[data-testid=samples-table] th')].some((t) => /entropy/.test(t.textContent ?? '')));
    // A step already read: its preview is its summary, and the summary is not asked (nor sent) a second time.
    await page.unrouteAll();
    const asked: string[] = [];
    page.on('request', (r) => asked.push(new URL(r.url()).pathname));
    await page.goto(`${served.url}#/rollout/${last - 1}`);
    await page.waitForSelector('[data-testid=samples-table] tbody tr td');
    await page.waitForFunction(() => [...document.querySelectorAll('[data-testid=samples-table] th')].some((t) => /entropy/.test(t.textContent ?? '')));
    await page.reload();
    await page.waitForFunction(() => [...document.querySelectorAll('[data-testid=samples-table] th')].some((t) => /entropy/.test(t.textContent ?? '')));
    await page.waitForTimeout(300);
    const reloaded = asked.slice(asked.lastIndexOf('/') >= 0 ? asked.lastIndexOf('/') : 0);
    assert.ok(reloaded.some((p) => p.endsWith(`/rlsight/rollout/${last - 1}/preview`)), reloaded.join(' '));
    assert.ok(!reloaded.some((p) => p.endsWith(`/rollout/${last - 1}/summary`)), `no summary asked beside a complete preview: ${reloaded.join(' ')}`);
    assert.deepEqual(w.problems(), []);
  });

  it("rollouts: a step's first samples show while the rest of its dump is read, then all of them", async () => {
    const last = meta.rollout_ids.train.at(-1)!;
    const w = await openPage(browser);
    const { page } = w;
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    // the answer a cold big step's first samples give: its first groups, the rest still being decoded
    await page.route('**/api/rlsight/rollout/*/preview*', async (route) => {
      const first = new URL(route.request().url()).searchParams.get('first') === 'true';
      if (!first) await held;
      const res = await route.fetch();
      const body = (await res.json()) as { rows: Record<string, unknown>[] };
      if (!first) return route.fulfill({ response: res, json: body });
      await route.fulfill({ response: res, json: { ...body, rows: body.rows.slice(0, 8), train_pending: true, first_samples: true } });
    });
    await page.goto(`${served.url}#/rollout/${last}`);
    await page.waitForSelector('.loading:has-text("rest of step")');
    assert.equal(await page.locator('[data-testid=samples-table] tbody tr').count(), 8, 'the first samples are listed');
    assert.match((await page.locator('nav.tabs a').first().textContent()) ?? '', /Samples \(first 8\)/);
    release();
    await page.waitForSelector('.loading:has-text("rest of step")', { state: 'detached' });
    await page.waitForFunction(() => !/first/.test(document.querySelector('nav.tabs a')?.textContent ?? ''));
    assert.ok((await page.locator('[data-testid=samples-table] tbody tr').count()) > 8, 'then all of them');
    assert.deepEqual(w.problems(), []);
  });

  it('rollouts: summary, scatter and table of real values; step change; groups tab; open a sample', async () => {
    const ids = meta.rollout_ids.train;
    const last = ids.at(-1)!;
    const w = await open(`#/rollout/${last}`);
    const { page } = w;
    await page.waitForSelector('[data-testid=samples-table] tbody tr td');
    await page.waitForSelector('[data-testid=dump-summary]');
    const summary = await page.textContent('[data-testid=dump-summary]');
    assert.match(summary!, /\d\.\d{3}/, 'dump/* values shown');
    const firstIdx = Number(await page.textContent('[data-testid=samples-table] tbody tr td'));
    assert.ok(Number.isInteger(firstIdx));
    const rows = await page.$$eval('[data-testid=samples-table] tbody tr:not([aria-hidden])', (r) => r.length);
    assert.ok(rows > 10, `rows rendered (${rows})`);
    const px = await canvasPixels(page, '[data-testid=scatter]');
    assert.ok(px.colours > 5 && px.painted > 2000, 'scatter points drawn');
    await screenshot(page, 'rollouts');

    // Sorting by a header: descending first, in the URL.
    await page.click('[data-testid=samples-table] th:has-text("response")');
    await waitHash(page, /sort=response_length&desc=1/);
    const lens = await page.$$eval('[data-testid=samples-table] tbody tr:not([aria-hidden])', (trs) =>
      trs.slice(0, 5).map((tr) => {
        const ths = [...document.querySelectorAll('[data-testid=samples-table] th')].map((t) => t.textContent);
        const i = ths.findIndex((t) => t?.startsWith('response'));
        return Number(tr.children[i]!.textContent);
      }),
    );
    assert.ok(lens.length === 5 && lens.every(Number.isFinite), `response lengths read: ${lens}`);
    assert.deepEqual(lens, [...lens].sort((a, b) => b - a), `sorted descending: ${lens}`);

    // Step change with the previous button (and `k`).
    await page.click('button[title^="previous step"]');
    await waitHash(page, new RegExp(`^#/rollout/${ids.at(-2)}`));
    await page.waitForFunction((n) => Number(document.querySelector('[data-testid=samples-table] tbody tr td')?.textContent) !== n, firstIdx);
    await page.keyboard.press('j');
    await waitHash(page, new RegExp(`^#/rollout/${last}`));

    // Groups tab, with zero-std groups marked.
    await page.click('.tabs a:has-text("Groups")');
    await waitHash(page, /tab=groups/);
    await page.waitForSelector('[data-testid=groups-table] tbody tr td');
    const zero = await page.$$eval('[data-testid=groups-table] tr.flag', (r) => r.length);
    const header = await page.textContent('.tabs a:has-text("Groups")');
    const announced = Number(/(\d+) zero-std/.exec(header!)![1]);
    assert.ok(announced > 0, 'the demo has zero-std groups');
    assert.equal(zero, announced, 'every zero-std group is marked');
    await screenshot(page, 'rollouts-groups');
    // Reload restores the same screen from the URL.
    const url = page.url();
    await page.reload();
    await page.waitForSelector('[data-testid=groups-table] tbody tr td');
    assert.equal(page.url(), url);
    assert.equal(await page.getAttribute('.tabs a:has-text("Groups")', 'class'), 'active');
    // Back to samples and open one by clicking its row.
    await page.goBack();
    await page.waitForSelector('[data-testid=samples-table] tbody tr td');
    const idx = await page.textContent('[data-testid=samples-table] tbody tr td');
    await page.click('[data-testid=samples-table] tbody tr.clickable');
    await waitHash(page, new RegExp(`/sample/${idx}`));
    await page.waitForSelector('[data-testid=sample-title]');
    assert.equal(await page.textContent('[data-testid=sample-title]'), `sample ${idx}`);

    // A group picked in the Groups tab: its samples alone in the anatomy, the scatter and the table, said at the top.
    await page.goto(url);
    await page.waitForSelector('[data-testid=groups-table] tbody tr td');
    await page.click('[data-testid=groups-table] tbody tr.clickable');
    await waitHash(page, /group=/);
    const banner = page.locator('[data-testid=group-filter]');
    await banner.waitFor();
    const n = Number(/: (\d+) samples? in/.exec((await banner.textContent())!)![1]);
    assert.ok(n >= 2, `a group of ${n}`);
    const top = await banner.boundingBox();
    assert.ok(top !== null && top.y + top.height < 900, 'the choice shows on the first screen');
    await page.waitForSelector('[data-testid=samples-table] tbody tr td');
    assert.equal(await page.$$eval('[data-testid=samples-table] tbody tr.clickable', (r) => r.length), n);
    const anatomy = await page.$$eval('h3', (hs) => hs.map((h) => h.textContent ?? '').find((t) => t.startsWith('Batch anatomy')) ?? null);
    if (anatomy !== null) assert.equal(anatomy, `Batch anatomy · ${n} samples`);
    await screenshot(page, 'rollouts-group-chosen');
    await banner.locator('button').click();
    await page.waitForSelector('[data-testid=group-filter]', { state: 'detached' });
    assertClean(w);
    await page.close();
  });

  it('rollouts: the step slider loads the step chosen with its keys or a click on its track, not only a drag', async () => {
    const ids = ((await (await fetch(`${served.url}api/meta`)).json()) as typeof meta).rollout_ids.train;
    assert.ok(ids.length >= 3, `steps ${ids}`);
    const w = await open(`#/rollout/${ids[1]}`);
    const { page } = w;
    await page.waitForSelector('[data-testid=samples-table] tbody tr td');
    /** The step the view shows: the URL's, the step box's and the bar's "n / N". */
    const shows = async (id: number) => {
      await waitHash(page, new RegExp(`^#/rollout/${id}(\\?|$)`));
      await page.waitForFunction(
        ({ id, n, of }) => (document.querySelector('[data-testid=step-input]') as any)?.value === String(id) && document.querySelector('.step-bar')?.textContent?.includes(`${n} / ${of}`),
        { id, n: ids.indexOf(id) + 1, of: ids.length },
      );
      await page.waitForSelector('[data-testid=samples-table] tbody tr td');
    };
    const slider = page.locator('[data-testid=step-slider]');
    await slider.focus();
    await page.keyboard.press('End');
    await shows(ids.at(-1)!);
    await page.keyboard.press('ArrowLeft');
    await shows(ids.at(-2)!);
    await page.keyboard.press('Home');
    await shows(ids[0]!);
    // A click on the track, near its right end.
    const box = (await slider.boundingBox())!;
    await page.mouse.click(box.x + box.width - 3, box.y + box.height / 2);
    await shows(ids.at(-1)!);
    // A drag of the thumb still opens the step it is let go at.
    await page.keyboard.press('Home');
    await shows(ids[0]!);
    await page.mouse.move(box.x + 3, box.y + box.height / 2);
    await page.mouse.down();
    await page.mouse.move(box.x + box.width - 3, box.y + box.height / 2, { steps: 8 });
    await page.mouse.up();
    await shows(ids.at(-1)!);
    assertClean(w);
    await page.close();
  });

  it('sample: conversation with roles and tool calls; tokens coloured, hover values, chart linked; reload restores', async () => {
    const last = meta.rollout_ids.train.at(-1)!;
    const w = await open(`#/rollout/${last}/sample`);
    const { page } = w;
    await page.waitForSelector('[data-testid=sample-title]');
    await page.waitForSelector('[data-testid=conversation]');
    const roles = await page.$$eval('.msg .role', (els) => els.map((e) => e.textContent));
    assert.ok(roles.includes('user') && roles.includes('assistant'), `roles ${roles}`);
    assert.ok((await page.$$('.tool-call')).length > 0, 'tool calls shown as structured blocks');
    assert.ok((await page.$$('details.thinking')).length > 0, 'thinking blocks collapsible');
    await screenshot(page, 'sample-conversation', true);

    await page.click('.tabs a:has-text("Tokens")');
    await waitHash(page, /tab=tokens/);
    await page.waitForSelector('[data-testid=token-text] .tok');
    const coloured = await page.$$eval('[data-testid=token-text] .tok', (els) => els.filter((e) => (e as { style: { background: string } }).style.background).length);
    const prompt = await page.$$eval('[data-testid=token-text] .tok.prompt', (els) => els.length);
    assert.ok(coloured > 10, `tokens coloured (${coloured})`);
    assert.ok(prompt > 0, 'prompt tokens plain');
    assert.match((await page.textContent('[data-testid=token-range]'))!, /tokens \d+–\d+ of \d+ \(prompt \d+\)/);
    await page.waitForSelector('[data-testid=tokens] .uplot canvas');
    await page.waitForTimeout(200);
    const px = await canvasPixels(page, '[data-testid=tokens] .uplot canvas', ['#ff8a3d']);
    assert.ok(px.matches['#ff8a3d']! > 30, 'per-token chart drawn');
    const tok = await page.$('[data-testid=token-text] .tok:not(.prompt):not(.masked)');
    await tok!.hover();
    await page.waitForSelector('[data-testid=tooltip]');
    const tip = (await page.textContent('[data-testid=tooltip]'))!;
    assert.match(tip, /#\d+\s+id=\d+/);
    assert.match(tip, /lp_diff\s+-?\d/);
    const posVal = await page.$eval('[data-testid=tokens] .u-legend .u-series:first-child .u-value', (e) => e.textContent);
    assert.equal(posVal, await tok!.getAttribute('data-pos'), 'the chart cursor follows the hovered token');
    await page.selectOption('[data-testid=color-by]', 'entropy');
    await waitHash(page, /color=entropy/);
    await screenshot(page, 'sample-tokens');
    const url = page.url();
    await page.reload();
    await page.waitForSelector('[data-testid=token-text] .tok');
    assert.equal(page.url(), url);
    assert.equal(await page.inputValue('[data-testid=color-by]'), 'entropy');
    assertClean(w);
    await page.close();
  });

  it('sample: a truncated sample says so once in its header', async () => {
    const last = meta.rollout_ids.train.at(-1)!;
    const summary = (await (await fetch(`${served.url}api/rollout/${last}/summary`)).json()) as { rows: { sample_index: number; status: string; truncated: boolean | null }[] };
    const cut = summary.rows.find((r) => r.status === 'truncated' && r.truncated === true);
    assert.ok(cut, 'the demo step has a sample truncated by its rollout and flagged by the trainer');
    const w = await open(`#/rollout/${last}/sample/${cut.sample_index}`);
    const { page } = w;
    await page.waitForSelector('.sample-head .chip:has-text("reward")');
    const chips = await page.$$eval('.sample-head .chip', (els) => els.map((e) => e.textContent?.trim()));
    assert.deepEqual(chips.filter((c) => c === 'truncated'), ['truncated'], `chips: ${chips}`);
    assertClean(w);
    await page.close();
  });

  it('errors are readable and in place: unknown step, unknown sample, non-numeric id', async () => {
    const w = await open('#/rollout/999');
    await w.page.waitForSelector('text=is not recorded in this run');
    await screenshot(w.page, 'error-unknown-step');
    await w.page.goto(`${served.url}#/rollout/abc`);
    await w.page.waitForSelector('text=is not a step number');
    await w.page.goto(`${served.url}#/rollout/${meta.rollout_ids.train[0]}/sample/999999`);
    await w.page.waitForSelector('text=Sample indices are global');
    const body = (await w.page.textContent('main'))!;
    assert.doesNotMatch(body, /\[object Object\]|\/tmp\/|rlsight-e2e/);
    assertClean(w);
    await w.page.close();
  });

  it('every view is reachable from <nav> by ordinary links', async () => {
    const w = await open('#/');
    const links = await w.page.$$eval('nav[aria-label=views] a', (as) => as.map((a) => [a.textContent, a.getAttribute('href')]));
    assert.deepEqual(links.map((l) => l[0]), ['Metrics', 'Compute Utilization', 'Trace', 'Rollouts', 'Sample', 'Health', 'Diff', 'Runs']);
    for (const [name] of links) {
      await w.page.click(`nav[aria-label=views] a:has-text("${name}")`);
      await w.page.waitForSelector(`nav[aria-label=views] a.active:has-text("${name}")`);
    }
    for (const name of ['Rollouts', 'Sample']) {
      await w.page.click(`nav[aria-label=views] a:has-text("${name}")`);
      await w.page.waitForSelector(`nav[aria-label=views] a.active:has-text("${name}")`);
    }
    await w.page.waitForSelector('[data-testid=sample-title]');
    await w.page.goBack();
    await w.page.waitForSelector('nav[aria-label=views] a.active:has-text("Rollouts")');
    assertClean(w);
    await w.page.close();
  });

  it('follow mode: a step appended while the page is open appears without a reload', async () => {
    const ids = meta.rollout_ids.train;
    const w = await open(`#/rollout/${ids.at(-1)}`);
    const { page } = w;
    await page.waitForSelector('[data-testid=samples-table] tbody tr td');
    await page.waitForSelector('.badge.live'); // the event stream connects after the first answers
    await page.fill('[data-testid=step-input]', '12');
    // A second page on the timeline: its window follows the data edge, and typed lane text survives refreshes.
    const tl = await open('#/timeline');
    await tl.page.waitForSelector('[data-testid=lanes]');
    const windowBefore = await tl.page.textContent('[data-testid=window]');
    await tl.page.fill('[data-testid=lane-grammar]', 'g:0-');
    const appended = await appendDemoStep(served.runDir);
    await tl.page.waitForFunction((w) => document.querySelector('[data-testid=window]')?.textContent !== w, windowBefore, { timeout: 30_000 });
    assert.equal(await tl.page.inputValue('[data-testid=lane-grammar]'), 'g:0-', 'typed lane text kept across live updates');
    await screenshot(tl.page, 'follow-timeline-extended');
    assertClean(tl);
    await tl.page.close();
    await page.waitForFunction(
      (n) => document.querySelector('.step-bar')?.textContent?.includes(`/ ${n}`),
      ids.length + 1,
      { timeout: 30_000 },
    );
    assert.equal(await page.inputValue('[data-testid=step-input]'), '12', 'live refresh keeps what the user is typing');
    await page.click('button[title^="next step"]');
    await page.waitForFunction((id) => location.hash.startsWith(`#/rollout/${id}`), appended.step);
    await page.waitForSelector('[data-testid=samples-table] tbody tr td');
    await screenshot(page, 'follow-new-step');
    assertClean(w);
    await page.close();
  });

  it('metrics: the first and last points sit inside the plot, not cut by its edges', async () => {
    const w = await open('#/?cat=perf');
    const { page } = w;
    await page.waitForSelector('.chart-panel .uplot canvas');
    await page.waitForTimeout(300);
    // Blue series pixels against the plot box (.u-over), in canvas pixels.
    const edges = await page.evaluate(() => {
      const root = document.querySelector('.chart-panel .uplot');
      const canvas = root.querySelector('canvas');
      const over = root.querySelector('.u-over').getBoundingClientRect();
      const box = canvas.getBoundingClientRect();
      const k = canvas.width / box.width;
      const { data } = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height);
      let lo = Infinity;
      let hi = -Infinity;
      for (let i = 0; i < data.length; i += 4) {
        if (data[i + 3] === 0 || Math.abs(data[i] - 0x4e) > 24 || Math.abs(data[i + 1] - 0xa1) > 24 || Math.abs(data[i + 2] - 0xff) > 24) continue;
        const x = (i / 4) % canvas.width;
        lo = Math.min(lo, x);
        hi = Math.max(hi, x);
      }
      return { lo, hi, plotLeft: (over.left - box.left) * k, plotRight: (over.right - box.left) * k, k };
    });
    assert.ok(edges.lo >= edges.plotLeft + 3 * edges.k, `first point clear of the left edge: ${JSON.stringify(edges)}`);
    assert.ok(edges.hi <= edges.plotRight - 3 * edges.k, `last point clear of the right edge: ${JSON.stringify(edges)}`);
    // The x axis still starts and ends at the data: hovering the plot's ends reads the first and last steps.
    const over = (await page.locator('.chart-panel .u-over').first().boundingBox())!;
    const xAt = async (fx: number) => {
      await page.mouse.move(over.x + over.width * fx, over.y + over.height / 2);
      await page.waitForTimeout(100);
      return page.$eval('.chart-panel .u-legend .u-series:first-child .u-value', (e) => e.textContent);
    };
    // Asked now: the follow test may have appended a step, whose metrics the server may read a follow tick
    // after its dump shows; the open page is told and redraws, so the right end is read until it shows it.
    const ids = ((await (await fetch(`${served.url}api/meta`)).json()) as typeof meta).rollout_ids.train;
    assert.equal(await xAt(0.001), String(ids[0]));
    let last = await xAt(0.999);
    for (const until = Date.now() + 15_000; last !== String(ids.at(-1)) && Date.now() < until; ) {
      await page.waitForTimeout(250);
      last = await xAt(0.999);
    }
    assert.equal(last, String(ids.at(-1)));
    await screenshot(page, 'metrics-edges');
    assertClean(w);
    await page.close();
  });

  it('timeline: a click on a request lifecycle row opens that sample; hover names sample, group, step and status', async () => {
    const w = await open('#/timeline');
    const { page } = w;
    await page.waitForSelector('[data-testid=lanes]');
    await page.waitForFunction(() => document.querySelector('[data-testid=legend]')?.textContent?.includes('request queue'));
    // Zoom to one step, so each request has its own row (a whole run folds them into density rows).
    await page.waitForSelector('[data-testid=minimap]');
    const mm = (await page.locator('[data-testid=minimap]').first().boundingBox())!;
    await page.mouse.click(mm.x + mm.width * 0.45, mm.y + 16 + 4 + 9);
    await waitHash(page, /t0=/);
    await page.waitForFunction(() => document.querySelector('.lane-canvas-wrap')?.getAttribute('data-request-density') === 'each', undefined, { timeout: 15_000 });
    await page.$eval('[data-testid=lanes]', (c) => (c as unknown as { scrollIntoView(o: unknown): void }).scrollIntoView({ block: 'end' }));
    await page.waitForTimeout(300);
    const box = (await page.locator('[data-testid=lanes]').first().boundingBox())!;
    // Aim at a drawn generating segment of the strip: only drawn segments react.
    const hit = await page.$eval('.lane-canvas-wrap', (wrap) => {
      const c = wrap.querySelector('canvas') as any;
      const top = Number(wrap.getAttribute('data-strip-top'));
      const h = Number(wrap.getAttribute('data-strip-height'));
      const k = c.width / c.getBoundingClientRect().width;
      const { data, width } = c.getContext('2d').getImageData(0, Math.round(top * k), c.width, Math.round(h * k));
      for (let i = 0; i < data.length; i += 4) {
        if (Math.abs(data[i] - 0x22) < 16 && Math.abs(data[i + 1] - 0xb8) < 16 && Math.abs(data[i + 2] - 0xcf) < 16) {
          const px = (i / 4) % width;
          const py = Math.floor(i / 4 / width);
          return { x: px / k, y: top + py / k + 0.5 };
        }
      }
      return null;
    });
    assert.ok(hit, 'a generating segment is drawn in the strip');
    const rows = Number(await page.getAttribute('.lane-canvas-wrap', 'data-request-rows'));
    assert.ok(rows > 10, `lifecycle rows (${rows})`);
    const x = box.x + hit.x;
    const y = box.y + hit.y;
    await page.mouse.move(x, y);
    await page.waitForFunction(() => /status: (?!…)/.test(document.querySelector('[data-testid=tooltip]')?.textContent ?? ''), undefined, { timeout: 15_000 });
    const tip = await page.innerText('[data-testid=tooltip]');
    const m = /sample (\d+) \(group (\d+)\)[\s\S]*step (\d+) · status: ([^\n]+)/.exec(tip);
    assert.ok(m, `tooltip names sample, group, step and status: ${tip}`);
    const [, sample, group, step, status] = m;
    // The server agrees: that step lists the sample, with that group and status.
    const traj = (await (await fetch(`${served.url}api/rollout/${step}/trajectories`)).json()) as { lanes: { sample_index: number; group_index: number; status: string | null }[] };
    const lane = traj.lanes.find((l) => l.sample_index === Number(sample));
    assert.ok(lane, `step ${step} lists sample ${sample}`);
    assert.equal(lane.group_index, Number(group));
    assert.equal(lane.status ?? 'unfinished', status);
    await screenshot(page, 'timeline-lifecycle-hover');
    await page.mouse.click(x, y);
    await waitHash(page, new RegExp(`^#/rollout/${step}/sample/${sample}(\\?|$)`));
    await page.waitForSelector('[data-testid=sample-title]');
    assert.equal(await page.textContent('[data-testid=sample-title]'), `sample ${sample}`);
    assert.equal(await page.$('[data-testid=tooltip]'), null, 'the timeline tooltip is gone with the timeline');
    await screenshot(page, 'timeline-lifecycle-opened-sample');
    await page.goBack();
    await page.waitForSelector('[data-testid=lanes]');
    assertClean(w);
    await page.close();
  });

  it('timeline: selected lanes without data in the window are drawn with a note, not dropped', async () => {
    const SILENT = { node: '10.0.1.3', gpu: 0 };
    const NO_GPU = { node: '10.0.1.2', gpu: 7 };
    // A lane the catalog lists but that never reported, and a lane whose GPU samples are gone (its phases remain).
    const prepare = (runDir: string) => {
      const catalogPath = join(runDir, 'dashboard', 'lane_catalog.json');
      const catalog = JSON.parse(readFileSync(catalogPath, 'utf8')) as { lanes: Record<string, unknown> };
      catalog.lanes[`${SILENT.node}:${SILENT.gpu}`] = { ranks: [], engine_addrs: [], roles: ['train'] };
      writeFileSync(catalogPath, JSON.stringify(catalog));
      const dir = join(runDir, 'dashboard', 'gpu_util');
      for (const f of readdirSync(dir)) {
        const kept = readFileSync(join(dir, f), 'utf8')
          .split('\n')
          .filter((line) => line && !(line.includes(`"node":"${NO_GPU.node}"`) && (JSON.parse(line) as { gpu: number }).gpu === NO_GPU.gpu));
        writeFileSync(join(dir, f), kept.map((l) => `${l}\n`).join(''));
      }
    };
    const trimmed = await serveDemo({ steps: 2, prepare });
    try {
      const topo = (await (await fetch(`${trimmed.url}api/timeline/topology`)).json()) as { lanes: { node: string; gpu: number; index: number }[] };
      const silent = topo.lanes.find((l) => l.node === SILENT.node && l.gpu === SILENT.gpu);
      const noGpu = topo.lanes.find((l) => l.node === NO_GPU.node && l.gpu === NO_GPU.gpu);
      assert.ok(silent && noGpu, 'both lanes are in the topology');
      const grammar = `node:${NO_GPU.node}, node:${SILENT.node}`;
      const gpu = (await (await fetch(`${trimmed.url}api/timeline/gpu?lanes=${encodeURIComponent(grammar)}`)).json()) as { lanes: Record<string, unknown> };
      assert.equal(Object.keys(gpu.lanes).length, 7, 'the server sends GPU series only for the lanes with samples');
      // Tall enough for all 17 lanes without scrolling.
      const w = await openPage(browser, 1440, 1400);
      const { page } = w;
      await page.goto(`${trimmed.url}#/timeline?lanes=${encodeURIComponent(grammar)}`);
      await page.waitForSelector('[data-testid=lanes]');
      await page.waitForFunction(() => document.querySelector('.lane-canvas-wrap')?.getAttribute('data-empty-lanes'), undefined, { timeout: 15_000 });
      assert.equal(await page.getAttribute('.lane-canvas-wrap', 'data-empty-lanes'), `g${silent.index}`);
      const height = await page.$eval('[data-testid=lanes]', (c) => (c as BrowserCanvas).getBoundingClientRect().height);
      // Rows: 8 lanes of node 2, then the silent lane (the canvas says where lanes start and how tall each is; util band 16–48 px in it).
      const top = Number(await page.getAttribute('.lane-canvas-wrap', 'data-lanes-top'));
      const laneH = Number(await page.getAttribute('.lane-canvas-wrap', 'data-lane-height'));
      const tipAt = async (row: number) => {
        const at = (await page.locator('[data-testid=lanes]').first().boundingBox())!;
        await page.mouse.move(at.x + at.width * 0.5, at.y + top + row * laneH + 30);
        await page.waitForSelector('[data-testid=tooltip]');
        return (await page.textContent('[data-testid=tooltip]'))!;
      };
      const none = await tipAt(8);
      assert.match(none, new RegExp(`^g${silent.index} `));
      assert.match(none, /no data in this window/);
      const partial = await tipAt(7);
      assert.match(partial, new RegExp(`^g${noGpu.index} `));
      assert.match(partial, /no GPU samples in this window/);
      assert.match(partial, /phase: (?!—)/, 'its phases still show');
      await screenshot(page, 'timeline-empty-lanes');
      // Every lane (no grammar): the silent lane is drawn too, with its note.
      await page.goto(`${trimmed.url}#/timeline`);
      await page.waitForFunction((h) => (document.querySelector('[data-testid=lanes]')?.getBoundingClientRect().height ?? 0) > h, height);
      assert.equal(await page.getAttribute('.lane-canvas-wrap', 'data-empty-lanes'), `g${silent.index}`);
      assert.match(await tipAt(silent.index), /no data in this window/);
      assertClean(w);
      await page.close();
    } finally {
      await trimmed.stop();
    }
  });
});

describe('a run whose step dump and tokenizer are damaged (headless Chromium)', { skip: hasChromium ? false : 'Debian chromium is not installed at /usr/bin/chromium' }, () => {
  let run: RunCopy;
  let served: Served;
  let browser: Browser;

  before(async () => {
    run = copyFixtureRun();
    const dump = join(run.dir, 'rollout_data', '1.pt');
    truncateSync(dump, Math.floor(statSync(dump).size / 2));
    const tokenizer = join(run.dir, 'tokenizer', 'tokenizer.json');
    const text = readFileSync(tokenizer, 'utf8');
    writeFileSync(tokenizer, text.slice(0, text.length >> 1));
    // Aged: a young file that fails to read is one still being written, not a damaged one.
    ageTree(run.dir);
    ({ served, browser } = await startBrowserSuite(() => spawnServer(dirname(run.dir), run.dir, ['serve', run.dir])));
  });
  after(async () => {
    await stopBrowserSuite({ served, browser });
    run?.dispose();
  });

  it('sample: a step whose dump cannot be read says so naming the file, and still shows the conversation, tokens and lifecycle', async () => {
    const idx = (JSON.parse(readFileSync(join(run.dir, 'trajectory', '1.jsonl'), 'utf8').split('\n')[0]!) as { sample_index: number }).sample_index;
    const w = await openPage(browser);
    const { page } = w;
    w.expect(/^http 422: \/api\/rollout\/1\/summary/);
    await page.goto(`${served.url}#/rollout/1/sample/${idx}`);
    const note = page.locator('.sample .error-note');
    await note.waitFor();
    assert.match((await note.textContent())!, /rollout_data\/1\.pt: truncated archive/);
    await page.waitForSelector('[data-testid=conversation] .msg');
    const roles = await page.$$eval('.msg .role', (els) => els.map((e) => e.textContent));
    assert.ok(roles.includes('user') && roles.includes('assistant'), `roles ${roles}`);
    assert.equal(await page.locator('text=No conversation recorded').count(), 0);
    // The header holds what the sample's own record says: its status and group.
    const head = (await page.textContent('.sample-head'))!;
    assert.match(head, /completed/);
    assert.match(head, /group 0/);
    assert.doesNotMatch(head, /group —/);
    await page.waitForSelector('[data-testid=lifecycle-legend]');
    await screenshot(page, 'sample-damaged-step');
    await page.click('.tabs a:has-text("Tokens")');
    await page.waitForSelector('[data-testid=token-text] .tok');
    assert.match((await note.textContent())!, /rollout_data\/1\.pt/);
    assert.deepEqual(w.problems(), []);
    await page.close();
  });

  it('sample tokens: a tokenizer that cannot be read is said so with the reason, not as a run without one', async () => {
    const rows = ((await (await fetch(`${served.url}api/rollout/0/summary`)).json()) as { rows: { sample_index: number }[] }).rows;
    const w = await openPage(browser);
    const { page } = w;
    await page.goto(`${served.url}#/rollout/0/sample/${rows[0]!.sample_index}?tab=tokens`);
    await page.waitForSelector('[data-testid=token-text] .tok');
    const note = page.locator('[data-testid=tokenizer-note]');
    await page.waitForFunction(() => /could not be read/.test(document.querySelector('[data-testid=tokenizer-note]')?.textContent ?? ''));
    const said = (await note.textContent())!;
    const warning = ((await (await fetch(`${served.url}api/meta`)).json()) as { warnings: string[] }).warnings.find((x) => x.includes('tokenizer.json'))!;
    assert.ok(warning, 'the server lists the damaged tokenizer');
    assert.ok(said.includes(warning.replace(/: token texts skipped$/, '')), `the reason is given: ${said}`);
    assert.doesNotMatch(said, /No tokenizer/);
    await screenshot(page, 'sample-tokens-damaged-tokenizer');
    assert.deepEqual(w.problems(), []);
    await page.close();
  });
});
