// A lane whose GPU sampler stopped for a while: its utilisation line breaks over the silence, not drawn
// straight across it.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Browser } from 'playwright-core';
import { hasChromium, openPage, screenshot, type Served, serveDemo, startBrowserSuite, stopBrowserSuite, type BrowserCanvas } from './harness.ts';

// Code passed to page.evaluate runs in the browser, where this name exists.
declare const document: any;

const UTIL_COLOR = '#4ea1ff';
/** The lane layout of web/views/timeline/layers/laneRow.ts and laneCanvas.tsx (CSS px). */
const LEFT = 118;
const RIGHT = 12;
const PHASE_H = 14;
const UTIL_H = 32;

interface GpuRow {
  ts: number;
  node: string;
  gpu: number;
}

describe('a stop in a lane\'s GPU samples (headless Chromium)', { skip: hasChromium ? false : 'Debian chromium is not installed at /usr/bin/chromium' }, () => {
  let served: Served;
  let browser: Browser;
  let lane = { node: '', gpu: 0 };
  let span = { lo: 0, hi: 0 };
  before(async () => {
    // The middle 30 % of one lane's samples are taken away, as a sampler stopped then restarted leaves them.
    const prepare = (runDir: string): void => {
      const dir = join(runDir, 'dashboard', 'gpu_util');
      const files = readdirSync(dir).filter((f) => f.endsWith('.jsonl'));
      const rows = files.flatMap((f) => readFileSync(join(dir, f), 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as GpuRow));
      lane = { node: rows[0]!.node, gpu: rows[0]!.gpu };
      const mine = rows.filter((r) => r.node === lane.node && r.gpu === lane.gpu).map((r) => r.ts);
      span = { lo: Math.min(...mine), hi: Math.max(...mine) };
      const cut = [span.lo + 0.35 * (span.hi - span.lo), span.lo + 0.65 * (span.hi - span.lo)];
      for (const f of files) {
        const kept = readFileSync(join(dir, f), 'utf8')
          .split('\n')
          .filter(Boolean)
          .filter((l) => {
            const r = JSON.parse(l) as GpuRow;
            return !(r.node === lane.node && r.gpu === lane.gpu && r.ts > cut[0]! && r.ts < cut[1]!);
          });
        writeFileSync(join(dir, f), kept.map((l) => `${l}\n`).join(''));
      }
    };
    ({ served, browser } = await startBrowserSuite(() => serveDemo({ steps: 2, prepare })));
  });
  after(() => stopBrowserSuite({ served, browser }));

  it('the utilisation line breaks over the stop and is drawn on both sides of it', async () => {
    const topo = (await (await fetch(`${served.url}api/timeline/topology`)).json()) as { lanes: { node: string; gpu: number; index: number }[] };
    const index = topo.lanes.find((l) => l.node === lane.node && l.gpu === lane.gpu)!.index;
    const w = await openPage(browser);
    const { page } = w;
    await page.goto(`${served.url}#/timeline?lanes=g:${index}&overlay=none&t0=${span.lo}&t1=${span.hi}`);
    await page.waitForSelector('[data-testid=lanes]');
    const top = Number(await page.getAttribute('.lane-canvas-wrap', 'data-lanes-top'));
    // util-coloured pixels of the lane's util band between fractions a and b of the window
    const strokeIn = (a: number, b: number): Promise<number> =>
      page.evaluate(
        ({ a, b, top, colour, LEFT, RIGHT, PHASE_H, UTIL_H }) => {
          const c = document.querySelector('[data-testid=lanes]') as BrowserCanvas;
          const k = c.width / (c as unknown as { getBoundingClientRect(): { width: number } }).getBoundingClientRect().width;
          const plot = c.width / k - LEFT - RIGHT;
          const x0 = Math.round((LEFT + plot * a) * k);
          const x1 = Math.round((LEFT + plot * b) * k);
          const y0 = Math.round((top + PHASE_H) * k);
          const y1 = Math.round((top + PHASE_H + UTIL_H + 4) * k);
          const { data } = c.getContext('2d').getImageData(x0, y0, x1 - x0, y1 - y0);
          const want = [1, 3, 5].map((i) => parseInt(colour.slice(i, i + 2), 16));
          let n = 0;
          for (let i = 0; i < data.length; i += 4) {
            if (Math.abs(data[i] - want[0]) <= 24 && Math.abs(data[i + 1] - want[1]) <= 24 && Math.abs(data[i + 2] - want[2]) <= 24) n++;
          }
          return n;
        },
        { a, b, top, colour: UTIL_COLOR, LEFT, RIGHT, PHASE_H, UTIL_H },
      );
    let before = 0;
    for (const until = Date.now() + 15_000; before === 0 && Date.now() < until; ) {
      await page.waitForTimeout(200);
      before = await strokeIn(0.05, 0.3);
    }
    assert.ok(before > 20, `the line is drawn before the stop (${before} px)`);
    assert.ok((await strokeIn(0.7, 0.95)) > 20, 'and after it');
    assert.equal(await strokeIn(0.4, 0.6), 0, 'nothing is drawn across the stop');
    await screenshot(page, 'timeline-gpu-gap');
    assert.deepEqual(w.problems(), []);
    await page.close();
  });
});
