// Charts read from the keyboard (headless Chromium against `rlsight serve` on demo data): a focused Metrics chart says
// the value the API answers at the point the arrow keys move to, W/S/A/D/Esc zoom as in Compute Utilization, the
// per-token chart says each token's text and value and marks it in the text, and "peak" says what it found.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser } from 'playwright-core';
import { fmtNum } from '../../web/format.ts';
import { axisOf } from '../../web/views/metrics/catalog.ts';
import { hasChromium, hashParams, openPage, screenshot, type Served, serveDemo, startBrowserSuite, stopBrowserSuite } from './harness.ts';

declare const document: any;
declare const location: { hash: string };

const KEY = 'rollout/raw_reward';

describe('charts read from the keyboard (headless Chromium)', { skip: hasChromium ? false : 'Debian chromium is not installed at /usr/bin/chromium' }, () => {
  let served: Served;
  let browser: Browser;
  let meta: { rollout_ids: { train: number[] }; metric_keys: string[]; step_keys: string[] };

  before(async () => {
    ({ served, browser } = await startBrowserSuite(() => serveDemo({ steps: 4 })));
    meta = (await (await fetch(`${served.url}api/meta`)).json()) as typeof meta;
  });
  after(() => stopBrowserSuite({ served, browser }));

  const api = async <T>(path: string): Promise<T> => (await (await fetch(`${served.url}api/${path}`)).json()) as T;

  it('metrics: ←/→ read the API value at each point into a live region; the description summarises the series', async () => {
    assert.ok(meta.metric_keys.includes(KEY), `the demo logs ${KEY}`);
    const ax = axisOf(KEY, meta.step_keys);
    const series = (await api<Record<string, { x: number[]; y: (number | null)[] }>>(`metrics?keys=${encodeURIComponent(KEY)}&x=${encodeURIComponent(ax)}`))[KEY]!;
    assert.ok(series.x.length >= 3, 'the demo has a few steps');
    const w = await openPage(browser);
    const { page } = w;
    await page.goto(`${served.url}#/?cat=rollout`);
    const panel = page.locator(`.chart-panel[data-metric="${KEY}"]`);
    const box = panel.locator('.uplot-box');
    await box.locator('canvas').waitFor();
    assert.equal(await box.getAttribute('tabindex'), '0');
    assert.equal(await box.getAttribute('aria-label'), `${KEY} chart`);
    const summary = await panel.locator(`#${await box.getAttribute('aria-describedby')}`).textContent();
    const ys = series.y.filter((v): v is number => v !== null);
    assert.ok(
      summary!.startsWith(`${ys.length} points, ${ax} ${series.x[0]}–${series.x.at(-1)}, last ${fmtNum(ys.at(-1))}, min ${fmtNum(Math.min(...ys))}, max ${fmtNum(Math.max(...ys))}.`),
      summary!,
    );
    const readout = panel.locator('[data-testid=chart-readout]');
    assert.equal(await readout.getAttribute('aria-live'), 'polite');
    await box.focus();
    await page.keyboard.press('ArrowRight');
    await page.keyboard.press('ArrowRight');
    const n = series.x.length;
    const said = (i: number) => `${ax} ${series.x[i]} (point ${i + 1} of ${n}): ${KEY} ${fmtNum(series.y[i])}`;
    await page.waitForFunction(([sel, text]) => document.querySelector(sel)?.textContent === text, [`.chart-panel[data-metric="${KEY}"] [data-testid=chart-readout]`, said(1)] as const, { timeout: 5_000 });
    // the legend shows the same point, as for a pointer
    assert.equal(await panel.locator('.u-legend .u-series:nth-child(2) .u-value').textContent(), fmtNum(series.y[1]));
    await screenshot(page, 'metrics-keyboard-cursor');
    await page.keyboard.press('End');
    assert.equal(await readout.textContent(), said(n - 1));
    await page.keyboard.press('ArrowLeft');
    assert.equal(await readout.textContent(), said(n - 2));
    await page.keyboard.press('Home');
    assert.equal(await readout.textContent(), said(0));
    assert.deepEqual(w.problems(), []);
    await page.close();
  });

  it('metrics: W/S zoom and A/D pan on a focused chart or the page, Esc resets (Compute Utilization’s keys)', async () => {
    const w = await openPage(browser);
    const { page } = w;
    await page.goto(`${served.url}#/?cat=rollout`);
    const box = page.locator(`.chart-panel[data-metric="${KEY}"] .uplot-box`);
    await box.locator('canvas').waitFor();
    const zx = () => hashParams(page).get('zx')?.split(',').map(Number) ?? null;
    await box.focus();
    await page.keyboard.press('w');
    await page.waitForFunction(() => /zx=/.test(location.hash));
    const [a, b] = zx()!;
    await page.keyboard.press('d');
    await page.waitForFunction((prev) => new URLSearchParams(location.hash.split('?')[1]).get('zx') !== prev, `${a},${b}`);
    const [c, d] = zx()!;
    assert.ok(c! > a! && Math.abs(d! - c! - (b! - a!)) < 1e-6, `A/D pan keeps the span: ${a},${b} → ${c},${d}`);
    await page.keyboard.press('Escape');
    await page.waitForFunction(() => !/zx=/.test(location.hash));
    // with no chart focused, the page takes the same keys
    await box.evaluate((el: { blur(): void }) => el.blur());
    await page.keyboard.press('w');
    await page.waitForFunction(() => /zx=/.test(location.hash));
    await page.keyboard.press('s');
    await page.keyboard.press('s');
    await page.waitForFunction(() => !/zx=/.test(location.hash));
    assert.deepEqual(w.problems(), []);
    await page.close();
  });

  it('tokens: ←/→ on the per-token chart say the token and its value and mark it in the text; "peak" says what it found', async () => {
    const step = meta.rollout_ids.train.at(-1)!;
    const rows = (await api<{ rows: { sample_index: number }[] }>(`rollout/${step}/summary`)).rows;
    const idx = rows[0]!.sample_index;
    const tok = await api<{ prompt_len: number; total_len: number; token_text: string[]; lp_diff: (number | null)[] }>(`rollout/${step}/sample/${idx}/tokens`);
    assert.ok(tok.total_len <= 4096 && tok.lp_diff, 'a short sample with lp_diff, read whole');
    const w = await openPage(browser);
    const { page } = w;
    await page.goto(`${served.url}#/rollout/${step}/sample/${idx}?tab=tokens&color=lp_diff`);
    const box = page.locator('.tokens .uplot-box');
    await box.locator('canvas').waitFor();
    // once the whole sample is read the chart spans the response, from the first response token
    await page.waitForFunction(() => !document.querySelector('.token-controls .spinner'));
    await box.focus();
    await page.keyboard.press('Home');
    await page.keyboard.press('ArrowRight');
    const pos = tok.prompt_len + 1;
    const want = `position ${pos.toLocaleString('en-US')} ${JSON.stringify(tok.token_text[pos])}: lp_diff ${fmtNum(tok.lp_diff[1])}`;
    await page.waitForFunction((text) => document.querySelector('.tokens [data-testid=chart-readout]')?.textContent === text, want, { timeout: 5_000 });
    assert.equal(await page.locator('.tok.hot').getAttribute('data-pos'), String(pos), 'the token at the cursor is marked in the text');
    await screenshot(page, 'tokens-keyboard-cursor');
    // "peak", pressed from the keyboard, says the largest |lp_diff|, where it is and the token
    let best = 0;
    tok.lp_diff.forEach((v, i) => {
      if (v !== null && Math.abs(v) > Math.abs(tok.lp_diff[best] ?? 0)) best = i;
    });
    const peakPos = tok.prompt_len + best;
    await page.locator('[data-testid=peak]').focus();
    await page.keyboard.press('Enter');
    const status = page.locator('[data-testid=peak-said]');
    assert.equal(await status.getAttribute('role'), 'status');
    assert.equal(await status.textContent(), `peak lp_diff ${fmtNum(tok.lp_diff[best])} at position ${peakPos.toLocaleString('en-US')} ${JSON.stringify(tok.token_text[peakPos])}`);
    await screenshot(page, 'tokens-peak-said');
    assert.deepEqual(w.problems(), []);
    await page.close();
  });
});
