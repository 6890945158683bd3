// The Trace view in headless Chromium over both slime fixtures: rows, [P]/[D] lanes, filter, sort,
// search, zoom, details, the open-span reason and the click-through to the sample; the same by keyboard, and
// the contrast of its text in the app (dark) and on the page `rlsight trace` writes (light).
import assert from 'node:assert/strict';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Browser } from 'playwright-core';
import { saveTorch } from '../../src/formats/torch/writer.ts';
import { fixturePath } from '../support/fixtures.ts';
import { np, tracedSample } from '../support/numpyScalar.ts';
import { ensureWebBuilt, hasChromium, hashPath, launch, openPage, REPO, screenshot } from './harness.ts';
import { ensureCliBuilt, RLSIGHT_BIN } from '../support/cli.ts';

// bin/rlsight.mjs runs dist/ as built: rebuild it first when the sources are newer.
ensureCliBuilt();

declare const document: any;
declare const location: any;
declare const window: any;
declare const getComputedStyle: any;
declare const requestAnimationFrame: any;

async function serveSlime(dir: string): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(process.execPath, [RLSIGHT_BIN, 'serve', '--dump-details', dir, '--port', '0'], { cwd: REPO, stdio: ['ignore', 'pipe', 'pipe'] });
  const url = await new Promise<string>((ok, fail) => {
    let log = '';
    const t = setTimeout(() => fail(new Error(`server did not start: ${log}`)), 60_000);
    child.stdout!.on('data', (d) => {
      log += d;
      const m = /serving (http:\/\/\S+)/.exec(log);
      if (m) {
        clearTimeout(t);
        ok(m[1]);
      }
    });
    child.stderr!.on('data', (d) => (log += d));
    child.once('exit', (code) => fail(new Error(`server exited ${code}: ${log}`)));
  });
  return { url, child };
}

const LABEL_W = 190;
const AXIS_H = 26;
const LANE_H = 16;

async function canvasState(page: import('playwright-core').Page): Promise<Record<string, string>> {
  return page.evaluate(() => ({ ...document.querySelector('[data-testid=trace-canvas]').dataset }));
}

/**
 * The lowest WCAG contrast ratio of the visible text under `selector` (each element and its descendants): the
 * computed colour, faded by opacity, against the background composited up its ancestors (`base` below them all),
 * as the accessibility review's contrast.mjs measures it.
 */
async function lowestContrast(page: import('playwright-core').Page, selector: string, base: number[]): Promise<{ ratio: number; color: string; text: string }> {
  // Sent as source: the test runner's transform would name these functions with a helper the page lacks.
  return page.evaluate(`(${CONTRAST_JS})(${JSON.stringify(selector)}, ${JSON.stringify(base)})`);
}

const CONTRAST_JS = `function (selector, base) {
  const parse = (s) => {
    const m = /rgba?\\(([^)]+)\\)/.exec(s);
    if (!m) return null;
    const v = m[1].split(/[ ,/]+/).filter(Boolean).map(Number);
    return [v[0], v[1], v[2], v.length > 3 ? v[3] : 1];
  };
  const lum = ([r, g, b]) => {
    const f = (c) => ((c /= 255) <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4);
    return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
  };
  const blend = (top, bot) => [0, 1, 2].map((i) => top[i] * top[3] + bot[i] * (1 - top[3])).concat(1);
  const bgOf = (el) => {
    const stack = [];
    for (let e = el; e; e = e.parentElement) {
      const c = parse(getComputedStyle(e).backgroundColor);
      if (c && c[3] > 0) {
        stack.push(c);
        if (c[3] >= 1) break;
      }
    }
    let bg = [...base, 1];
    for (let i = stack.length - 1; i >= 0; i--) bg = blend(stack[i], bg);
    return bg;
  };
  let worst = { ratio: Infinity, color: '', text: '' };
  for (const top of document.querySelectorAll(selector)) {
    for (const el of [top, ...top.querySelectorAll('*')]) {
      const own = [...el.childNodes].filter((n) => n.nodeType === 3 && n.textContent.trim()).map((n) => n.textContent.trim()).join(' ');
      const r = el.getBoundingClientRect();
      if (!own || r.width === 0 || r.height === 0) continue;
      const cs = getComputedStyle(el);
      let o = 1;
      for (let e = el; e; e = e.parentElement) o *= Number(getComputedStyle(e).opacity);
      const bg = bgOf(el);
      const c = parse(cs.color);
      const fg = blend([c[0], c[1], c[2], c[3] * o], bg);
      const [a, b] = [lum(fg), lum(bg)];
      const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
      if (ratio < worst.ratio) worst = { ratio, color: cs.color, text: own.slice(0, 40) };
    }
  }
  return worst;
}`;

/** The explorer's text that must read at 4.5:1: the summary, the notes, what is selected, the details' labels, the legend. */
const TRACE_TEXT = ['[data-testid=trace-summary]', '.trace-notes', '[data-testid=trace-said]', '.trace-details dt', '[data-testid=trace-legend]'];

describe('Trace view (headless Chromium)', { skip: hasChromium ? false : 'Debian chromium is not installed at /usr/bin/chromium' }, () => {
  let browser: Browser;
  const servers: ChildProcess[] = [];
  before(async () => {
    ensureWebBuilt();
    browser = await launch();
  });
  after(async () => {
    await browser?.close();
    for (const c of servers) c.kill('SIGTERM');
  });

  /** Serves the slime dumps of `dir`, opens `#/trace/STEP` and waits for its first drawing. */
  const openTrace = async (dir: string, step: number) => {
    const s = await serveSlime(dir);
    servers.push(s.child);
    const w = await openPage(browser);
    await w.page.goto(`${s.url}#/trace/${step}`);
    await w.page.waitForSelector('[data-testid=trace-canvas][data-drawn-rows]');
    return { s, w, page: w.page };
  };

  it('current layout: rows, [P]/[D] lanes, filter, sort, search, zoom, details', async () => {
    const { s, w, page } = await openTrace(fixturePath('slime-trace'), 0);
    let st = await canvasState(page);
    assert.equal(st.drawnRows, '12');
    assert.equal(st.pdLanes, '[D],[P]');
    await screenshot(page, 'trace-current');
    // Status filter: one truncated sample.
    await page.selectOption('[data-testid=trace-status]', 'truncated');
    await page.waitForFunction(() => document.querySelector('[data-testid=trace-canvas]').dataset.drawnRows === '1');
    await page.selectOption('[data-testid=trace-status]', '');
    // Search by SGLang request id: the one sample that made that request.
    const answer: any = await (await fetch(new URL('/api/rlsight/trace?rollout_id=0', s.url))).json();
    const target = answer.rows.find((r: any) => r.sample_index === 5);
    await page.fill('[data-testid=trace-search]', target.request_ids[0]);
    await page.waitForFunction(() => document.querySelector('[data-testid=trace-canvas]').dataset.drawnRows === '1');
    assert.match(await page.textContent('[data-testid=trace-summary]') ?? '', /^1 shown \/ 12 traced samples/);
    await page.fill('[data-testid=trace-search]', '');
    // Sort by duration, longest first: the first row drawn is the longest sample.
    await page.selectOption('[data-testid=trace-sort]', 'duration');
    await page.check('[data-testid=trace-desc]');
    await page.waitForTimeout(100);
    // Zoom: drag over the first tenth of the axis.
    const box = (await page.locator('[data-testid=trace-canvas]').boundingBox())!;
    const before = (await canvasState(page)).view.split(',').map(Number);
    await page.mouse.move(box.x + LABEL_W + 10, box.y + 60);
    await page.mouse.down();
    await page.mouse.move(box.x + LABEL_W + 10 + (box.width - LABEL_W) / 10, box.y + 60, { steps: 4 });
    await page.mouse.up();
    await page.waitForTimeout(100);
    const zoomed = (await canvasState(page)).view.split(',').map(Number);
    assert.ok(zoomed[1] - zoomed[0] < (before[1] - before[0]) / 5, `zoomed ${zoomed} from ${before}`);
    await page.click('[data-testid=trace-fit]');
    // Details: click the first span of the first row (generate_and_rm_group at lane 0).
    st = await canvasState(page);
    await page.mouse.click(box.x + LABEL_W + 4, box.y + AXIS_H + 8);
    await page.waitForSelector('[data-testid=trace-attrs]');
    assert.match(await page.textContent('[data-testid=trace-attrs]') ?? '', /start_attrs/);
    await screenshot(page, 'trace-current-details');
    assert.deepEqual(w.problems(), []);
  });

  it('search finds span attributes; zoom and the selected span are in the URL and survive a reload; long labels end in an ellipsis', async () => {
    const { w, page } = await openTrace(fixturePath('slime-trace'), 1);
    const total = Number((await canvasState(page)).drawnRows);
    assert.ok(Number((await canvasState(page)).cutLabels) > 0, 'labels longer than their span are shortened with an ellipsis');
    await page.fill('[data-testid=trace-search]', 'TimeoutError');
    await page.waitForFunction((n) => { const d = document.querySelector('[data-testid=trace-canvas]').dataset.drawnRows; return d !== String(n); }, total);
    const found = Number((await canvasState(page)).drawnRows);
    assert.ok(found >= 1 && found < total, `an attr value finds its samples: ${found} of ${total}`);
    await page.fill('[data-testid=trace-search]', '');
    await page.waitForFunction((n) => document.querySelector('[data-testid=trace-canvas]').dataset.drawnRows === String(n), total);
    // Zoom by dragging, then pick the first span: both reach the URL.
    const box = (await page.locator('[data-testid=trace-canvas]').boundingBox())!;
    const whole = (await canvasState(page)).view;
    await page.mouse.move(box.x + LABEL_W + 2, box.y + 60);
    await page.mouse.down();
    await page.mouse.move(box.x + LABEL_W + 2 + (box.width - LABEL_W) / 3, box.y + 60, { steps: 4 });
    await page.mouse.up();
    await page.waitForFunction(() => location.hash.includes('tz='));
    // the URL may be written before the chart has drawn the new window
    await page.waitForFunction((v) => document.querySelector('[data-testid=trace-canvas]').dataset.view !== v, whole);
    const zoomed = (await canvasState(page)).view;
    await page.mouse.click(box.x + LABEL_W + 4, box.y + AXIS_H + 8);
    await page.waitForSelector('[data-testid=trace-attrs]');
    await page.waitForFunction(() => /span=\d+(%3A|:)\d+/.test(location.hash));
    const attrs = await page.textContent('[data-testid=trace-attrs]');
    await page.reload();
    await page.waitForSelector('[data-testid=trace-attrs]');
    assert.equal(await page.textContent('[data-testid=trace-attrs]'), attrs, 'the same span is selected');
    await page.waitForFunction((v) => document.querySelector('[data-testid=trace-canvas]').dataset.view === v, zoomed, { timeout: 10_000 }).catch(() => {});
    assert.equal((await canvasState(page)).view, zoomed, 'the same zoom');
    assert.deepEqual(w.problems(), []);
  });

  it('once zoomed, Shift+wheel, a sideways swipe and the arrow keys pan; the hint says how; a legend; root-level events not in the orphan colour', async () => {
    const { s, w, page } = await openTrace(fixturePath('slime-trace'), 1);
    const hint = (await page.textContent('[data-testid=trace-hint]')) ?? '';
    assert.match(hint, /Ctrl\+wheel to zoom/);
    assert.match(hint, /Shift\+wheel or a sideways swipe pans/);
    assert.match(hint, /←\/→ pan/);
    const legend = (await page.textContent('[data-testid=trace-legend]')) ?? '';
    for (const words of ['open span', 'orphan end', '[P]', '[D]', 'forward']) assert.ok(legend.includes(words), `legend: ${legend}`);
    const view = async (): Promise<number[]> => (await canvasState(page)).view.split(',').map(Number);
    const fitted = await view();
    const box = (await page.locator('[data-testid=trace-canvas]').boundingBox())!;
    // not zoomed: there is nothing to pan to
    await page.mouse.move(box.x + LABEL_W + 100, box.y + 80);
    await page.mouse.wheel(200, 0);
    await page.waitForTimeout(100);
    assert.deepEqual(await view(), fitted);
    // zoom into the middle fifth, then pan later with a sideways swipe, Shift+wheel and the → key
    await page.mouse.move(box.x + LABEL_W + (box.width - LABEL_W) * 0.4, box.y + 60);
    await page.mouse.down();
    await page.mouse.move(box.x + LABEL_W + (box.width - LABEL_W) * 0.6, box.y + 60, { steps: 4 });
    await page.mouse.up();
    await page.waitForFunction(() => location.hash.includes('tz='));
    const z = await view();
    const width = z[1] - z[0];
    assert.ok(width < (fitted[1] - fitted[0]) / 4);
    await page.mouse.move(box.x + LABEL_W + 100, box.y + 80);
    await page.mouse.wheel(100, 0);
    await page.waitForFunction((v0) => Number(document.querySelector('[data-testid=trace-canvas]').dataset.view.split(',')[0]) > v0 + 1e-6, z[0]);
    const swiped = await view();
    assert.ok(Math.abs(swiped[1] - swiped[0] - width) < 1e-5, 'a pan keeps the zoom');
    await page.keyboard.down('Shift');
    await page.mouse.wheel(0, 100);
    await page.keyboard.up('Shift');
    await page.waitForFunction((v0) => Number(document.querySelector('[data-testid=trace-canvas]').dataset.view.split(',')[0]) > v0 + 1e-6, swiped[0]);
    const shifted = await view();
    await page.focus('[data-testid=trace-canvas]');
    await page.keyboard.press('ArrowLeft');
    await page.waitForFunction((v0) => Number(document.querySelector('[data-testid=trace-canvas]').dataset.view.split(',')[0]) < v0 - 1e-6, shifted[0]);
    const keyed = await view();
    assert.ok(Math.abs(shifted[0] - keyed[0] - width * 0.1) < 1e-5, `← pans a tenth of the view: ${shifted} → ${keyed}`);
    // a plain vertical wheel still scrolls the rows, never the time
    await page.mouse.wheel(0, 100);
    await page.waitForTimeout(100);
    assert.deepEqual(await view(), keyed);
    await screenshot(page, 'trace-panned');

    // Sample 16's partial_rollout_buffer_enqueue has no parent span (slime records it at the root): it is drawn
    // in its name's colour, not the orphan red.
    await page.click('[data-testid=trace-fit]');
    await page.fill('[data-testid=trace-search]', 'partial_rollout_buffer_enqueue');
    await page.waitForFunction(() => document.querySelector('[data-testid=trace-canvas]').dataset.drawnRows === '4');
    const answer: any = await (await fetch(new URL('/api/rlsight/trace?rollout_id=1', s.url))).json();
    const first = answer.rows.filter((r: any) => r.items.some((i: any) => i.name === 'partial_rollout_buffer_enqueue')).sort((a: any, b: any) => a.start - b.start || a.row - b.row)[0];
    const point = first.items.find((i: any) => i.name === 'partial_rollout_buffer_enqueue');
    assert.equal(point.orphan_parent, true);
    const [v0, v1] = await view();
    const px = LABEL_W + ((point.start - v0) / (v1 - v0)) * (box.width - LABEL_W);
    const py = AXIS_H + point.lane * LANE_H + 2 + 6;
    const pixel = (x: number, y: number): Promise<number[]> =>
      page.evaluate(([x, y]: number[]) => {
        const c = document.querySelector('[data-testid=trace-canvas]');
        const dpr = window.devicePixelRatio || 1;
        return [...c.getContext('2d').getImageData(Math.round(x * dpr), Math.round(y * dpr), 1, 1).data].slice(0, 3);
      }, [x, y]);
    const rgb = await pixel(px, py);
    // the name's colour as the browser paints it (a span's hue, darker), read off a scratch canvas; the hue is the
    // explorer's hash of the name (explorer.ts' `hue`: that module is the browser's, so it is written out here)
    let hash = 0;
    for (let i = 0; i < point.name.length; i++) hash = (hash * 31 + point.name.charCodeAt(i)) | 0;
    const named: number[] = await page.evaluate((h: number) => {
      const ctx = document.createElement('canvas').getContext('2d');
      ctx.fillStyle = `hsl(${h} 70% 28%)`;
      ctx.fillRect(0, 0, 1, 1);
      return [...ctx.getImageData(0, 0, 1, 1).data].slice(0, 3);
    }, Math.abs(hash) % 360);
    const near = (a: number[], b: number[]) => a.every((c, i) => Math.abs(c - b[i]) <= 6);
    assert.ok(near(rgb, named), `a root-level event is drawn in its name's colour ${named}, not the orphan red: ${rgb}`);
    // and the diamond is there: 8 px to its right (past its 4 px half-width) the canvas shows something else
    const beside = await pixel(px + 8, py);
    assert.ok(!near(beside, named), `the diamond is drawn at ${px},${py}: ${rgb}, beside it ${beside}`);
    assert.deepEqual(w.problems(), []);
  });

  it("attr values as slime's _json_safe renders them: numpy float32 88.5 is the string \"88.5\"", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rlsight-trace-types-'));
    try {
      mkdirSync(join(dir, 'rollout_data'));
      const attrs = { e2e_latency: np('f4', 88.5), queue_time: np('f8', 0.25), decode_throughput: np('i8', 7), finish_reason: 'stop' };
      await saveTorch({ rollout_id: 0, samples: [tracedSample(0, attrs)] } as never, join(dir, 'rollout_data', '0.pt'));
      const { w, page } = await openTrace(dir, 0);
      const box = (await page.locator('[data-testid=trace-canvas]').boundingBox())!;
      await page.mouse.click(box.x + LABEL_W + 4, box.y + AXIS_H + 8);
      await page.waitForSelector('[data-testid=trace-attrs]');
      const shown = (await page.textContent('[data-testid=trace-attrs]')) ?? '';
      assert.match(shown, /e2e_latency\W+"88\.5"/);
      assert.match(shown, /decode_throughput\W+"7"/);
      assert.match(shown, /queue_time\W+0\.25\b/);
      await screenshot(page, 'trace-json-safe-values');
      assert.deepEqual(w.problems(), []);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('by keyboard: Tab into the sample list, arrows to a span, Enter shows its details, Esc back, Tab to "open sample"; its text reads at 4.5:1', async () => {
    const { s, w, page } = await openTrace(fixturePath('slime-trace'), 0);
    const canvas = await page.evaluate(() => ({ role: document.querySelector('[data-testid=trace-canvas]').getAttribute('role'), label: document.querySelector('[data-testid=trace-canvas]').getAttribute('aria-label') }));
    assert.equal(canvas.role, 'img');
    assert.match(canvas.label ?? '', /request traces of 12 samples, rollout 0/);
    // From the search field, Tab until the sample list has focus (the toolbar and the chart come first).
    await page.focus('[data-testid=trace-search]');
    const focusRole = (): Promise<string | null> => page.evaluate(() => document.activeElement?.getAttribute('role') ?? null);
    for (let i = 0; i < 12 && (await focusRole()) !== 'grid'; i++) await page.keyboard.press('Tab');
    assert.equal(await focusRole(), 'grid', 'Tab reaches the list of traced samples');
    // Samples are sorted by start as drawn; the fifth (row 4) holds sglang_generate, its third item in time order.
    const answer: any = await (await fetch(new URL('/api/rlsight/trace?rollout_id=0', s.url))).json();
    const order = [...answer.rows].sort((a: any, b: any) => a.start - b.start || a.row - b.row);
    const row = order[4];
    const items = [...row.items].sort((a: any, b: any) => a.start - b.start || a.lane - b.lane || a.id - b.id);
    const item = items[2];
    assert.equal(item.name, 'sglang_generate');
    // Where the chart draws that span, to see the selection drawn there.
    const plotW = (await page.locator('[data-testid=trace-canvas]').boundingBox())!.width - LABEL_W;
    const [v0, v1] = (await canvasState(page)).view.split(',').map(Number);
    const y = AXIS_H + order.slice(0, 4).reduce((a: number, r: any) => a + r.lanes.length * LANE_H + 6, 0) + item.lane * LANE_H + 2;
    const x0 = LABEL_W + ((item.start - v0) / (v1 - v0)) * plotW;
    const x1 = LABEL_W + ((item.end - v0) / (v1 - v0)) * plotW;
    const marked = (): Promise<number> =>
      page.evaluate(([x0, x1, y]: number[]) => {
        const c = document.querySelector('[data-testid=trace-canvas]');
        const dpr = window.devicePixelRatio || 1;
        const { data } = c.getContext('2d').getImageData(Math.round((x0 - 2) * dpr), Math.round((y - 2) * dpr), Math.round((x1 - x0 + 4) * dpr), Math.round(16 * dpr));
        let n = 0;
        for (let i = 0; i < data.length; i += 4) if (Math.abs(data[i] - 0xb5) <= 24 && Math.abs(data[i + 1] - 0x50) <= 24 && Math.abs(data[i + 2] - 0x2a) <= 24) n++;
        return n;
      }, [x0, x1, y]);
    assert.equal(await marked(), 0, 'nothing is outlined before a selection');
    for (const key of ['ArrowDown', 'ArrowDown', 'ArrowDown', 'ArrowDown', 'ArrowRight', 'ArrowRight', 'ArrowRight']) await page.keyboard.press(key);
    await page.waitForFunction((want) => location.hash.includes(want), `span=${row.row}%3A${item.id}`);
    // announced politely: its name, start, duration and row
    const said = (await page.textContent('[data-testid=trace-said]')) ?? '';
    assert.match(said, new RegExp(`^sglang_generate, span, start .+, duration .+ · sample #${row.sample_index}, row 5 of 12$`));
    assert.equal(await page.getAttribute('[data-testid=trace-said]', 'aria-live'), 'polite');
    await page.waitForFunction(() => new Promise((ok) => requestAnimationFrame(() => ok(true))));
    assert.ok((await marked()) > 20, 'the selected span is outlined on the chart as a click outlines it');
    await page.keyboard.press('Enter');
    await page.waitForFunction(() => document.activeElement?.dataset?.testid === 'trace-details-title');
    await page.waitForSelector('[data-testid=trace-attrs]');
    const details: any = await (await fetch(new URL(`/api/rlsight/trace/details?rollout_id=0&row=${row.row}`, s.url))).json();
    assert.ok(((await page.textContent('[data-testid=trace-details]')) ?? '').includes('sglang_generate (span)'));
    assert.equal(await page.textContent('[data-testid=trace-attrs]'), JSON.stringify(details.items[item.id].attrs, null, 2));
    assert.match((await page.textContent('[data-testid=trace-attrs]')) ?? '', /max_new_tokens/);
    await screenshot(page, 'trace-keyboard-details');
    // Esc goes back to the list, on the same span; Enter comes back into the details.
    await page.keyboard.press('Escape');
    assert.equal(await focusRole(), 'grid');
    await page.keyboard.press('Enter');
    await page.waitForFunction(() => document.activeElement?.dataset?.testid === 'trace-details-title');
    // The text of the view on the dark theme, with details open.
    for (const sel of TRACE_TEXT) {
      const c = await lowestContrast(page, sel, [0x12, 0x12, 0x12]);
      assert.ok(c.ratio >= 4.5, `${sel}: "${c.text}" in ${c.color} is ${c.ratio.toFixed(2)}:1`);
    }
    await page.keyboard.press('Tab');
    assert.equal(await page.evaluate(() => document.activeElement?.dataset?.testid), 'trace-open-sample');
    await page.keyboard.press('Enter');
    await page.waitForFunction((want) => location.hash.startsWith(want), `#/rollout/0/sample/${row.sample_index}`);
    await page.waitForSelector('[data-testid=sample-title]');
    assert.deepEqual(w.problems(), []);
  });

  it('the page `rlsight trace` writes: light text at 4.5:1, and the sample list selects by keyboard there too', async () => {
    const out = mkdtempSync(join(tmpdir(), 'rlsight-trace-page-'));
    try {
      const r = spawnSync(process.execPath, [RLSIGHT_BIN, 'trace', join(fixturePath('slime-trace'), 'rollout_data', '0.pt'), '--no-serve', '--out', out], { cwd: REPO, encoding: 'utf8', timeout: 60_000 });
      assert.equal(r.status, 0, r.stderr);
      const html = /html: (\S+)/.exec(r.stdout)![1]!;
      const w = await openPage(browser);
      const { page } = w;
      await page.goto(`file://${html}`);
      await page.waitForSelector('[data-testid=trace-canvas][data-drawn-rows]');
      await page.focus('[data-testid=trace-grid]');
      await page.keyboard.press('ArrowRight');
      await page.keyboard.press('Enter');
      await page.waitForSelector('[data-testid=trace-attrs]');
      assert.match((await page.textContent('[data-testid=trace-said]')) ?? '', /^generate_and_rm_group, span, .* · sample #0, row 1 of 12$/);
      for (const sel of TRACE_TEXT) {
        const c = await lowestContrast(page, sel, [0xff, 0xff, 0xff]);
        assert.ok(c.ratio >= 4.5, `${sel}: "${c.text}" in ${c.color} is ${c.ratio.toFixed(2)}:1`);
      }
      await screenshot(page, 'trace-standalone-keyboard');
      assert.deepEqual(w.problems(), []);
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  });

  it('legacy flat PD: [P]/[D] lanes, the open span and its reason, click-through to the sample', async () => {
    const { s, w, page } = await openTrace(fixturePath('slime-trace-legacy-pd'), 1);
    assert.equal((await canvasState(page)).pdLanes, '[D],[P]');
    // Narrow to sample 14 (the cancelled tool call) and click its open span.
    await page.fill('[data-testid=trace-search]', 'tool_execution');
    await page.waitForFunction(() => document.querySelector('[data-testid=trace-canvas]').dataset.drawnRows === '1');
    const answer: any = await (await fetch(new URL('/api/rlsight/trace?rollout_id=1', s.url))).json();
    const row = answer.rows.find((r: any) => r.sample_index === 14);
    const open = row.items.find((i: any) => i.kind === 'open');
    const [v0, v1] = (await canvasState(page)).view.split(',').map(Number);
    const box = (await page.locator('[data-testid=trace-canvas]').boundingBox())!;
    const x = LABEL_W + ((open.start + open.end) / 2 - v0) / (v1 - v0) * (box.width - LABEL_W);
    await page.mouse.click(box.x + x, box.y + AXIS_H + open.lane * LANE_H + 8);
    await page.waitForSelector('[data-testid=trace-item-facts]');
    const facts = (await page.textContent('[data-testid=trace-item-facts]')) ?? '';
    assert.match(facts, /no span_end recorded; drawn up to ancestor end/);
    await screenshot(page, 'trace-legacy-open-span');
    await page.click('[data-testid=trace-open-sample]');
    await page.waitForFunction(() => location.hash.startsWith('#/rollout/1/sample/14'));
    assert.equal(hashPath(page), '#/rollout/1/sample/14');
    await page.waitForSelector('[data-testid=sample-title]');
    assert.deepEqual(w.problems(), []);
  });
});
