// Several tabs of a live (--follow) server in one browser: a tab out of view holds no event stream, so the
// browser's six connections to the server stay free for the tabs in view.
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { hasChromium, type Served, serveDemo, startBrowserSuite, stopBrowserSuite } from './harness.ts';

declare const document: any;
declare const location: { hash: string };

describe('tabs of a live server (headless Chromium)', { skip: hasChromium ? false : 'Debian chromium is not installed at /usr/bin/chromium' }, () => {
  let served: Served;
  let browser: Browser;
  before(async () => {
    ({ served, browser } = await startBrowserSuite(() => serveDemo({ steps: 4 })));
  });
  after(() => stopBrowserSuite({ served, browser }));

  it('a sixth tab loads while five others are open out of view', async () => {
    // one context: its pages share the browser's connections to the server, as a user's tabs do
    const context: BrowserContext = await browser.newContext({ viewport: { width: 1200, height: 800 } });
    try {
      const hidden: Page[] = [];
      for (let i = 0; i < 5; i++) {
        const page = await context.newPage();
        await page.goto(`${served.url}#/`);
        await page.waitForSelector('header.topbar');
        // what the browser does to a tab in the background
        await page.evaluate(() => {
          Object.defineProperty(document, 'visibilityState', { value: 'hidden', configurable: true });
          document.dispatchEvent(new Event('visibilitychange'));
        });
        hidden.push(page);
      }
      const sixth = await context.newPage();
      await sixth.goto(`${served.url}#/rollout/1`);
      await sixth.waitForSelector('table tbody tr', { timeout: 15_000 });
      // its own stream is open now; what it asks next needs a connection of its own
      await sixth.waitForTimeout(1000);
      await sixth.evaluate(() => (location.hash = '#/health'));
      await sixth.waitForSelector('table.health-board tbody tr', { timeout: 10_000 });
      // a tab out of view holds no stream (its badge says it is not connected); shown again, it follows the run again
      await hidden[0].waitForSelector('header .badge.stale');
      await hidden[0].evaluate(() => {
        Object.defineProperty(document, 'visibilityState', { value: 'visible', configurable: true });
        document.dispatchEvent(new Event('visibilitychange'));
      });
      await hidden[0].waitForSelector('header .badge.live', { timeout: 10_000 });
    } finally {
      await context.close();
    }
  });
});

describe('a followed run that stopped writing (headless Chromium)', { skip: hasChromium ? false : 'Debian chromium is not installed at /usr/bin/chromium' }, () => {
  let served: Served;
  let browser: Browser;
  before(async () => {
    // its newest data two hours old: served with --follow, but nothing new comes
    ({ served, browser } = await startBrowserSuite(() => serveDemo({ steps: 4, now: Date.now() / 1000 - 7200 })));
  });
  after(() => stopBrowserSuite({ served, browser }));

  it('is not called live: the header says no new data has come for how long', async () => {
    const page = await browser.newPage();
    try {
      await page.goto(`${served.url}#/`);
      const badge = await page.waitForSelector('[data-testid=quiet-badge]');
      assert.equal((await badge.textContent())?.trim(), '◼ no new data');
      assert.match((await badge.getAttribute('title')) ?? '', /nothing new has been written for 2\.0 h/);
      assert.equal(await page.$('.badge.live'), null);
      // the runs table says the same of it, not "finished": nothing says it ended
      const listed = (await (await fetch(`${served.url}api/runs`)).json()) as { runs: { status: string }[] };
      assert.deepEqual(listed.runs.map((r) => r.status), ['quiet']);
      await page.goto(`${served.url}#/runs`);
      const cell = await page.waitForSelector('.run-status[data-status=quiet]');
      assert.equal((await cell.textContent())?.trim(), 'no new data');
    } finally {
      await page.close();
    }
  });
});

describe('a followed run whose collector stopped (headless Chromium)', { skip: hasChromium ? false : 'Debian chromium is not installed at /usr/bin/chromium' }, () => {
  let served: Served;
  let browser: Browser;
  before(async () => {
    // recorded by rlsight's collector (its write-ahead log is there), which has stopped (no collector.json)
    const prepare = (runDir: string): void => {
      mkdirSync(join(runDir, 'dashboard', 'wal'), { recursive: true });
      writeFileSync(join(runDir, 'dashboard', 'wal', '000000000001.log'), '');
    };
    ({ served, browser } = await startBrowserSuite(() => serveDemo({ steps: 2, prepare })));
  });
  after(() => stopBrowserSuite({ served, browser }));

  it('is finished at once, though its data is fresh', async () => {
    const page = await browser.newPage();
    try {
      await page.goto(`${served.url}#/`);
      const badge = await page.waitForSelector('[data-testid=finished-badge]');
      assert.equal((await badge.textContent())?.trim(), '◼ finished');
      assert.equal(await page.$('.badge.live'), null);
    } finally {
      await page.close();
    }
  });
});
