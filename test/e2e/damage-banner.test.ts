// The app shows what the server found damaged as a banner, and still shows the run.
import assert from 'node:assert/strict';
import { mkdirSync, rmSync, statSync, truncateSync, utimesSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Browser } from 'playwright-core';
import { startServer, type RunningServer } from '../../src/server/listen.ts';
import { openRun } from '../../src/commands/openRun.ts';
import { copyFixtureRun, type RunCopy } from '../support/fixtures.ts';
import { ensureWebBuilt, hasChromium, launch, SCREENSHOTS } from './harness.ts';

describe('damage banner', { skip: !hasChromium && 'no Chromium' }, () => {
  let run: RunCopy;
  let server: RunningServer;
  let browser: Browser;
  before(async () => {
    ensureWebBuilt();
    run = copyFixtureRun();
    rmSync(join(run.dir, 'dashboard', 'topology.jsonl'));
    mkdirSync(join(run.dir, 'dashboard', 'topology.jsonl'));
    const dump = join(run.dir, 'rollout_data', '1.pt');
    truncateSync(dump, Math.floor(statSync(dump).size / 2));
    // Aged: a young dump that fails to decode is one still being written, not a damaged one.
    const old = Date.now() / 1000 - 86_400;
    utimesSync(dump, old, old);
    server = await startServer(await openRun(run.dir), { port: 0 });
    browser = await launch();
  });
  after(async () => {
    await browser?.close();
    await server?.close();
    run?.dispose();
  });

  test('lists each damaged file and keeps the views', async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    // The metrics view reads every step's aggregates, so the truncated dump is met and reported.
    await page.goto(new URL('/api/metrics?keys=dump/reward_mean', server.url).href);
    await page.goto(server.url);
    const banner = page.locator('.damage-banner');
    await banner.waitFor();
    await banner.locator('summary').click();
    const text = await banner.innerText();
    assert.match(text, /dashboard\/topology\.jsonl: a directory, not a regular file/);
    assert.match(text, /rollout_data\/1\.pt/);
    assert.ok(!text.includes(run.dir), 'no machine path');
    mkdirSync(SCREENSHOTS, { recursive: true });
    await page.screenshot({ path: join(SCREENSHOTS, 'damage-banner.png') });
    assert.ok((await page.locator('#view').innerText()).length > 0, 'the view is still shown');
  });

  test('a search says which step it could not search, and still answers from the others', async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    await page.goto(`${server.url}#/health`);
    await page.locator('input[data-global-search]').fill('/answer for sample 64/');
    await page.waitForSelector('.search-results[data-done] .search-result');
    const skipped = await page.locator('[data-testid="search-skipped"]').innerText();
    assert.match(skipped, /^not searched: step 1: rollout_data\/1\.pt: truncated archive/);
    assert.ok(!skipped.includes(run.dir), 'no machine path');
    assert.equal(await page.locator('.search-result').count(), 1);
    await page.screenshot({ path: join(SCREENSHOTS, 'search-skipped-step.png') });
  });

  test('the Health board keeps the damaged step as a row marked damaged, naming the file', async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    await page.goto(`${server.url}#/health`);
    const row = page.locator('.health-board tbody tr.damaged');
    await row.waitFor();
    assert.equal(await row.count(), 1);
    assert.match(await row.locator('th').innerText(), /^1\s+damaged$/);
    assert.match((await row.getAttribute('data-damaged')) ?? '', /rollout_data\/1\.pt/);
    const warning = await page.locator('.health-warnings').innerText();
    assert.match(warning, /step 1: damaged: rollout_data\/1\.pt: /);
    assert.ok(!warning.includes(run.dir), 'no machine path');
    assert.ok((await page.locator('.health-board tbody tr').count()) >= 3, 'the other steps are still on the board');
    await page.screenshot({ path: join(SCREENSHOTS, 'health-damaged-step.png') });
  });
});
