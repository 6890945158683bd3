// The Health board and the Metrics view's dump/* charts while the server still reads the run's steps: drawn at once
// over the steps read so far with their coverage (no spinner), redrawn as more steps are read, and complete
// without a reload once every step is read.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { answersOver } from '../../src/commands/openRun.ts';
import { openRunModel } from '../../src/run/open.ts';
import { startServer, type RunningServer } from '../../src/server/listen.ts';
import { copyFixtureRun, type RunCopy } from '../support/fixtures.ts';
import { heldSteps, type HeldSteps } from '../support/heldSteps.ts';
import { heldSlimeSteps, writeTracedCollectedRun } from '../support/heldSlimeSteps.ts';
import type { SlimeAnswers } from '../../src/queries/slimeAnswers.ts';
import type { SlimeRunModel } from '../../src/run/slime/index.ts';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fmtNum } from '../../web/format.ts';
import { ensureWebBuilt, hasChromium, launch, screenshot } from './harness.ts';

declare const window: { __sameDocument?: boolean };
declare const document: { querySelector(selector: string): { textContent: string | null } | null };
declare const location: { hash: string };

describe('progressive step-wide views', { skip: !hasChromium && 'no Chromium' }, () => {
  let browser: Browser;

  /** A fresh server over a fresh copy of the fixture run, its background step reads held by the test. */
  async function serve(): Promise<{ held: HeldSteps; server: RunningServer; run: RunCopy }> {
    const run = copyFixtureRun('miles-demo');
    const held = heldSteps(await openRunModel(run.dir));
    const answers = answersOver(held.model);
    // the fixture's steps are a moment's read: answered partial anyway, as a big run's are
    answers.partialStepsFromBytes = 0;
    return { held, run, server: await startServer(answers, { port: 0 }) };
  }
  const stop = async (s: { held: HeldSteps; server: RunningServer; run: RunCopy }): Promise<void> => {
    s.held.release();
    await s.server.close();
    s.run.dispose();
  };
  const waitText = (page: Page, selector: string, text: string) =>
    page.waitForFunction(([sel, want]) => document.querySelector(sel)?.textContent?.trim() === want, [selector, text] as const, { timeout: 30_000 });

  before(async () => {
    ensureWebBuilt();
    browser = await launch();
  });
  after(async () => {
    await browser?.close();
  });

  test('the Health board draws the steps read so far with their coverage and redraws as more are read', async () => {
    const s = await serve();
    try {
      const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
      await page.goto(`${s.server.url}#/health`);
      const coverage = page.locator('.health [data-testid=coverage]');
      await coverage.waitFor({ timeout: 30_000 });
      assert.equal((await coverage.innerText()).trim(), '0/3 steps read');
      assert.equal(await page.locator('.health .spinner').count(), 0, 'no spinner once the first partial answer is there');
      assert.deepEqual(await page.locator('.health-board tr.unread').allInnerTexts(), ['0–2\tnot yet read: rows appear as the server reads the steps, newest first']);
      await page.evaluate(() => (window.__sameDocument = true));

      await s.held.letOneGo();
      await waitText(page, '.health [data-testid=coverage]', '1/3 steps read');
      // one step: "1 step read of 3", not "1 steps"
      await page.waitForFunction(() => /^Health — 1 step read of 3,/.test(document.querySelector('.health .view-title')?.textContent?.trim() ?? ''), undefined, { timeout: 30_000 });
      await page.locator('.health-board tbody th a', { hasText: /^2$/ }).waitFor({ timeout: 30_000 });
      assert.equal(await page.locator('.health-board tbody tr:not(.unread)').count(), 1);
      // the steps not read yet stand where they will be, hatched
      assert.deepEqual(await page.locator('.health-board tbody tr th').allInnerTexts(), ['0–1', '2']);
      await screenshot(page, 'health-partial');

      await s.held.letOneGo();
      await waitText(page, '.health [data-testid=coverage]', '2/3 steps read');
      await page.locator('.health-board tbody th a', { hasText: /^1$/ }).waitFor({ timeout: 30_000 });
      assert.deepEqual(await page.locator('.health-board tbody tr th').allInnerTexts(), ['0', '1', '2']);

      s.held.release();
      await coverage.waitFor({ state: 'detached', timeout: 30_000 });
      assert.equal(await page.locator('.health-board tbody tr').count(), 3);
      assert.equal(await page.locator('.health-board tr.unread').count(), 0);
      assert.match(await page.locator('.health .view-title').innerText(), /3 steps,/);
      assert.equal(await page.evaluate(() => window.__sameDocument), true, 'without a reload');
      await screenshot(page, 'health-complete');
      await page.close();
    } finally {
      await stop(s);
    }
  });

  test('the dump/* charts show their step coverage, hatch the steps not read, and fill in as they are read', async () => {
    const s = await serve();
    try {
      const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
      await page.goto(`${s.server.url}#/?cat=dump`);
      const panel = page.locator('[data-metric="dump/reward_mean"]');
      const coverage = panel.locator('[data-testid=coverage]');
      await coverage.waitFor({ timeout: 30_000 });
      assert.equal((await coverage.innerText()).trim(), '0/3 steps read');
      assert.match(await panel.innerText(), /no step read yet/);
      assert.equal(await page.locator('.spinner').count(), 0);
      await page.evaluate(() => (window.__sameDocument = true));

      await s.held.letOneGo();
      await s.held.letOneGo();
      await waitText(page, '[data-metric="dump/reward_mean"] [data-testid=coverage]', '2/3 steps read');
      await panel.locator('canvas').first().waitFor({ timeout: 30_000 });
      await screenshot(page, 'dump-partial');

      s.held.release();
      await coverage.waitFor({ state: 'detached', timeout: 30_000 });
      assert.equal(await page.evaluate(() => window.__sameDocument), true, 'without a reload');
      await page.close();
    } finally {
      await stop(s);
    }
  });

  test("a step's dump/* figures above its samples wait for that step alone, not for the run's other steps", async () => {
    const s = await serve();
    try {
      const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
      const asked: string[] = [];
      page.on('request', (r) => r.url().includes('/api/metrics') && asked.push(r.url()));
      await page.goto(`${s.server.url}#/rollout/1`);
      await page.locator('[data-testid=samples-table] tbody tr').first().waitFor({ timeout: 30_000 });
      // the newest step is read first in the background, then this one: its figures show before step 0 is read
      await s.held.letOneGo();
      await s.held.letOneGo();
      const figures = page.locator('[data-testid=dump-summary]');
      await figures.waitFor({ timeout: 30_000 });
      const shown = (await figures.locator('.stat[title="dump/reward_mean"] .v').innerText()).trim();
      s.held.release();
      const complete = (await (await fetch(`${s.server.url}api/metrics?keys=dump/reward_mean&x=rollout/step`)).json()) as Record<string, { x: number[]; y: number[] }>;
      assert.equal(shown, fmtNum(complete['dump/reward_mean']!.y[complete['dump/reward_mean']!.x.indexOf(1)]));
      assert.ok(asked.length > 0 && asked.every((u) => new URL(u).searchParams.get('progressive') === 'true'), asked.join(' '));
      await page.close();
    } finally {
      await stop(s);
    }
  });

  test("a collected run's computed keys, their series and its runs-table row come over the steps read so far and complete without a reload", async () => {
    const root = mkdtempSync(join(tmpdir(), 'rlsight-e2e-slime-steps-'));
    const dir = join(root, 'run');
    writeTracedCollectedRun(dir, [0, 1, 2, 3, 4, 5], [0, 3]);
    const model = (await openRunModel(dir)) as SlimeRunModel;
    const answers = answersOver(model) as SlimeAnswers;
    // the run is a moment's read: answered partial anyway (nothing read within a request), as a big run's is
    answers.partialStepsFromBytes = 0;
    answers.stepBudgetMs = 0;
    const held = heldSlimeSteps(answers, model);
    const server = await startServer(answers, { port: 0 });
    try {
      const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
      await page.goto(`${server.url}#/?cat=rollout`);
      await page.locator('[data-metric="dump/reward_mean"], .metrics-layout').first().waitFor({ timeout: 30_000 });
      await page.evaluate(() => (window.__sameDocument = true));
      // no step read: no computed key is named yet; once one is, the run's header is asked again and names them
      assert.equal(await page.locator('[data-metric="rollout/response_len/mean"]').count(), 0);
      await held.letOneGo();
      const panel = page.locator('[data-metric="rollout/response_len/mean"]');
      await panel.waitFor({ timeout: 30_000 });
      await waitText(page, '[data-metric="rollout/response_len/mean"] [data-testid=coverage]', '1/6 steps read');
      assert.equal(await page.locator('.spinner').count(), 0);

      await held.letOneGo();
      await held.letOneGo();
      await waitText(page, '[data-metric="rollout/response_len/mean"] [data-testid=coverage]', '2/6 steps read');
      await panel.locator('canvas').first().waitFor({ timeout: 30_000 });
      await screenshot(page, 'slime-keys-partial');

      await page.evaluate(() => (location.hash = '#/runs'));
      await waitText(page, '.runs-view [data-testid=coverage]', '3/8 steps read');
      held.release();
      await page.locator('.runs-view [data-testid=coverage]').waitFor({ state: 'detached', timeout: 30_000 });
      await page.evaluate(() => (location.hash = '#/?cat=rollout'));
      await panel.waitFor({ timeout: 30_000 });
      await panel.locator('canvas').first().waitFor({ timeout: 30_000 });
      assert.equal(await panel.locator('[data-testid=coverage]').count(), 0, 'complete once every step is read');
      assert.equal(await page.evaluate(() => window.__sameDocument), true, 'without a reload');
      await page.close();
    } finally {
      await server.close();
      held.release();
      rmSync(root, { recursive: true, force: true });
    }
  });
});
