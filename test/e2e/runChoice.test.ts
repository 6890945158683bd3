// One run choice for the whole app, on `rlsight demo`'s two runs: `?run=collapse` on every route sends every
// run-scoped request to /api/runs/collapse/… and shows collapse's values; the choice survives navigation,
// Back/Forward and reload; an unknown run names the known ones.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import type { HealthAnswer, RolloutTable } from '../../src/wire/index.ts';
import { ensureWebBuilt, hasChromium, hashParams, launch, openPage, screenshot, serveRlsightDemo, type Served } from './harness.ts';

declare const document: any;

/** Every API request the page makes from now on (path and query). */
function recordRequests(page: Page): string[] {
  const seen: string[] = [];
  page.on('request', (r) => {
    const u = new URL(r.url());
    if (u.pathname.startsWith('/api/')) seen.push(u.pathname + u.search);
  });
  return seen;
}

/** The requests that are neither app-wide (`/api/runs`, `/api/events`) nor under `/api/runs/{run}/`. */
function strays(seen: string[], run: string): string[] {
  return seen.filter((p) => !p.startsWith(`/api/runs/${run}/`) && !/^\/api\/(runs|events)(\?|$)/.test(p));
}

describe('one run choice for the whole app (rlsight demo, headless Chromium)', { skip: hasChromium ? false : 'Debian chromium is not installed at /usr/bin/chromium' }, () => {
  let served: Served;
  let browser: Browser;
  const api = async <T>(path: string) => (await (await fetch(`${served.url}api/${path}`)).json()) as T;

  before(async () => {
    ensureWebBuilt();
    served = await serveRlsightDemo();
    browser = await launch();
  });
  after(async () => {
    await browser?.close();
    await served?.stop();
  });

  it('every view with ?run=collapse asks only /api/runs/collapse/… and shows collapse’s Health and Rollouts values', async () => {
    const w = await openPage(browser);
    const { page } = w;
    const seen = recordRequests(page);

    await page.goto(`${served.url}#/health?run=collapse`);
    await page.waitForSelector('table.health-board tbody tr');
    const board = await api<HealthAnswer>('runs/collapse/rlsight/health');
    const healthy = await api<HealthAnswer>('runs/healthy/rlsight/health');
    const zeroStd = board.signals.find((s) => /zero/.test(s.id))!.id;
    for (const step of [196, 199]) {
      const shown = await page.evaluate(
        ({ step, id }) => {
          const row = [...document.querySelectorAll('table.health-board tbody tr')].find((tr: any) => tr.cells[0].textContent.trim() === String(step));
          return row?.querySelector(`[data-signal="${id}"]`)?.textContent ?? null;
        },
        { step, id: zeroStd },
      );
      const want = board.rows.find((r) => r.step === step)!.cells[zeroStd]!.value;
      const other = healthy.rows.find((r) => r.step === step)!.cells[zeroStd]!.value;
      assert.notEqual(want, other, `step ${step}: the runs differ, so the board tells them apart`);
      assert.equal(Number(shown), Number(want!.toFixed(3)), `step ${step}: collapse's ${zeroStd}`);
    }
    assert.match((await page.textContent('header.topbar'))!, /collapse/);
    await screenshot(page, 'run-choice-health-collapse');

    await page.goto(`${served.url}#/rollout/199?run=collapse`);
    await page.waitForSelector('[data-testid=dump-summary]');
    assert.equal(Number(await page.textContent('.stat[title="dump/zero_std_group_frac"] .v')), 0.5, 'collapse zero-std share at step 199');
    const groups = await api<RolloutTable>('runs/collapse/rollout/199/groups');
    assert.ok(groups.rows.length > 0);
    await page.locator('.tabs', { hasText: 'zero-std)' }).waitFor();

    for (const route of ['#/timeline', '#/', '#/trace/199', '#/rollout/199/sample/0?tab=tokens', '#/diff']) {
      const [path, q] = route.split('?');
      await page.goto(`${served.url}${path}?${q ? `${q}&` : ''}run=collapse`);
      await page.waitForLoadState('networkidle').catch(() => {});
      await page.waitForSelector('#view > *:not(.loading)');
    }
    await page.waitForSelector('[data-testid=token-text] [data-pos]', { timeout: 20_000 }).catch(() => {});
    for (const family of ['meta', 'metrics', 'timeline/', 'rollout/', 'rlsight/'])
      assert.ok(seen.some((p) => p.startsWith(`/api/runs/collapse/${family}`)), `a ${family} request was made: ${seen.join(' ')}`);
    assert.deepEqual(strays(seen, 'collapse'), [], 'every run-scoped request names the chosen run');
    assert.ok(seen.some((p) => p.startsWith('/api/runs/collapse/meta')), 'the header’s meta is the chosen run’s');
    assert.deepEqual(w.problems(), []);
  });

  it('the choice survives header navigation, Back/Forward and reload; the selector switches the whole app', async () => {
    const w = await openPage(browser);
    const { page } = w;
    await page.goto(`${served.url}#/health?run=collapse`);
    await page.waitForSelector('table.health-board tbody tr');
    for (const name of ['Compute Utilization', 'Rollouts', 'Metrics', 'Diff', 'Health']) {
      await page.click(`header.topbar nav a:text-is("${name}")`);
      await page.waitForFunction(() => document.querySelector('#view > *:not(.loading)'));
      assert.equal(hashParams(page).get('run'), 'collapse', `${name} keeps the run`);
    }
    await page.goBack();
    await page.goBack();
    assert.equal(hashParams(page).get('run'), 'collapse');
    await page.goForward();
    await page.reload();
    await page.waitForSelector('header.topbar select[aria-label=run]');
    assert.equal(await page.$eval('header.topbar select[aria-label=run]', (s: any) => s.value), 'collapse');

    const seen = recordRequests(page);
    await page.goto(`${served.url}#/health?run=collapse`);
    await page.waitForSelector('table.health-board tbody tr');
    await page.selectOption('header.topbar select[aria-label=run]', 'healthy');
    await page.waitForFunction(() => /run=healthy/.test(location.hash));
    await page.waitForFunction(() => /healthy/.test(document.querySelector('header.topbar .run-name')?.textContent ?? ''));
    await page.waitForSelector('table.health-board tbody tr');
    assert.ok(seen.some((p) => p.startsWith('/api/runs/healthy/rlsight/health')));
    await page.goBack();
    await page.waitForFunction(() => /collapse/.test(document.querySelector('header.topbar .run-name')?.textContent ?? ''));
    assert.deepEqual(w.problems(), []);
  });

  it('an unknown run is an error naming the runs served, not the first run', async () => {
    const w = await openPage(browser);
    const { page } = w;
    w.expect(/http 404: \/api\/runs\/zz\//);
    await page.goto(`${served.url}#/rollout/199?run=zz`);
    const alert = page.locator('#view [role=alert]');
    await alert.waitFor();
    const text = (await alert.textContent())!;
    assert.match(text, /zz/);
    assert.match(text, /healthy/);
    assert.match(text, /collapse/);
    assert.equal(await page.locator('[data-testid=dump-summary]').count(), 0, 'no view of another run');
    assert.deepEqual(w.problems(), []);
  });
});

declare const location: { hash: string };
