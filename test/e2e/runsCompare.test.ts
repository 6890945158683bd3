// Comparison across the demo's two runs (`run` and `collapse`, same recipe and seed) and the defects met on the
// way: tooltips that outlived their view, Health cells that opened only from their digits, flipped groups
// compared failure against failure.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser } from 'playwright-core';
import type { HealthAnswer, RolloutTable, StepDiff } from '../../src/wire/index.ts';
import { appendDemoStep } from '../../src/demo/index.ts';
import { chartsWithSeries, hasChromium, hashParams, hashPath, openPage, screenshot, type Served, serveDemo, startBrowserSuite, stopBrowserSuite } from './harness.ts';

declare const document: any;
const TOOLTIP = '.tooltip, [role=tooltip], [data-testid=tooltip]';

describe('comparing runs and the defects around it (headless Chromium)', { skip: hasChromium ? false : 'Debian chromium is not installed at /usr/bin/chromium' }, () => {
  let served: Served;
  let browser: Browser;
  const api = async <T>(path: string) => (await (await fetch(`${served.url}api/${path}`)).json()) as T;

  before(async () => ({ served, browser } = await startBrowserSuite(() => serveDemo({ steps: 4, compare: true }))));
  after(() => stopBrowserSuite({ served, browser }));

  it('a token tooltip does not stay over Health after Back, nor a scatter tooltip over Metrics', async () => {
    const w = await openPage(browser);
    const { page } = w;
    await page.goto(`${served.url}#/health`);
    await page.waitForSelector('table.health-board tbody tr');
    const first = Number((await api<RolloutTable>('rollout/3/summary')).rows[0]!.sample_index);
    await page.goto(`${served.url}#/rollout/3/sample/${first}?tab=tokens`);
    const token = page.locator('[data-testid=token-text] [data-pos]').nth(3);
    await token.waitFor();
    // hovered again if the token was drawn anew under a still pointer (the step's summary lands after the tokens)
    for (let tries = 0; ; tries++) {
      await token.hover();
      const shown = await page.waitForSelector(TOOLTIP, { timeout: 2000 }).then(() => true, () => false);
      if (shown) break;
      assert.ok(tries < 5, 'a token shows its tooltip when hovered');
      await page.mouse.move(0, 0);
    }
    await page.goBack();
    await page.waitForSelector('table.health-board tbody tr');
    assert.equal(await page.locator(TOOLTIP).count(), 0, 'no token tooltip over Health');

    await page.goto(`${served.url}#/rollout/3`);
    const scatter = page.locator('[data-testid=scatter]');
    await scatter.waitFor();
    await scatter.scrollIntoViewIfNeeded();
    await page.waitForTimeout(300);
    // Hover a drawn point: a saturated pixel of the canvas (axes and grid are grey).
    const point = await page.evaluate(() => {
      const c = document.querySelector('[data-testid=scatter]');
      const { data, width, height } = c.getContext('2d').getImageData(0, 0, c.width, c.height);
      const r = c.getBoundingClientRect();
      for (let i = 0; i < width * height; i++) {
        const [R, G, B, A] = [data[4 * i], data[4 * i + 1], data[4 * i + 2], data[4 * i + 3]];
        if (A > 200 && Math.max(R, G, B) - Math.min(R, G, B) > 90) return { x: r.left + ((i % width) * r.width) / width, y: r.top + (Math.floor(i / width) * r.height) / height };
      }
      return null;
    });
    assert.ok(point, 'the scatter draws points');
    await page.mouse.move(point.x + 1, point.y + 1);
    await page.waitForSelector(TOOLTIP);
    await page.evaluate(() => (location.hash = '#/'));
    await page.waitForSelector('.chart-panel');
    assert.equal(await page.locator(TOOLTIP).count(), 0, 'no scatter tooltip over Metrics');
    assert.deepEqual(w.problems(), []);
  });

  it('a Health cell opens its evidence from anywhere in the cell, not only its digits', async () => {
    const w = await openPage(browser);
    const { page } = w;
    await page.goto(`${served.url}#/health`);
    await page.waitForSelector('table.health-board tbody tr');
    const cell = page.locator('table.health-board tbody tr').last().locator('td[data-signal=zero_std]');
    const box = (await cell.boundingBox())!;
    await page.mouse.click(box.x + 2, box.y + 2);
    await page.waitForFunction(() => location.hash.startsWith('#/rollout/'));
    assert.equal(hashParams(page).get('tab'), 'groups');
    assert.deepEqual(w.problems(), []);
  });

  it('Health compares runs signal by signal at the newest or a chosen step; each cell is that run’s', async () => {
    const w = await openPage(browser);
    const { page } = w;
    await page.goto(`${served.url}#/health`);
    await page.click('[data-testid=health-compare]');
    await page.waitForSelector('[data-testid=health-runs] tbody tr[data-run=collapse]');
    const boards = { run: await api<HealthAnswer>('runs/run/rlsight/health'), collapse: await api<HealthAnswer>('runs/collapse/rlsight/health') };
    // a cell's value is its first number: a warned or fired cell puts a glyph before it, and its level and detail after it
    const cellOf = async (run: string) => (await page.textContent(`[data-testid=health-runs] tr[data-run="${run}"] td[data-signal=zero_std]`))!.match(/-?[\d.]+/)![0];
    for (const run of ['run', 'collapse'] as const) {
      const want = boards[run].rows.at(-1)!.cells.zero_std.value!;
      assert.equal(Number(await cellOf(run)), Number(want.toFixed(3)), `${run} newest zero-std`);
    }
    await page.fill('input[aria-label="step of the runs board"]', '1');
    await page.press('input[aria-label="step of the runs board"]', 'Enter');
    await page.waitForFunction(() => location.hash.includes('at=1'));
    await page.waitForFunction(() => /step 1/.test(document.querySelector('[data-testid=health-runs] h2')?.textContent ?? ''));
    for (const run of ['run', 'collapse'] as const) {
      const want = boards[run].rows.find((r) => r.step === 1)!.cells.zero_std.value!;
      assert.equal(Number(await cellOf(run)), Number(want.toFixed(3)), `${run} zero-std at step 1`);
    }
    // The per-step board below stays the shown run's, its rows led by the step.
    const steps = await page.$$eval('table.health-board:not(.runs-board) tbody tr', (trs) => trs.map((t: any) => t.cells[0].textContent.trim()));
    assert.deepEqual(steps, boards.run.rows.map((r) => String(r.step)));
    await screenshot(page, 'health-runs-board');
    // A run's evidence opens in that run.
    await page.click('[data-testid=health-runs] tr[data-run=collapse] td[data-signal=zero_std] a');
    await page.waitForFunction(() => location.hash.startsWith('#/rollout/1'));
    assert.equal(hashParams(page).get('run'), 'collapse');
    assert.deepEqual(w.problems(), []);
  });

  it('Rollouts sets the same step of two runs side by side: reward and length distributions, each run’s zero-std share', async () => {
    const w = await openPage(browser);
    const { page } = w;
    await page.goto(`${served.url}#/rollout/3?run=collapse`);
    await page.click('[data-testid=rollout-compare]');
    await page.waitForSelector('[data-testid=rollout-runs-compare] [data-metric=zero_std] .share-bar');
    assert.deepEqual(hashParams(page).get('runs'), 'collapse,run');
    for (const metric of ['reward', 'response_length']) assert.equal(await page.locator(`[data-testid=rollout-runs-compare] [data-metric=${metric}] svg.histogram`).count(), 1, metric);
    for (const run of ['collapse', 'run']) {
      const groups = await api<RolloutTable>(`runs/${run}/rollout/3/groups`);
      const real = groups.rows.filter((g) => Number(g.n) >= 2);
      const share = real.filter((g) => g.zero_std === true).length / real.length;
      const shown = await page.textContent(`[data-testid=rollout-runs-compare] .share-bar[data-run="${run}"] [data-testid=zero-std-share]`);
      assert.equal(Number(shown), Number(share.toFixed(3)), `${run} zero-std share`);
    }
    assert.match((await page.textContent('[data-testid=rollout-runs-compare] h3'))!, /collapse against run/);
    await screenshot(page, 'rollouts-two-runs');
    assert.deepEqual(w.problems(), []);
  });

  it('Compute Utilization sets the step anatomy of two runs side by side on one time scale', async () => {
    const w = await openPage(browser);
    const { page } = w;
    await page.goto(`${served.url}#/timeline?run=collapse&runs=collapse,run`);
    await page.waitForSelector('[data-testid=runs-anatomy] .anatomy-step');
    const sides = await page.$$eval('[data-testid=runs-anatomy] .anatomy-side', (els) => els.map((e: any) => [e.getAttribute('data-run'), [...e.querySelectorAll('.anatomy-step')].map((s: any) => Number(s.getAttribute('data-step')))]));
    const metrics = await api<Record<string, { x: number[]; y: number[] }>>('runs/run/metrics?keys=perf/step_time,perf/wait_time_ratio&x=rollout/step');
    const steps = metrics['perf/step_time']!.x.slice(-12);
    assert.deepEqual(sides, [
      ['collapse', steps],
      ['run', steps],
    ]);
    const wait = metrics['perf/wait_time_ratio']!.y.at(-1)!;
    assert.equal(await page.textContent(`[data-testid=runs-anatomy] .anatomy-side[data-run=run] .anatomy-step[data-step="${steps.at(-1)}"] [data-testid=wait-share]`), `wait ${(wait * 100).toFixed(0)}%`, 'as the step bands write it');
    // One scale: the longest step's bar spans the most.
    const widths = await page.$$eval('[data-testid=runs-anatomy] .anatomy-bar', (bars) => bars.map((b: any) => [...b.children].reduce((a: number, c: any) => a + c.getBoundingClientRect().width, 0)));
    assert.ok(Math.max(...widths) > 0.9 * (await page.$eval('[data-testid=runs-anatomy] .anatomy-bar', (b: any) => b.getBoundingClientRect().width)));
    await screenshot(page, 'timeline-two-runs');
    assert.deepEqual(w.problems(), []);
  });

  it('Metrics overlays runs see-through, brings the hovered run forward in every chart, and puts every chart it can on the chosen x axis', async () => {
    const w = await openPage(browser);
    const { page } = w;
    await page.goto(`${served.url}#/?cat=rollout&runs=run,collapse`);
    await chartsWithSeries(page, 3);
    await page.waitForTimeout(300);
    const chart = '.chart-panel[data-metric="rollout/zero_std_group_ratio"] .uplot canvas';
    /** Mean and max alpha of the pixels drawn in `hex` (±24 per channel). */
    const alphaOf = (hex: string) =>
      page.evaluate(
        ({ chart, hex }) => {
          const c = document.querySelector(chart);
          const { data } = c.getContext('2d').getImageData(0, 0, c.width, c.height);
          const want = [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16));
          let n = 0;
          let sum = 0;
          let max = 0;
          for (let i = 0; i < data.length; i += 4) {
            if (data[i + 3] === 0 || want.some((w, k) => Math.abs(data[i + k] - w) > 24)) continue;
            n++;
            sum += data[i + 3];
            max = Math.max(max, data[i + 3]);
          }
          return { n, mean: n ? sum / n : 0, max };
        },
        { chart, hex },
      );
    const before = await alphaOf('#ff8a3d');
    assert.ok(before.n > 30, `the second run is drawn: ${JSON.stringify(before)}`);
    assert.ok(before.max < 230, `overlaid lines are see-through: max alpha ${before.max}`);
    const names = await page.$$eval('[data-testid=run-picker] label', (ls) => ls.map((l: any) => l.textContent.trim()));
    await page.hover(`[data-testid=run-picker] label:has(input[data-run="run"])`);
    await page.waitForFunction((n) => document.querySelector('.chart-panel[data-metric="rollout/zero_std_group_ratio"] .uplot')?.getAttribute('data-highlight') === n, names[0]);
    await page.waitForTimeout(200);
    const dimmed = await alphaOf('#ff8a3d');
    assert.ok(dimmed.mean < before.mean / 2, `the other run is dimmed: ${before.mean.toFixed(0)} → ${dimmed.mean.toFixed(0)}`);
    const highlighted = await page.$$eval('.chart-panel .uplot', (us) => us.map((u: any) => u.getAttribute('data-highlight')));
    assert.ok(highlighted.every((h) => h === names[0]), `every chart brings the run forward: ${highlighted}`);
    await page.mouse.move(5, 5);
    await page.waitForFunction(() => !document.querySelector('.chart-panel .uplot')?.getAttribute('data-highlight'));

    // The engine charts follow "time since start" too; on "step" they say why they stay on wall time.
    await page.goto(`${served.url}#/?cat=sglang&x=rel&run=run`);
    await page.waitForSelector('.chart-panel[data-metric] .u-legend .u-series');
    assert.match(await page.$eval('.chart-panel[data-metric] .u-legend .u-series .u-label', (e: any) => e.textContent), /since start/);
    assert.equal(await page.locator('[data-testid=axis-note]').count(), 0);
    await page.goto(`${served.url}#/?cat=sglang&x=step&run=run`);
    await page.waitForSelector('[data-testid=axis-note]');
    assert.match((await page.textContent('[data-testid=axis-note]'))!, /wall time/);
    // dump/* aggregates are per step: on wall time they say so instead of silently staying on step.
    await page.goto(`${served.url}#/?cat=dump&x=time&run=run`);
    await page.waitForSelector('.chart-panel[data-metric^="dump/"] [data-testid=axis-note]');
    assert.match((await page.textContent('.chart-panel[data-metric^="dump/"] [data-testid=axis-note]'))!, /dump\/\* aggregates are computed per step/);
    assert.deepEqual(w.problems(), []);
  });

  it('bad URL values are named with what is shown instead: t0=abc, a window beyond the run, diff b=zz; trace/99 on a run without traces says that', async () => {
    const w = await openPage(browser);
    const { page } = w;
    const note = () => page.locator('[data-testid=url-note]').first().textContent();
    await page.goto(`${served.url}#/timeline?t0=abc&t1=5`);
    await page.waitForSelector('[data-testid=url-note]');
    assert.match((await note())!, /t0=“abc” is not a number/);
    await page.goto(`${served.url}#/timeline?t0=100&t1=200`);
    await page.waitForFunction(() => /outside the run's data/.test(document.querySelector('[data-testid=url-note]')?.textContent ?? ''));
    await page.goto(`${served.url}#/diff?a=1&b=zz`);
    await page.waitForSelector('[data-testid=url-note]');
    assert.match((await note())!, /b=“zz” is not a step number \(steps 0–3\): showing step \d/);
    // a miles run records no per-request traces: that is said, not that step 99 is missing (trace.test.ts: steps of a slime run)
    await page.goto(`${served.url}#/trace/99`);
    await page.waitForSelector('[data-testid=no-traces]');
    assert.match((await page.textContent('[data-testid=no-traces]'))!, /^This run holds no per-request traces/);
    assert.equal(await page.locator('[data-testid=url-note]').count(), 0);
    assert.deepEqual(w.problems(), []);
  });

  it('the lane selection starts afresh on a plain #/timeline; lane tooltips wrap inside their box', async () => {
    const w = await openPage(browser);
    const { page } = w;
    w.expect(/http 400: \/api\/rlsight\/lanes\?lanes=.*bogus/);
    await page.goto(`${served.url}#/timeline?lanes=g:0-1`);
    await page.waitForSelector('[data-testid=lanes]');
    await page.fill('[data-testid=lane-grammar]', 'bogus:::');
    await page.press('[data-testid=lane-grammar]', 'Enter');
    await page.waitForSelector('[data-testid=lane-error]');
    await page.click('header.topbar nav a[title="Compute Utilization"]');
    await page.waitForFunction(() => !location.hash.includes('lanes='));
    await page.waitForFunction(() => !document.querySelector('[data-testid=lane-error]'));
    assert.equal(await page.inputValue('[data-testid=lane-grammar]'), '');

    const box = (await page.locator('[data-testid=lanes]').boundingBox())!;
    let widest = -1;
    for (let x = box.x + box.width * 0.3; x < box.x + box.width; x += box.width * 0.2)
      for (let y = box.y + 8; y < box.y + Math.min(box.height, 200); y += 24) {
        await page.mouse.move(x, y);
        const over = await page.evaluate(() => {
          const t = document.querySelector('.tooltip');
          return t ? t.scrollWidth - t.clientWidth : null;
        });
        if (over !== null) widest = Math.max(widest, over);
      }
    assert.ok(widest >= 0, 'a lane tooltip was shown');
    assert.equal(widest, 0, 'its text stays inside its box');
    assert.deepEqual(w.problems(), []);
  });

  it('search counts "1 step"; the sample lifecycle legend shows its colours', async () => {
    const w = await openPage(browser);
    const { page } = w;
    const first = Number((await api<RolloutTable>('rollout/3/summary')).rows[0]!.sample_index);
    await page.goto(`${served.url}#/rollout/3/sample/${first}`);
    await page.waitForSelector('[data-testid=lifecycle-legend]');
    const swatches = await page.$$eval('[data-testid=lifecycle-legend] .swatch', (els) => els.map((e: any) => getComputedStyle(e).backgroundColor));
    assert.equal(swatches.length, 3);
    assert.equal(new Set(swatches).size, 3, `three colours: ${swatches}`);
    await page.fill('input[placeholder^="search all steps"]', `3:${first}`);
    await page.waitForFunction(() => /\(\d+ ms\)/.test(document.querySelector('.search-status')?.textContent ?? ''), undefined, { timeout: 20_000 });
    assert.match((await page.textContent('.search-status'))!, / in 1 step \(/);
    assert.deepEqual(w.problems(), []);
  });

  it('engine charts break the line over silences, keep restart labels off the curves, and colour each engine as its legend does', async () => {
    const w = await openPage(browser);
    const { page } = w;
    await page.goto(`${served.url}#/?cat=sglang&q=latency&run=run`);
    const chart = '.chart-panel[data-metric="sglang_e2e_latency_mean_s"]';
    await page.waitForSelector(`${chart} .uplot[data-record-gaps]`);
    const gaps = JSON.parse((await page.getAttribute(`${chart} .uplot`, 'data-record-gaps'))!) as Record<string, number>;
    assert.ok(Object.values(gaps).some((n) => n > 0), `a silence of minutes is a gap, not a ramp: ${JSON.stringify(gaps)}`);
    const marked = await page.getAttribute(chart, 'data-markers');
    assert.ok(marked, 'the demo restarts an engine');
    const { plotTop, boxes } = JSON.parse((await page.getAttribute(`${chart} .uplot`, 'data-marker-boxes'))!) as { plotTop: number; boxes: number[][] };
    assert.ok(boxes.length > 0);
    for (const [, , , bottom] of boxes) assert.ok(bottom! <= plotTop, `restart labels sit above the plot: ${bottom} > ${plotTop}`);
    for (let i = 0; i < boxes.length; i++)
      for (let j = i + 1; j < boxes.length; j++) {
        const [a, b] = [boxes[i]!, boxes[j]!];
        assert.ok(a[2]! < b[0]! || b[2]! < a[0]! || a[3]! <= b[1]! || b[3]! <= a[1]!, `labels ${i} and ${j} do not overlap`);
      }
    // Hiding an engine does not recolour the others: each line keeps its legend swatch's colour.
    await page.locator('.engine-legend label').first().locator('input').uncheck();
    await page.waitForTimeout(300);
    const legend = await page.$$eval('.engine-legend label:has(.swatch)', (ls) =>
      Object.fromEntries(ls.map((l: any) => [l.textContent.trim(), getComputedStyle(l.querySelector('.swatch')).backgroundColor])),
    );
    const lines = await page.$$eval(`${chart} .u-legend .u-series`, (ss) =>
      ss.slice(1).map((s: any) => [s.querySelector('.u-label').textContent.replace(/^https?:\/\//, ''), getComputedStyle(s.querySelector('.u-marker')).borderColor]),
    );
    assert.ok(lines.length > 1);
    for (const [label, colour] of lines) assert.equal(colour, legend[label!], `${label}: line and legend agree`);
    assert.deepEqual(w.problems(), []);
  });

  it('the batch anatomy has a time axis with ticks and rows of at least 6 px that scroll under it', async () => {
    const w = await openPage(browser);
    const { page } = w;
    await page.goto(`${served.url}#/rollout/3`);
    await page.waitForSelector('[data-testid=anatomy-axis][data-ticks]');
    const ticks = (await page.getAttribute('[data-testid=anatomy-axis]', 'data-ticks'))!.split(' ');
    assert.ok(ticks.length >= 3, `ticks ${ticks}`);
    assert.equal(ticks[0], '+0:00');
    const rows = page.locator('[data-testid=anatomy-rows]');
    const rowH = Number(await rows.getAttribute('data-row-height'));
    assert.ok(rowH >= 6, `row height ${rowH}`);
    const n = Number((await page.textContent('[data-testid=batch-anatomy] h3'))!.match(/(\d+) samples/)![1]);
    assert.equal(Math.round((await rows.boundingBox())!.height), n * rowH + 4);
    const scroll = await page.$eval('[data-testid=anatomy-scroll]', (e: any) => [e.scrollHeight, e.clientHeight]);
    assert.ok(scroll[0]! > scroll[1]!, `a tall batch scrolls: ${scroll}`);
    // The axis stays in view while the rows scroll.
    await page.$eval('[data-testid=anatomy-scroll]', (e: any) => (e.scrollTop = 300));
    const [axisTop, boxTop] = await page.evaluate(() => [
      document.querySelector('[data-testid=anatomy-axis]').getBoundingClientRect().top,
      document.querySelector('[data-testid=anatomy-scroll]').getBoundingClientRect().top,
    ]);
    assert.ok(Math.abs(axisTop - boxTop) < 2, `axis sticks to the top: ${axisTop} vs ${boxTop}`);
    assert.deepEqual(w.problems(), []);
  });

  it('a flipped group compares a success with a failure (the better side’s best against the worse side’s worst)', async () => {
    const w = await openPage(browser);
    const { page } = w;
    const d = await api<StepDiff>('rlsight/diff/steps?a=3&b=3&run_a=run&run_b=collapse');
    assert.ok(d.flipped.length > 0, 'the demo flips groups between the runs');
    const rewards = {
      run: await api<RolloutTable>('runs/run/rollout/3/summary'),
      collapse: await api<RolloutTable>('runs/collapse/rollout/3/summary'),
    };
    const reward = (run: 'run' | 'collapse', i: number) => Number(rewards[run].rows.find((r) => Number(r.sample_index) === i)!.reward);
    await page.goto(`${served.url}#/diff?a=3&b=3&run_a=run&run_b=collapse`);
    await page.waitForSelector('[data-testid=flipped] tbody tr');
    const links = await page.$$eval('[data-testid=flipped] [data-testid=compare-flip]', (as) => as.map((a: any) => a.getAttribute('href')));
    assert.equal(links.length, d.flipped.length);
    for (const link of links) {
      const q = new URLSearchParams(link.slice(link.indexOf('?') + 1));
      const ra = reward('run', Number(q.get('a')!.split(':')[1]));
      const rb = reward('collapse', Number(q.get('b')!.split(':')[1]));
      assert.notEqual(ra, rb, `${link}: a ${ra} against b ${rb}`);
      assert.ok(Math.max(ra, rb) > 0, `${link}: not two failures`);
    }
    assert.match((await page.textContent('[data-testid=compare-flip]'))!, /A's (worst|best) with B's (best|worst)/);
    assert.equal(hashPath(page), '#/diff');
    assert.deepEqual(w.problems(), []);
  });

  // last: it adds a step to the first run
  it('the step anatomy of two runs takes in the steps a followed run writes, without a reload', async () => {
    const w = await openPage(browser);
    const { page } = w;
    await page.goto(`${served.url}#/timeline?run=run&runs=run,collapse`);
    await page.waitForSelector('[data-testid=runs-anatomy] .anatomy-side[data-run=run] .anatomy-step');
    const newest = () => page.$$eval('[data-testid=runs-anatomy] .anatomy-side[data-run=run] .anatomy-step', (els) => Math.max(...els.map((e: any) => Number(e.getAttribute('data-step')))));
    const before = await newest();
    await appendDemoStep(served.runDir);
    await page.waitForFunction((b) => [...document.querySelectorAll('[data-testid=runs-anatomy] .anatomy-side[data-run=run] .anatomy-step')].some((e: any) => Number(e.getAttribute('data-step')) > b), before, { timeout: 30_000 });
    assert.ok((await newest()) > before);
    assert.deepEqual(w.problems(), []);
  });
});

declare const location: { hash: string };
declare function getComputedStyle(e: unknown): { backgroundColor: string; borderColor: string };
