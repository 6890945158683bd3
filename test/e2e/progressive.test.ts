// The fleet overview and the advisory while the server still reads the run's history: drawn at once with
// their coverage (a progress note, the unread stretch hatched), then redrawn complete without a reload
// once the warm-up has read every hour.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Browser } from 'playwright-core';
import { generateSyntheticRun } from '../../src/demo/index.ts';
import { RunAnswers } from '../../src/queries/runAnswers.ts';
import { TelemetryStore } from '../../src/run/telemetry/store.ts';
import { startServer, type RunningServer } from '../../src/server/listen.ts';
import { telemetryOnlyRun } from '../support/telemetryRun.ts';
import { ensureWebBuilt, hasChromium, launch, SCREENSHOTS } from './harness.ts';

declare const window: { __sameDocument?: boolean };

describe('progressive fleet overview', { skip: !hasChromium && 'no Chromium' }, () => {
  let root = '';
  let store: TelemetryStore;
  let server: RunningServer;
  let browser: Browser;
  before(async () => {
    ensureWebBuilt();
    root = mkdtempSync(join(tmpdir(), 'rlsight-e2e-progressive-'));
    const runDir = join(root, 'run');
    await generateSyntheticRun(runDir, { gpus: 8, hours: 2, samplesPerStep: 32, seed: 7 });
    // the warm-up is driven by this test, not by a timer
    store = TelemetryStore.open(join(runDir, 'dashboard'), { parseWorkers: 0, cacheDir: join(root, 'cache'), partialFromBytes: 0 });
    server = await startServer(new RunAnswers(telemetryOnlyRun(store, runDir)), { port: 0, useUtilizationOverview: true });
    browser = await launch();
  });
  after(async () => {
    await browser?.close();
    await server?.close();
    store?.close();
    rmSync(root, { recursive: true, force: true });
  });

  // (before the test below drives the warm-up to its end: nothing is read yet here)
  test('while nothing is read yet: the header fits at 1366 px beside the history bar, and the advisory says nothing is read', async () => {
    const page = await browser.newPage({ viewport: { width: 1366, height: 800 } });
    await page.goto(`${server.url}#/timeline`);
    await page.locator('.runinfo .warmup').waitFor({ timeout: 30_000 });
    const advisory = page.locator('[data-testid=advisory]');
    await advisory.locator('[data-testid=coverage]').waitFor({ timeout: 30_000 });
    const header = await page.evaluate(() => {
      const d = (globalThis as any).document;
      return { right: d.querySelector('.runinfo').getBoundingClientRect().right, last: [...d.querySelectorAll('.runinfo > *')].map((e: any) => e.getBoundingClientRect().right), width: d.documentElement.clientWidth, scroll: d.documentElement.scrollWidth };
    });
    assert.ok(header.scroll <= header.width && header.last.every((r: number) => r <= header.width), `the header's right end stays on screen: ${JSON.stringify(header)}`);
    assert.equal((await advisory.locator('[data-testid=coverage]').innerText()).trim(), `0/${store.warmUpProgress()!.hoursTotal} h read`);
    const said = await advisory.locator('p').innerText();
    assert.match(said, /no hour of the run's history has been read yet/);
    assert.doesNotMatch(said, /in the hours read so far/);
    mkdirSync(SCREENSHOTS, { recursive: true });
    await page.screenshot({ path: join(SCREENSHOTS, 'warmup-header-1366.png') });
    await page.close();
  });

  test('draws the hours read so far with their coverage, and redraws complete as the warm-up finishes', async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    const fleetAsks: string[] = [];
    page.on('request', (r) => r.url().includes('/api/timeline/fleet') && fleetAsks.push(r.url()));
    const total = store.warmUpProgress()!.hoursTotal;
    await page.goto(`${server.url}#/timeline`);
    const fleetCoverage = page.locator('[data-testid=fleet] [data-testid=coverage]');
    await fleetCoverage.waitFor({ timeout: 30_000 });
    assert.equal((await fleetCoverage.innerText()).trim(), `0/${total} h read`);
    const advisoryCoverage = page.locator('[data-testid=advisory] [data-testid=coverage]');
    await advisoryCoverage.waitFor({ timeout: 30_000 });
    // the header says nothing it does not know: GPUs and nodes only once the lane catalog arrived
    assert.doesNotMatch(await page.locator('[data-testid=run-facts]').innerText(), /\b0 GPUs\b/);
    mkdirSync(SCREENSHOTS, { recursive: true });
    await page.screenshot({ path: join(SCREENSHOTS, 'fleet-partial.png') });
    await page.evaluate(() => (window.__sameDocument = true));
    const asked = fleetAsks.length;

    while (store.warmUpStep()) {
      // every hour read: the app learns it from its progress poll and asks again
    }
    assert.equal(store.warmUpProgress()!.running, false);
    await fleetCoverage.waitFor({ state: 'detached', timeout: 30_000 });
    await advisoryCoverage.waitFor({ state: 'detached', timeout: 30_000 });
    assert.ok(fleetAsks.length > asked, 'the fleet overview was asked again');
    assert.equal(await page.evaluate(() => window.__sameDocument), true, 'without a reload');
    assert.match(await page.locator('[data-testid=fleet]').innerText(), /Fleet overview · 8 GPUs/);
    await page.screenshot({ path: join(SCREENSHOTS, 'fleet-complete.png') });
    await page.close();
  });
});
