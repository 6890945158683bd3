// The runs table of a server following a root of runs (`--runs ROOT --follow`): a run started later appears
// in the open table without a reload.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Browser } from 'playwright-core';
import { generateDemoRun } from '../../src/demo/index.ts';
import { ensureWebBuilt, hasChromium, launch, openPage, type Served, spawnServer } from './harness.ts';

declare const document: any;
declare const location: { hash: string };

describe('runs table under --runs ROOT --follow (headless Chromium)', { skip: hasChromium ? false : 'Debian chromium is not installed at /usr/bin/chromium' }, () => {
  let served: Served;
  let browser: Browser;
  let root: string;

  before(async () => {
    ensureWebBuilt();
    const base = mkdtempSync(join(tmpdir(), 'rlsight-e2e-runs-'));
    root = join(base, 'runs');
    mkdirSync(root);
    await generateDemoRun(join(root, 'baseline'), { steps: 2, seed: 7 });
    served = await spawnServer(base, join(root, 'baseline'), ['serve', '--runs', root, '--follow']).catch((e) => {
      rmSync(base, { recursive: true, force: true });
      throw e;
    });
    browser = await launch();
  });
  after(async () => {
    await browser?.close();
    await served?.stop();
  });

  it('a run started under the root joins the open table', async () => {
    const w = await openPage(browser);
    const { page } = w;
    await page.goto(`${served.url}#/runs`);
    await page.waitForSelector('table.runs-table tbody tr[data-run=baseline]');
    assert.equal(await page.locator('table.runs-table tbody tr').count(), 1);
    await generateDemoRun(join(root, 'change'), { steps: 2, seed: 8, collapse: true });
    await page.waitForSelector('table.runs-table tbody tr[data-run=change]', { timeout: 30_000 });
    assert.deepEqual((await page.$$eval('table.runs-table tbody tr', (trs) => trs.map((t: any) => t.getAttribute('data-run')))).sort(), ['baseline', 'change']);
    // The header's run choice learns of it too.
    await page.click('[data-testid=run-selector]');
    await page.waitForSelector('[role=option][data-run=change]');
    // Choosing it moves the live event stream to that run's own feed.
    const streams: string[] = [];
    page.on('request', (r) => {
      if (/\/events$/.test(new URL(r.url()).pathname)) streams.push(new URL(r.url()).pathname);
    });
    await page.click('[role=option][data-run=change]');
    await page.waitForFunction(() => location.hash.includes('run=change'));
    for (let i = 0; i < 50 && !streams.includes('/api/runs/change/events'); i++) await page.waitForTimeout(200);
    assert.deepEqual(streams, ['/api/runs/change/events'], 'the stream follows the chosen run');
    assert.deepEqual(w.problems(), []);
  });
});
