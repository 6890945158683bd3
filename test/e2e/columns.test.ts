// The timeline draws its GPU lanes from the columnar frame: the app asks for it, the server sends it, the util line is painted.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser } from 'playwright-core';
import { canvasPixels, ensureWebBuilt, hasChromium, launch, openPage, screenshot, serveDemo, type Served } from './harness.ts';

const UTIL_COLOR = '#4ea1ff';

describe('timeline over columnar answers (headless Chromium)', { skip: hasChromium ? false : 'Debian chromium is not installed at /usr/bin/chromium' }, () => {
  let served: Served;
  let browser: Browser;
  before(async () => {
    ensureWebBuilt();
    served = await serveDemo({ steps: 2 });
    browser = await launch();
  });
  after(async () => {
    await browser?.close();
    await served?.stop();
  });

  it('gpu series arrive as a columnar frame and the lanes paint util from it', async () => {
    const w = await openPage(browser);
    const frames: { path: string; type: string | null; accept: string | undefined }[] = [];
    w.page.on('response', (r) => {
      const url = new URL(r.url());
      if (url.pathname === '/api/timeline/gpu') frames.push({ path: url.pathname, type: r.headers()['content-type'] ?? null, accept: r.request().headers()['accept'] });
    });
    await w.page.goto(`${served.url}#/timeline`);
    await w.page.waitForSelector('[data-testid=lanes]');
    await w.page.waitForTimeout(500);
    assert.ok(frames.length > 0, 'the timeline asked for gpu series');
    for (const f of frames) {
      assert.equal(f.accept, 'application/vnd.rlsight.columns');
      assert.equal(f.type, 'application/vnd.rlsight.columns');
    }
    const px = await canvasPixels(w.page, '[data-testid=lanes]', [UTIL_COLOR]);
    assert.ok(px.matches[UTIL_COLOR]! > 200, `util line painted from the frame (${px.matches[UTIL_COLOR]} px)`);
    assert.deepEqual(w.problems(), []);
    await screenshot(w.page, 'timeline-columns');
  });
});
