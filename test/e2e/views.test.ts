// The views find the problem for the user: lane order and labels, stragglers, request strip, charts, rollouts, sample
// (headless Chromium against `rlsight serve` on demo data).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser } from 'playwright-core';
import { ensureWebBuilt, hasChromium, launch, openPage, screenshot, serveDemo, type Served, type Watched } from './harness.ts';

declare const document: any;

const skip = hasChromium ? false : 'Debian chromium is not installed at /usr/bin/chromium';

describe('views on the large demo (128 GPUs on 16 nodes)', { skip }, () => {
  let served: Served;
  let browser: Browser;
  before(async () => {
    ensureWebBuilt();
    served = await serveDemo({ steps: 3, large: true });
    browser = await launch();
  });
  after(async () => {
    await browser?.close();
    await served?.stop();
  });
  async function open(hash: string): Promise<Watched> {
    const w = await openPage(browser);
    await w.page.goto(`${served.url}${hash}`);
    return w;
  }
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
    await w.page.goto(`${served.url}#/timeline`);
    await w.page.waitForFunction(() => document.querySelectorAll('[data-testid=lane-labels] li').length >= 8);
    const nodes = (await laneLabels(w)).map((l) => l.split(' ')[1]!.split(':')[0]!.split('.').map(Number)[3]!);
    assert.deepEqual(nodes, [...nodes].sort((a, b) => a - b), `default lanes in node order: ${nodes}`);
    assert.deepEqual(w.problems(), []);
    await w.page.close();
  });
});
