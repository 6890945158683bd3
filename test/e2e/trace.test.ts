// The Trace view in headless Chromium over both slime fixtures: rows, [P]/[D] lanes, filter, sort,
// search, zoom, details, the open-span reason and the click-through to the sample.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
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

  it('current layout: rows, [P]/[D] lanes, filter, sort, search, zoom, details', async () => {
    const s = await serveSlime(fixturePath('slime-trace'));
    servers.push(s.child);
    const w = await openPage(browser);
    const { page } = w;
    await page.goto(`${s.url}#/trace/0`);
    await page.waitForSelector('[data-testid=trace-canvas][data-drawn-rows]');
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
    const s = await serveSlime(fixturePath('slime-trace'));
    servers.push(s.child);
    const w = await openPage(browser);
    const { page } = w;
    await page.goto(`${s.url}#/trace/1`);
    await page.waitForSelector('[data-testid=trace-canvas][data-drawn-rows]');
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
    await page.mouse.move(box.x + LABEL_W + 2, box.y + 60);
    await page.mouse.down();
    await page.mouse.move(box.x + LABEL_W + 2 + (box.width - LABEL_W) / 3, box.y + 60, { steps: 4 });
    await page.mouse.up();
    await page.waitForFunction(() => location.hash.includes('tz='));
    const zoomed = (await canvasState(page)).view;
    await page.mouse.click(box.x + LABEL_W + 4, box.y + AXIS_H + 8);
    await page.waitForSelector('[data-testid=trace-attrs]');
    await page.waitForFunction(() => /span=\d+(%3A|:)\d+/.test(location.hash));
    const attrs = await page.textContent('[data-testid=trace-attrs]');
    await page.reload();
    await page.waitForSelector('[data-testid=trace-attrs]');
    assert.equal(await page.textContent('[data-testid=trace-attrs]'), attrs, 'the same span is selected');
    assert.equal((await canvasState(page)).view, zoomed, 'the same zoom');
    assert.deepEqual(w.problems(), []);
  });

  it("attr values as slime's _json_safe renders them: numpy float32 88.5 is the string \"88.5\"", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rlsight-trace-types-'));
    try {
      mkdirSync(join(dir, 'rollout_data'));
      const attrs = { e2e_latency: np('f4', 88.5), queue_time: np('f8', 0.25), decode_throughput: np('i8', 7), finish_reason: 'stop' };
      await saveTorch({ rollout_id: 0, samples: [tracedSample(0, attrs)] } as never, join(dir, 'rollout_data', '0.pt'));
      const s = await serveSlime(dir);
      servers.push(s.child);
      const w = await openPage(browser);
      const { page } = w;
      await page.goto(`${s.url}#/trace/0`);
      await page.waitForSelector('[data-testid=trace-canvas][data-drawn-rows]');
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

  it('legacy flat PD: [P]/[D] lanes, the open span and its reason, click-through to the sample', async () => {
    const s = await serveSlime(fixturePath('slime-trace-legacy-pd'));
    servers.push(s.child);
    const w = await openPage(browser);
    const { page } = w;
    await page.goto(`${s.url}#/trace/1`);
    await page.waitForSelector('[data-testid=trace-canvas][data-drawn-rows]');
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
