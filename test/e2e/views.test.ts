// The views find the problem for the user: lane order and labels, stragglers, request strip, charts, rollouts, sample
// (headless Chromium against `rlsight serve` on demo data).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { canvasPixels, ensureWebBuilt, hashParams, hasChromium, launch, openPage, screenshot, serveDemo, type DemoOptions, type Served, type Watched } from './harness.ts';

declare const document: any;
declare const location: { hash: string };
declare const getComputedStyle: (e: unknown) => { backgroundColor: string };

const waitHash = (page: Page, re: RegExp) => page.waitForFunction((src) => new RegExp(src).test(location.hash), re.source, { timeout: 15_000 });

const skip = hasChromium ? false : 'Debian chromium is not installed at /usr/bin/chromium';

/** One served demo and browser for a suite: registers the hooks, hands out pages opened at a hash. */
function demoSuite(opts: DemoOptions) {
  const ctx = { served: undefined as unknown as Served, browser: undefined as unknown as Browser };
  before(async () => {
    ensureWebBuilt();
    ctx.served = await serveDemo(opts);
    ctx.browser = await launch();
  });
  after(async () => {
    await ctx.browser?.close();
    await ctx.served?.stop();
  });
  const open = async (hash: string): Promise<Watched> => {
    const w = await openPage(ctx.browser);
    await w.page.goto(`${ctx.served.url}${hash}`);
    return w;
  };
  return { ctx, open };
}

describe('views on the large demo (128 GPUs on 16 nodes)', { skip }, () => {
  const { ctx, open } = demoSuite({ steps: 3, large: true });
  const laneLabels = (w: Watched) => w.page.$$eval('[data-testid=lane-labels] li', (els) => els.map((e) => e.textContent ?? ''));

  it('lanes are in cluster order: g:8 is the second node\'s first GPU, labelled with its rank and roles', async () => {
    const w = await open('#/timeline?lanes=g%3A7-8%2C%20g%3A16');
    await w.page.waitForSelector('[data-testid=lane-labels] li');
    const labels = await laneLabels(w);
    assert.deepEqual(
      labels.map((l) => l.split(' ').slice(0, 2).join(' ')),
      ['g7 10.0.1.1:7', 'g8 10.0.1.2:0', 'g16 10.0.1.3:0'],
    );
    assert.match(labels[1]!, /rank \d+ · rollout\+train|rank \d+ · train\+rollout/);
    await screenshot(w.page, 'views-large-lane-order');
    // The default sample of a large cluster is in the same order.
    await w.page.goto(`${ctx.served.url}#/timeline`);
    await w.page.waitForFunction(() => document.querySelectorAll('[data-testid=lane-labels] li').length >= 8);
    const nodes = (await laneLabels(w)).map((l) => l.split(' ')[1]!.split(':')[0]!.split('.').map(Number)[3]!);
    assert.deepEqual(nodes, [...nodes].sort((a, b) => a - b), `default lanes in node order: ${nodes}`);
    assert.deepEqual(w.problems(), []);
    await w.page.close();
  });

  it('every engine of the large cluster has its own colour in the engine charts and their legend', async () => {
    const w = await open('#/?cat=sglang');
    await w.page.waitForSelector('.engine-legend .swatch[data-engine]');
    await w.page.waitForSelector('.chart-panel[data-metric] .u-legend .u-series');
    const swatches = await w.page.$$eval('.engine-legend .swatch[data-engine]', (els) => els.map((e: any) => e.style.background));
    assert.ok(swatches.length > 10, `${swatches.length} engines: more than the palette's ten colours`);
    assert.equal(new Set(swatches).size, swatches.length, `no two engines share a colour: ${swatches}`);
    const charts = await w.page.$$eval('.chart-panel[data-metric] .u-legend', (ls) =>
      ls.map((l: any) => {
        const colours = [...l.querySelectorAll('.u-series .u-marker')].slice(1).map((m: any) => m.style.borderColor);
        return [new Set(colours).size, colours.length];
      }),
    );
    assert.ok(charts.length > 0 && charts.every(([distinct, n]) => distinct === n && n! > 10), `each chart draws each engine in its own colour: ${JSON.stringify(charts)}`);
    assert.deepEqual(w.problems(), []);
    await w.page.close();
  });

  it('a straggler is an advisory linked to its lanes and window; the default sample shows it, highlighted', async () => {
    const w = await open('#/timeline');
    const { page } = w;
    const item = page.locator('[data-testid=advisory] li', { hasText: 'rank 77' });
    await item.waitFor({ timeout: 20_000 });
    const advised = /rank 77 leaves train_wait (\d+\.\d) s after the median rank \(its median lag over 3 steps\), an outlier against its peers' spread in 3 of them/.exec((await item.textContent())!);
    assert.ok(advised, (await item.textContent()) ?? '');
    // The default lane sample of the 128-GPU run includes the straggler, marked with the same lag as the advisory.
    await page.waitForSelector('[data-testid=lane-labels] li[data-score]');
    const marked = await page.$$eval('[data-testid=lane-labels] li[data-score]', (els) => els.map((e) => e.textContent ?? ''));
    assert.equal(marked.length, 1);
    assert.match(marked[0]!, new RegExp(`rank 77 .*straggler, median lag ${advised[1]!.replace('.', '\\.')} s$`));
    assert.match((await page.textContent('[data-testid=default-lanes]'))!, /8 evenly spaced lanes \+ 1 late starter/);
    await screenshot(page, 'views-straggler-default');
    await item.locator('[data-testid=advisory-link]').click();
    await waitHash(page, /t0=.*lanes=rank/);
    assert.equal(hashParams(page).get('lanes'), 'rank:77');
    await page.waitForFunction(() => document.querySelectorAll('[data-testid=lane-labels] li').length === 1);
    assert.match((await laneLabels(w))[0]!, /^g77 10\.0\.1\.10:5 rank 77/);
    await screenshot(page, 'views-straggler-linked');
    assert.deepEqual(w.problems(), []);
    await page.close();
  });

  it('quick picks rank lanes worst first with score and unit, highlighted; a flat pick says "no outlier"', async () => {
    const w = await open('#/timeline');
    const { page } = w;
    await page.waitForSelector('[data-testid=lane-labels] li');
    await page.click('button:has-text("late start")');
    await waitHash(page, /lanes=gpu/);
    const result = (await page.textContent('[data-testid=pick-result]'))!;
    assert.match(result, /^late start, worst first: g77 \d+\.\d+ s · g\d+ -?\d+\.\d+ s/);
    assert.equal(await page.$('[data-testid=no-outlier]'), null);
    await page.waitForFunction(() => document.querySelectorAll('[data-testid=lane-labels] li[data-score]').length === 8);
    const labels = await laneLabels(w);
    assert.match(labels[0]!, /^g77 .* · \d+\.\d+ s$/, 'the worst lane is drawn first');
    const scores = labels.map((l) => Number(/ · (-?\d+\.\d+) s$/.exec(l)![1]));
    assert.deepEqual(scores, [...scores].sort((a, b) => b - a), `lanes in score order: ${scores}`);
    await screenshot(page, 'views-quickpick-late');
    // Lowest util over a window where every lane idles alike: said to be no outlier, ties named.
    await page.click('button:has-text("lowest util")');
    await page.waitForFunction(() => /lowest util, worst first/.test(document.querySelector('[data-testid=pick-result]')?.textContent ?? ''));
    const util = (await page.textContent('[data-testid=pick-result]'))!;
    assert.match(util, /g\d+ \d+\.\d+ %/);
    assert.deepEqual(w.problems(), []);
    await page.close();
  });

  it('a quick pick calls only equal scores ties, and shows different scores differently', async () => {
    const w = await open('#/timeline');
    const { page } = w;
    await page.waitForSelector('[data-testid=lane-labels] li');
    for (const [button, criterion, unit] of [
      ['late start', 'start_lag', 's'],
      ['lowest util', 'lowest_util', '%'],
    ] as const) {
      const answered = page.waitForResponse((r) => r.url().includes('/api/timeline/outliers') && new URL(r.url()).searchParams.get('criterion') === criterion);
      await page.click(`button:has-text("${button}")`);
      const { outliers } = (await (await answered).json()) as { outliers: { score: number }[] };
      await page.waitForFunction((b) => new RegExp(`^${b}, worst first`).test(document.querySelector('[data-testid=pick-result]')?.textContent ?? ''), button);
      const items = (await page.textContent('[data-testid=pick-result]'))!.replace(/^[^:]*: /, '').replace(/ · no outlier.*$/, '').split(' · ');
      assert.equal(items.length, outliers.length, items.join(' | '));
      const parsed = items.map((t) => new RegExp(`^g\\d+ (-?\\d+\\.\\d+) ${unit === '%' ? '%' : 's'}( \\(tie\\))?$`).exec(t)!);
      assert.ok(parsed.every(Boolean), `every item reads "gN score unit": ${items.join(' | ')}`);
      outliers.forEach((o, i) => {
        const equal = outliers[i - 1]?.score === o.score || outliers[i + 1]?.score === o.score;
        assert.equal(parsed[i]![2] !== undefined, equal, `${items[i]}: a tie exactly when a neighbour's score is equal (${o.score})`);
        outliers.forEach((p, j) => {
          if (p.score !== o.score) assert.notEqual(parsed[i]![1], parsed[j]![1], `${o.score} and ${p.score} read differently`);
        });
      });
    }
    assert.deepEqual(w.problems(), []);
    await page.close();
  });

  it('the Lanes row names no selection until the lane catalog is in, then the default sample (never "all" on a large cluster)', async () => {
    const w = await openPage(ctx.browser);
    const { page } = w;
    // a slow lane catalog, as on a warm restart of a 1,024-GPU run
    await page.route(
      (u) => u.pathname === '/api/rlsight/lanes' && u.searchParams.get('lanes') === 'all',
      async (route) => {
        await new Promise((r) => setTimeout(r, 1500));
        await route.continue();
      },
    );
    await page.goto(`${ctx.served.url}#/timeline`);
    await page.waitForSelector('.lane-selection .chip');
    const seen = new Set<string>();
    for (let i = 0; i < 200 && !(await page.$('[data-testid=default-lanes]')); i++) {
      for (const c of await page.$$eval('.lane-selection .lane-row .chip', (els) => els.map((e: any) => e.textContent.trim()))) seen.add(c);
      await page.waitForTimeout(25);
    }
    assert.ok(await page.$('[data-testid=default-lanes]'), 'the default sample arrives');
    assert.ok(seen.has('choosing lanes…'), `while the catalog loads: ${[...seen]}`);
    assert.ok(!seen.has('all'), `"all" is never shown on the way: ${[...seen]}`);
    assert.deepEqual(w.problems(), []);
    await page.close();
  });

  it('a fleet of engines: chips, chart series and legends in natural order; each legend keeps a few rows, with values at the cursor', async () => {
    const w = await open('#/?cat=sglang');
    const { page } = w;
    const chart = '.chart-panel.many-series';
    await page.waitForSelector(`${chart} .u-over`);
    await page.waitForSelector('.engine-legend .swatch[data-engine]');
    // natural order: digit runs compare as numbers (10.0.1.2 before 10.0.1.10), as the lanes are ordered
    const byNumbers = (a: string, b: string) => {
      const x = a.split(/(\d+)/);
      const y = b.split(/(\d+)/);
      for (let i = 0; i < Math.min(x.length, y.length); i++) {
        if (x[i] === y[i]) continue;
        return i % 2 ? Number(x[i]) - Number(y[i]) : x[i]! < y[i]! ? -1 : 1;
      }
      return x.length - y.length;
    };
    const chips = await page.$$eval('.engine-legend .swatch[data-engine]', (els) => els.map((e: any) => e.dataset.engine as string));
    assert.ok(chips.length > 7, `${chips.length} engines`);
    assert.deepEqual(chips, [...chips].sort(byNumbers), `engine chips in natural order: ${chips.join(' ')}`);
    assert.ok(chips.some((c) => /\.1\.2:/.test(c)) && chips.findIndex((c) => /\.1\.2:/.test(c)) < chips.findIndex((c) => /\.1\.10:/.test(c)));
    const legend = (sel: string) =>
      page.$eval(sel, (p: any) => {
        // (no named function in here: the page would not know the helper the test's compiler wraps it in)
        const rows = [...p.querySelectorAll('.u-legend .u-series')].map((r: any) => ({
          label: r.querySelector('.u-label')?.textContent ?? '',
          value: r.querySelector('.u-value')?.textContent ?? '',
          shown: r.style.display !== 'none',
        }));
        const box = p.querySelector('.u-legend').getBoundingClientRect();
        return { rows, panel: p.getBoundingClientRect().height, box: box.height, scrolls: p.querySelector('.u-legend').scrollHeight > p.querySelector('.u-legend').clientHeight + 1 };
      });
    const first = await legend(chart);
    const series = first.rows.filter((r) => !r.label.startsWith('time'));
    assert.deepEqual(
      [...series].map((r) => r.label).sort(byNumbers),
      chips.filter((c) => series.some((r) => r.label === c)),
      'the chart has the engines of the chips',
    );
    // away from the chart: the x value and the first five series, in natural order; the rest behind "+N more"
    assert.deepEqual(
      first.rows.filter((r) => r.shown).map((r) => r.label),
      [first.rows[0]!.label, ...[...series].map((r) => r.label).sort(byNumbers).slice(0, 5)],
    );
    assert.equal((await page.textContent(`${chart} [data-testid=legend-toggle]`))!.trim(), `+${series.length - 5} more`);
    assert.ok(first.panel < 480, `a chart of ${series.length} series stays ${first.panel} px tall`);
    // hovering: the nearest series, then the highest values at the cursor
    const over = (await page.$(`${chart} .u-over`))!;
    const bb = (await over.boundingBox())!;
    await page.mouse.move(bb.x + bb.width * 0.6, bb.y + bb.height * 0.4);
    await page.waitForFunction((sel) => /\d/.test(document.querySelector(`${sel} .u-legend .u-series .u-value`)?.textContent ?? ''), chart);
    const hovered = await legend(chart);
    const num = (v: string) => (Number.isFinite(Number(v)) ? Number(v) : -Infinity);
    const shown = hovered.rows.slice(1).filter((r) => r.shown);
    const hidden = hovered.rows.slice(1).filter((r) => !r.shown);
    assert.equal(shown.length, 5);
    assert.ok(shown.every((r) => r.value !== '' && r.value !== '—'), `values at the cursor: ${JSON.stringify(shown)}`);
    const rest = shown.slice(1).map((r) => num(r.value));
    assert.deepEqual(rest, [...rest].sort((a, b) => b - a), 'highest first');
    assert.ok(Math.min(...rest) >= Math.max(...hidden.map((r) => num(r.value))), 'no hidden series is higher than a shown one');
    await screenshot(page, 'views-engines-compact-legend');
    // every row on demand, in a box of bounded height that scrolls
    await page.click(`${chart} [data-testid=legend-toggle]`);
    await page.waitForSelector(`${chart}.legend-all`);
    const all = await legend(chart);
    assert.ok(all.rows.every((r) => r.shown));
    assert.deepEqual(all.rows.slice(1).map((r) => r.label), [...series].map((r) => r.label).sort(byNumbers), 'every row in natural order');
    assert.ok(all.box <= 170 && all.scrolls, `the whole legend scrolls in ${all.box} px`);
    assert.equal((await page.textContent(`${chart} [data-testid=legend-toggle]`))!.trim(), 'fewer');
    await screenshot(page, 'views-engines-all-legend');
    // "none" hides every engine; each chart then says so
    await page.click('[data-testid=engine-bulk] button:has-text("none")');
    await page.waitForFunction(() => document.querySelectorAll('.chart-panel .chart-empty').length > 0);
    assert.match((await page.textContent('.chart-panel .chart-empty'))!, /every series of this chart is hidden/);
    assert.deepEqual(w.problems(), []);
    await page.close();
  });

  it('the lane grammar refuses what it cannot mean and says when a term matches nothing; the default stays one chip', async () => {
    const w = await open('#/timeline');
    const { page } = w;
    await page.waitForSelector('[data-testid=default-lanes]');
    w.expect(/^http 400: \/api\/rlsight\/lanes/);
    for (const [term, msg] of [
      ['g:5-', /the range has no end/],
      ['g:5-3', /the range runs backwards/],
      ['g:999', /'g:999' matches no lane of this run \(lanes g0–g127/],
    ] as const) {
      await page.fill('[data-testid=lane-grammar]', term);
      await page.press('[data-testid=lane-grammar]', 'Enter');
      await page.waitForFunction((t) => document.querySelector('[data-testid=lane-error]') && document.querySelector('[data-testid=lane-grammar]').value === t, term);
      await page.waitForTimeout(100);
      assert.match((await page.textContent('[data-testid=lane-error]'))!, msg);
      assert.ok(!hashParams(page).has('lanes'), `${term} never reaches the URL`);
    }
    await screenshot(page, 'views-grammar-error');
    await page.fill('[data-testid=lane-grammar]', 'g:3');
    await page.press('[data-testid=lane-grammar]', 'Enter');
    await waitHash(page, /lanes=/);
    const chips = await page.$$eval('.lane-selection .chip', (els) => els.map((e) => e.textContent ?? ''));
    assert.equal(chips.length, 2, `the default is one chip beside the new term: ${chips}`);
    assert.match(chips[0]!, /evenly spaced lanes/);
    assert.match(chips[1]!, /^g:3/);
    const remove = (await page.$('.lane-selection .chip button'))!;
    const box = (await remove.boundingBox())!;
    assert.ok(box.width >= 20 && box.height >= 20, `remove target ${box.width}×${box.height}`);
    await page.close();
  });

  it('a step of many groups shows the first groups of its scatter legend and the rest on demand', async () => {
    const w = await open('#/rollout/1');
    const { page } = w;
    const legend = '[data-testid=scatter-legend]';
    await page.waitForSelector(`${legend} button`);
    const swatches = () => page.$$eval(`${legend} .swatch:not(.ring)`, (els) => els.length);
    assert.equal(await swatches(), 24);
    assert.equal((await page.textContent(`${legend} button`))!.trim(), '+8 more');
    await page.click(`${legend} button`);
    assert.equal(await swatches(), 32, 'every group once asked');
    assert.equal((await page.textContent(`${legend} button`))!.trim(), 'fewer');
    assert.deepEqual(w.problems(), []);
    await page.close();
  });
});

describe('views on the demo (16 GPUs)', { skip }, () => {
  const { ctx, open } = demoSuite({ steps: 4 });

  it('the request strip counts every request of the window, and the legend draws what the lanes draw', async () => {
    const w = await open('#/timeline');
    const { page } = w;
    await page.waitForSelector('[data-testid=lanes]');
    await page.waitForFunction(() => Number(document.querySelector('.lane-canvas-wrap')?.getAttribute('data-requests-total')) > 0);
    const total = Number(await page.getAttribute('.lane-canvas-wrap', 'data-requests-total'));
    const rows = Number(await page.getAttribute('.lane-canvas-wrap', 'data-request-rows'));
    // The reference's answer counts every trajectory of the window too (it then draws only 1,024).
    const range = ((await (await fetch(`${ctx.served.url}api/meta`)).json()) as { time_range: [number, number] }).time_range;
    const ref = await (await fetch(`${ctx.served.url}api/timeline/heatmap?metric=lifecycle&x_buckets=10&t0=${range[0]}&t1=${range[1]}`)).arrayBuffer();
    const header = JSON.parse(Buffer.from(ref).subarray(4, 4 + new DataView(ref).getUint32(0, true)).toString('utf8')) as { rows_total: number };
    assert.equal(total, header.rows_total, 'every request of the window is in the strip');
    assert.ok(rows >= 1 && rows <= 150, `drawn in ${rows} rows of at least 4 px`);
    const stripText = await page.evaluate(() => document.querySelector('[data-testid=lanes]')?.getAttribute('aria-label'));
    assert.ok(stripText);
    // Legend: idle phases hatched, request states and the memory line in colours no phase uses.
    await page.check('text=memory');
    await page.waitForSelector('[data-testid=legend] .swatch.line.dashed');
    const legend = await page.$$eval('[data-testid=legend] span', (els) =>
      els.map((e) => ({ phase: e.getAttribute('data-phase'), state: e.getAttribute('data-request-state'), cls: e.querySelector('i')!.className, colour: getComputedStyle(e.querySelector('i')!).backgroundColor, text: e.textContent })),
    );
    const phases = legend.filter((l) => l.phase);
    assert.ok(phases.find((l) => l.phase === 'train_wait')!.cls.includes('hatched'), 'train_wait hatched as in the lanes');
    assert.ok(!phases.find((l) => l.phase === 'actor_train')!.cls.includes('hatched'));
    const states = legend.filter((l) => l.state);
    assert.equal(states.length, 3);
    for (const s of states) assert.ok(!phases.some((p) => p.colour === s.colour), `request state ${s.state} (${s.colour}) differs from every phase colour`);
    assert.ok(legend.some((l) => /memory/.test(l.text ?? '') && l.cls.includes('dashed')));
    await screenshot(page, 'views-legend-strip', true);
    // Scrolled down to the strip, the controls, minimap and time axis are still on screen.
    await page.mouse.wheel(0, 900);
    await page.waitForTimeout(300);
    const axis = (await page.locator('[data-testid=sticky-axis]').first().boundingBox())!;
    assert.ok(axis.y >= 40 && axis.y < 300, `sticky axis in view after scrolling (y=${axis.y})`);
    assert.ok(await page.isVisible('[data-testid=lane-grammar]'));
    await screenshot(page, 'views-sticky-scrolled');
    assert.deepEqual(w.problems(), []);
    await page.close();
  });

  it('zoom and Esc are history entries: Back returns to the previous window', async () => {
    const w = await open('#/timeline');
    const { page } = w;
    await page.waitForSelector('[data-testid=lanes]');
    await page.mouse.move(5, 5);
    await page.keyboard.press('w');
    await waitHash(page, /t0=/);
    const first = hashParams(page).get('t0');
    await page.keyboard.press('w');
    await page.waitForFunction((f) => !location.hash.includes(`t0=${f}`), first);
    await page.keyboard.press('Escape');
    await page.waitForFunction(() => !location.hash.includes('t0='));
    await page.goBack();
    await waitHash(page, /t0=/);
    assert.notEqual(hashParams(page).get('t0'), first, 'Back undoes Esc: the second zoom');
    await page.goBack();
    await page.waitForFunction((f) => location.hash.includes(`t0=${f}`), first);
    await page.goBack();
    await page.waitForFunction(() => location.hash === '#/timeline');
    assert.deepEqual(w.problems(), []);
    await page.close();
  });

  type Rows = { rows: Record<string, unknown>[] };
  const api = async <T,>(path: string): Promise<T> => (await fetch(`${ctx.served.url}api/${path}`)).json() as Promise<T>;

  it('sample tokens: the tokens are asked as the app loads and the step summary only once they answered (it never delays them)', async () => {
    const step = 1;
    const idx = (await api<Rows>(`rollout/${step}/summary`)).rows[0]!.sample_index;
    const w = await open(`#/rollout/${step}/sample/${idx}?tab=tokens`);
    const { page } = w;
    await page.waitForSelector('[data-testid=token-text] .tok');
    // The header's chips come from the summary, asked after the tokens.
    await page.waitForFunction(() => [...document.querySelectorAll('.sample-head .chip')].some((e: any) => /response tokens/.test(e.textContent)));
    const asked = await page.evaluate(() =>
      (performance.getEntriesByType('resource') as unknown as { name: string; startTime: number; responseEnd: number }[]).map((r) => ({ path: new URL(r.name).pathname, start: r.startTime, end: r.responseEnd })),
    );
    const tokens = asked.filter((r) => /\/sample\/\d+\/tokens$/.test(r.path));
    const summary = asked.filter((r) => /\/rollout\/\d+\/summary$/.test(r.path));
    assert.equal(tokens.length, 1, JSON.stringify(asked));
    assert.equal(summary.length, 1, JSON.stringify(asked));
    assert.ok(summary[0]!.start >= tokens[0]!.end, `the summary (asked at ${summary[0]!.start} ms) waits for the tokens (answered at ${tokens[0]!.end} ms)`);
    // Opened on the tokens tab, the page asks them as the app loads, not after the run header every view waits for.
    const meta = asked.filter((r) => /\/api\/meta$/.test(r.path));
    assert.ok(meta.length >= 1 && tokens[0]!.start < meta[0]!.end, `the tokens (asked at ${tokens[0]!.start} ms) do not wait for the run header (answered at ${meta[0]?.end} ms)`);
    assert.deepEqual(w.problems(), []);
    await page.close();
  });

  it('rollouts: eval prompts sampled once are not zero-std groups; a stale step error clears on train ↔ eval', async () => {
    const meta = await api<{ rollout_ids: { train: number[]; eval: number[] } }>('meta');
    const ev = meta.rollout_ids.eval[0]!;
    const groups = await api<Rows>(`rollout/${ev}/groups?eval=1`);
    assert.ok(groups.rows.every((g) => g.n === 1 && g.zero_std === null), 'a lone sample has no std');
    const w = await open(`#/rollout/${ev}?eval=1&tab=groups`);
    const { page } = w;
    await page.waitForSelector('[data-testid=groups-table]');
    assert.match((await page.textContent('[data-testid=zero-std-count]'))!, /^\s*0 with zero reward std/);
    // a zero is not an alarm
    assert.equal(await page.$eval('[data-testid=zero-std-count]', (e) => (e as unknown as { style: { color: string } }).style.color), '');
    assert.match((await page.textContent('[data-testid=groups-table]').then(() => page.textContent('.panel h3')))!, /no gradient signal\) · \d+ single-sample prompts? \(no std\)$/);
    assert.match((await page.textContent('.tabs'))!, /Groups \(0, 0 zero-std\)/);
    assert.equal(await page.$$eval('[data-testid=groups-table] .flag', (els) => els.length), 0);
    await screenshot(page, 'views-eval-groups');
    // A train step still flags its zero-std groups, in the table and as rings in the scatter.
    const train = meta.rollout_ids.train.at(-1)!;
    const tg = await api<Rows>(`rollout/${train}/groups`);
    const zero = tg.rows.filter((g) => g.zero_std === true).length;
    await page.goto(`${ctx.served.url}#/rollout/${train}`);
    await page.waitForSelector('[data-testid=scatter-legend]');
    // the legend is drawn from the summary first; the groups' zero-std rings join it when the groups arrive
    if (zero) await page.locator('[data-testid=scatter-legend]', { hasText: 'zero-std group' }).waitFor({ timeout: 10_000 }).catch(() => {});
    if (zero) assert.match((await page.textContent('[data-testid=scatter-legend]'))!, new RegExp(`zero-std group \\(${zero}\\)`));
    const swatches = await page.$$eval('[data-testid=scatter-legend] .swatch:not(.ring)', (els) => els.map((e) => (e as any).style.background));
    assert.equal(new Set(swatches).size, swatches.length, `no colour repeats among ${swatches.length} groups`);
    await screenshot(page, 'views-rollouts-scatter');
    // The batch anatomy: one row per sample of the step, sortable both ways, with the consume line.
    await page.waitForSelector('[data-testid=batch-anatomy] canvas');
    assert.match((await page.textContent('[data-testid=batch-anatomy] h3'))!, /Batch anatomy · \d+ samples/);
    const px = await canvasPixels(page, '[data-testid=anatomy-rows]', ['#22b8cf', '#ff8a3d']);
    assert.ok(px.matches['#22b8cf']! > 200 && px.matches['#ff8a3d']! > 20, `generation spans and the consume line drawn (${JSON.stringify(px.matches)})`);
    await page.click('[data-testid=batch-anatomy] button:has-text("duration")');
    assert.match((await page.textContent('[data-testid=batch-anatomy] [aria-pressed=true]'))!, /duration ▾/);
    await page.click('[data-testid=batch-anatomy] button:has-text("duration")');
    assert.match((await page.textContent('[data-testid=batch-anatomy] [aria-pressed=true]'))!, /duration ▴/);
    // A bad jump in the step box, then train → eval: the error is gone.
    w.expect(/./);
    await page.fill('.step-bar input[type=number]', '999');
    await page.press('.step-bar input[type=number]', 'Enter');
    await page.waitForSelector('.step-bar .inline-error');
    await page.click('.step-bar button:has-text("eval")');
    await waitHash(page, /eval=1/);
    await page.waitForTimeout(300);
    assert.equal(await page.$('.step-bar .inline-error'), null, 'no stale error after switching to eval');
    await page.close();
  });

  it('an address that names no view says so above the Metrics view it shows', async () => {
    const w = await open('#/nosuchview');
    const { page } = w;
    await page.waitForSelector('[data-testid=unknown-view]');
    assert.match((await page.textContent('[data-testid=unknown-view]'))!, /there is no view “nosuchview”/);
    await page.goto(`${ctx.served.url}#/`);
    await page.waitForSelector('[data-testid=unknown-view]', { state: 'detached' });
  });

  it('tool_calls counts the tool messages the conversation shows', async () => {
    const meta = await api<{ rollout_ids: { train: number[] } }>('meta');
    const step = meta.rollout_ids.train[1]!;
    const table = await api<Rows>(`rollout/${step}/summary`);
    const withTools = table.rows.filter((r) => typeof r.tool_calls === 'number' && (r.tool_calls as number) > 0);
    assert.ok(withTools.length > table.rows.length / 4, `agentic samples call tools (${withTools.length} of ${table.rows.length})`);
    const sample = withTools.find((r) => (r.tool_calls as number) >= 2) ?? withTools[0]!;
    const w = await open(`#/rollout/${step}/sample/${sample.sample_index}`);
    await w.page.waitForSelector('[data-testid=conversation]');
    const shown = await w.page.$$eval('[data-testid=conversation] .tool-result', (els) => els.length);
    assert.equal(shown, sample.tool_calls, `sample ${sample.sample_index}: tool_calls ${sample.tool_calls} = tool messages shown ${shown}`);
    assert.deepEqual(w.problems(), []);
    await w.page.close();
  });

  it('sample: token colours are calm on a healthy sample and loud on a divergent one (fixed scale, kept by j/k); no 404 without a conversation', async () => {
    const meta = await api<{ rollout_ids: { train: number[] } }>('meta');
    const step = 3; // the demo's divergence step
    assert.ok(meta.rollout_ids.train.includes(step));
    const table = await api<Rows>(`rollout/${step}/summary`);
    const scored = table.rows.filter((r) => typeof r.mean_abs_lp_diff === 'number').sort((a, b) => (a.mean_abs_lp_diff as number) - (b.mean_abs_lp_diff as number));
    const healthy = scored[0]!;
    const divergent = scored.at(-1)!;
    const alphas = async (idx: unknown, w: Watched) => {
      await w.page.goto(`${ctx.served.url}#/rollout/${step}/sample/${idx}?tab=tokens&color=lp_diff`);
      await w.page.waitForSelector('[data-testid=token-text] .tok');
      await w.page.waitForTimeout(200);
      return w.page.$$eval('[data-testid=token-text] .tok:not(.prompt):not(.masked)', (els) =>
        els.map((e) => {
          const m = /rgba\([^,]+,[^,]+,[^,]+,\s*([\d.]+)\)/.exec((e as any).style.background);
          return m ? Number(m[1]) : 0;
        }),
      );
    };
    const w = await openPage(ctx.browser);
    const calm = await alphas(healthy.sample_index, w);
    const mean = calm.reduce((a, b) => a + b, 0) / calm.length;
    assert.ok(mean < 0.2, `healthy sample ${healthy.sample_index} is calm: mean alpha ${mean.toFixed(3)}`);
    assert.equal(await w.page.inputValue('[data-testid=scale-mode]'), 'fixed', 'the fixed scale is the default');
    await screenshot(w.page, 'views-tokens-healthy');
    const loud = await alphas(divergent.sample_index, w);
    assert.ok(Math.max(...loud) > 0.6, `divergent sample ${divergent.sample_index} is loud: max alpha ${Math.max(...loud)}`);
    await screenshot(w.page, 'views-tokens-divergent');
    // The lifecycle strip links to its window on Compute Utilization.
    const link = await w.page.getAttribute('[data-testid=lifecycle-timeline-link]', 'href');
    assert.match(link!, /^#\/timeline\?t0=\d+(\.\d+)?&t1=\d+/);
    // The stretched scale is one choice away, and j keeps it.
    await w.page.selectOption('[data-testid=scale-mode]', 'window');
    await waitHash(w.page, /scale=window/);
    await w.page.mouse.move(5, 5);
    await w.page.keyboard.press('j');
    await w.page.waitForFunction((i) => !location.hash.includes(`/sample/${i}?`), divergent.sample_index);
    assert.equal(hashParams(w.page).get('scale'), 'window', 'j keeps the chosen scale');
    // Every sample of the step opened above answered 200 for its conversation, recorded or not.
    assert.deepEqual(w.problems(), []);
    await w.page.close();
  });

  it('metrics: tick labels never overlap, Esc resets zoom, lines stay inside the plot after zoom, log scale per chart', async () => {
    const w = await open('#/?cat=sglang');
    const { page } = w;
    for (const cat of ['sglang', 'perf']) {
      await page.goto(`${ctx.served.url}#/?cat=${cat}`);
      await page.waitForFunction(() => document.querySelectorAll('.chart-panel .uplot[data-xticks]').length > 0);
      await page.waitForTimeout(300);
      const charts = await page.$$eval('.chart-panel .uplot[data-xticks]', (els) => els.map((e) => JSON.parse(e.getAttribute('data-xticks')!) as [number, number, string][]));
      for (const ticks of charts) {
        const sorted = [...ticks].sort((a, b) => a[0] - b[0]);
        for (let i = 1; i < sorted.length; i++) assert.ok(sorted[i - 1]![1] <= sorted[i]![0], `${cat}: tick labels ${JSON.stringify(sorted[i - 1])} and ${JSON.stringify(sorted[i])} overlap`);
      }
      await screenshot(page, `views-metrics-${cat}`);
    }
    // The demo's engine restart is marked on the engine charts: the address lost, and the new one up.
    await page.goto(`${ctx.served.url}#/?cat=sglang`);
    await page.waitForSelector('.chart-panel[data-markers]');
    assert.match((await page.getAttribute('.chart-panel[data-markers]', 'data-markers'))!, /lost \| engine up on /);
    // Drag-zoom a chart, then check the series stays inside the plot box (none of it over the y axis).
    await page.goto(`${ctx.served.url}#/?cat=perf`);
    await page.waitForSelector('.chart-panel .u-over');
    await page.waitForTimeout(300);
    const over = (await page.locator('.chart-panel .u-over').first().boundingBox())!;
    await page.mouse.move(over.x + over.width * 0.3, over.y + over.height / 2);
    await page.mouse.down();
    await page.mouse.move(over.x + over.width * 0.6, over.y + over.height / 2, { steps: 5 });
    await page.mouse.up();
    await waitHash(page, /zx=/);
    await page.waitForTimeout(300);
    const outside = await page.$eval('.chart-panel .uplot', (root) => {
      const c = root.querySelector('canvas') as any;
      const o = root.querySelector('.u-over')!.getBoundingClientRect();
      const r = c.getBoundingClientRect();
      const k = c.width / r.width;
      const { data } = c.getContext('2d').getImageData(0, 0, Math.floor((o.left - r.left) * k) - 2, c.height);
      let blue = 0;
      for (let i = 0; i < data.length; i += 4) if (Math.abs(data[i] - 0x4e) < 20 && Math.abs(data[i + 1] - 0xa1) < 20 && Math.abs(data[i + 2] - 0xff) < 20) blue++;
      return blue;
    });
    assert.equal(outside, 0, 'no series pixels left of the plot after zoom');
    await screenshot(page, 'views-metrics-zoomed');
    await page.mouse.move(5, 5);
    await page.keyboard.press('Escape');
    await page.waitForFunction(() => !location.hash.includes('zx='));
    // Log scale: one chart at a time.
    const toggle = page.locator('.chart-panel [data-testid=log-toggle]:not([disabled])').first();
    await toggle.click();
    assert.equal(await toggle.getAttribute('aria-pressed'), 'true');
    assert.equal(await page.$$eval('.chart-panel [data-testid=log-toggle][aria-pressed=true]', (els) => els.length), 1);
    assert.deepEqual(w.problems(), []);
    await page.close();
  });
});
