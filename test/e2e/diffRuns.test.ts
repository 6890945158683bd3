// The diffs across the runs a server holds, in headless Chromium over the demo's two runs (`run`, and
// `collapse`, of the same recipe and seed): pick the other run, open a moved pair, open a sample of the other run.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser } from 'playwright-core';
import { hasChromium, hashParams, hashPath, openPage, screenshot, type Served, serveDemo, startBrowserSuite, stopBrowserSuite } from './harness.ts';

describe('diffs across runs (headless Chromium)', { skip: hasChromium ? false : 'Debian chromium is not installed at /usr/bin/chromium' }, () => {
  let served: Served;
  let browser: Browser;

  before(async () => ({ served, browser } = await startBrowserSuite(() => serveDemo({ steps: 4, compare: true }))));
  after(() => stopBrowserSuite({ served, browser }));

  test('the step diff picks the other run, same step number; a moved pair opens aligned; a sample of the other run opens', async () => {
    const w = await openPage(browser);
    const { page } = w;
    await page.goto(`${served.url}#/diff`);
    await page.waitForSelector('.diff-dist svg.histogram');
    // Defaults: the first run against itself, the newest step against the one before.
    assert.equal(await page.locator('[data-testid="run-a"]').inputValue(), 'run');
    assert.equal(await page.locator('[data-testid="run-b"]').inputValue(), 'run');
    assert.deepEqual([await page.locator('[data-testid="step-a"]').inputValue(), await page.locator('[data-testid="step-b"]').inputValue()], ['2', '3']);

    await page.locator('[data-testid="run-b"]').selectOption('collapse');
    await page.waitForFunction('location.hash.includes("run_b=collapse")');
    const q = hashParams(page);
    assert.deepEqual([q.get('run_a'), q.get('run_b'), q.get('a'), q.get('b')], ['run', 'collapse', '2', '2'], 'across runs: the same step number');
    await page.waitForSelector('[data-testid="moved"] tbody tr');
    // Step 2 of the two runs holds the same prompts and sample ids: the collapsing run solves more.
    assert.match((await page.locator('.diff-dist[data-metric="reward"] h3 b').textContent())!, /^\+/);
    const flippedNote = (await page.locator('.diff .panel h3', { hasText: 'Groups that flipped' }).textContent())!;
    assert.match(flippedNote, /of \d+ groups present on both sides/);
    await screenshot(page, 'diff-runs-steps', true);

    // A link reproduces the choice.
    const link = page.url();
    const again = await openPage(browser);
    await again.page.goto(link);
    await again.page.waitForSelector('[data-testid="moved"] tbody tr');
    assert.equal(await again.page.locator('[data-testid="run-b"]').inputValue(), 'collapse');
    assert.equal(await again.page.locator('[data-testid="step-b"]').inputValue(), '2');
    await again.page.close();

    // The B sample link opens the collapsing run's sample.
    const bHref = (await page.locator('[data-testid="moved"] tbody tr a[data-side="b"]').first().getAttribute('href'))!;
    assert.match(bHref, /^#\/rollout\/2\/sample\/\d+\?run=collapse$/);

    // The pair that moved most, compared.
    await page.locator('[data-testid="moved"] a', { hasText: 'compare' }).first().click();
    await page.waitForSelector('.diff-sample[data-side="b"] .diff-text');
    assert.equal(hashPath(page), '#/diff/sample');
    const sq = hashParams(page);
    assert.deepEqual([sq.get('run_a'), sq.get('run_b')], ['run', 'collapse']);
    assert.match(sq.get('b')!, /^2:\d+$/);
    assert.match((await page.locator('.diff-sample[data-side="b"] h3 a').textContent())!, /collapse · step 2 · sample \d+/);
    const alignment = (await page.locator('[data-testid="alignment"]').textContent())!;
    assert.match(alignment, /aligned by token ids: \d+ matched · \d+ only in A · \d+ only in B/);
    assert.ok((await page.locator('.diff-sample[data-side="a"] .diff-text [data-kind="same"]').count()) > 0);
    assert.ok((await page.locator('svg.token-series .stretch-strip rect').count()) > 0);
    assert.equal(await page.locator('mark.diverge').count(), 2, 'the first difference is marked on both sides');
    await page.waitForSelector('svg.token-series path');
    await screenshot(page, 'diff-runs-samples', true);

    // Its side B opens the sample of the collapsing run.
    await page.locator('[data-testid="open-b"]').click();
    await page.waitForFunction('location.hash.includes("run=collapse")');
    await page.waitForSelector('[data-testid="sample-run"]');
    assert.match((await page.locator('[data-testid="sample-run"]').textContent())!, /run collapse · step 2/);
    assert.equal((await page.locator('[data-testid="sample-title"]').textContent())!, `sample ${sq.get('b')!.split(':')[1]}`);
    await page.locator('nav.tabs a', { hasText: 'Tokens' }).click();
    await page.waitForSelector('[data-pos]');
    await screenshot(page, 'diff-runs-other-sample');
    // the run's step is one click away, as for a sample of the first run
    assert.equal(await page.locator('[data-testid="sample-run"]').getAttribute('href'), '#/rollout/2?run=collapse');

    // Back in the sample diff, side A picks the collapsing run too: the same sample of the same step, identical.
    await page.goBack();
    await page.goBack();
    await page.waitForSelector('[data-testid="alignment"]');
    assert.equal(await page.locator('.diff-pick[data-side="b"] [data-testid="run-b"]').inputValue(), 'collapse');
    await page.locator('[data-testid="run-a"]').selectOption('collapse');
    await page.waitForFunction('location.hash.includes("run_a=collapse")');
    await page.waitForSelector('text=the responses are token-for-token identical');
    assert.match((await page.locator('[data-testid="alignment"]').textContent())!, / 0 only in A · 0 only in B/);
    assert.equal(hashParams(page).get('run_b'), null, 'one run on both sides: run B follows run A');
    // And a sample index typed on side B.
    const other = Number(sq.get('b')!.split(':')[1]) + 1;
    await page.locator('[data-testid="sample-b"]').fill(String(other));
    await page.locator('[data-testid="sample-b"]').press('Enter');
    await page.waitForFunction(`location.hash.includes("b=2%3A${other}") || location.hash.includes("b=2:${other}")`);
    await page.waitForSelector(`.diff-sample[data-side="b"] h3 a:has-text("sample ${other}")`);
    await screenshot(page, 'diff-runs-picked-samples');
    // A sample the step lacks is an error under the pickers, which stay to mend it.
    // (asked under side A's run, the run the header names)
    w.expect(/^http 404: \/api\/(runs\/collapse\/)?rlsight\/diff\/samples\?.*b=2%3A99999/);
    await page.locator('[data-testid="sample-b"]').fill('99999');
    await page.locator('[data-testid="sample-b"]').press('Enter');
    await page.waitForSelector('.diff .error-note');
    assert.equal(await page.locator('[data-testid="sample-b"]').inputValue(), '99999');
    assert.match((await page.locator('.diff').textContent())!, /99999/);
    await screenshot(page, 'diff-runs-missing-sample');
    assert.deepEqual(w.problems(), []);
  });
});
