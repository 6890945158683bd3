// Keyboard and screen-reader use of the app (the accessibility review's findings 1, 4, 5, 6 and 9): the rollouts
// table sorts and opens samples from the keyboard, Health cells say their level, the header search is a combobox
// that Tab leaves in one step, and another view is announced with focus on its heading.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Page } from 'playwright-core';
import { type BrowserSuite, hasChromium, hashParams, hashPath, openPage, serveDemo, startBrowserSuite, stopBrowserSuite } from './harness.ts';

declare const document: any;
declare const location: { hash: string };
declare const requestAnimationFrame: (fn: () => void) => number;

/** The focused element, as a test can name it. */
const focused = (page: Page) =>
  page.evaluate(() => {
    const el = document.activeElement;
    return { tag: el?.tagName.toLowerCase(), id: el?.id || null, role: el?.getAttribute('role') ?? null, text: (el?.textContent ?? '').trim(), href: el?.getAttribute('href') ?? null };
  });

/** Presses Tab until `want` holds for the focused element (at most `max` times); fails naming what was reached. */
async function tabTo(page: Page, want: (f: Awaited<ReturnType<typeof focused>>) => boolean, max = 60): Promise<void> {
  const seen: string[] = [];
  for (let i = 0; i < max; i++) {
    await page.keyboard.press('Tab');
    const f = await focused(page);
    if (want(f)) return;
    seen.push(`${f.tag}:${f.text.slice(0, 20)}`);
  }
  assert.fail(`not reached by Tab: ${seen.join(' | ')}`);
}

describe('keyboard and screen-reader use (headless Chromium)', { skip: hasChromium ? false : 'Debian chromium is not installed at /usr/bin/chromium' }, () => {
  const suite: Partial<BrowserSuite<Awaited<ReturnType<typeof serveDemo>>>> = {};
  before(async () => Object.assign(suite, await startBrowserSuite(() => serveDemo())));
  after(() => stopBrowserSuite(suite));
  const open = async (hash: string) => {
    const w = await openPage(suite.browser!);
    await w.page.goto(`${suite.served!.url}${hash}`);
    return w;
  };

  it('the samples table: Tab to a header button and Enter sorts; Tab to a row link and Enter opens that sample', async () => {
    const w = await open('#/rollout/1');
    const { page } = w;
    await page.waitForSelector('[data-testid=samples-table] tbody tr td a');
    const status = page.locator('[data-testid=samples-table] th', { has: page.locator('button', { hasText: 'status' }) });
    assert.equal(await status.getAttribute('aria-sort'), 'none');
    await page.locator('[data-testid=samples-table] th button').first().focus();
    await tabTo(page, (f) => f.tag === 'button' && f.text.replace(/\s/g, '').startsWith('status'));
    await page.keyboard.press('Enter');
    await page.waitForFunction(() => location.hash.includes('sort=status'));
    // a new column sorts largest first
    assert.equal(await status.getAttribute('aria-sort'), 'descending');
    // The first row link after the headers: its sample opens on Enter.
    await tabTo(page, (f) => f.tag === 'a' && /\/sample\/\d+/.test(f.href ?? ''));
    const link = await focused(page);
    assert.equal(link.href, `#/rollout/1/sample/${link.text}`, 'the first cell links to its own sample');
    await page.keyboard.press('Enter');
    await page.waitForFunction((want) => location.hash.startsWith(want), `#/rollout/1/sample/${link.text}`);
    // Another view: focus is on its heading, and its name is said.
    await page.waitForFunction(() => document.activeElement?.id === 'view-heading');
    assert.equal(await page.textContent('#view-heading'), `Sample ${link.text} · step 1`);
    assert.equal(await page.textContent('[data-testid=view-announce]'), `Sample ${link.text} · step 1`);
    assert.deepEqual(w.problems(), []);
  });

  it('the groups table: a group row link filters the samples to it', async () => {
    const w = await open('#/rollout/1?tab=groups');
    const { page } = w;
    await page.waitForSelector('[data-testid=groups-table] tbody tr td a');
    const first = page.locator('[data-testid=groups-table] tbody tr td a').first();
    const group = (await first.textContent())!.trim();
    await first.focus();
    await page.keyboard.press('Enter');
    await page.waitForFunction(() => new URLSearchParams(location.hash.split('?')[1]).has('group'));
    assert.equal(hashParams(page).get('group'), group);
    assert.deepEqual(w.problems(), []);
  });

  it('health cells name their signal, level and what was measured; warned and fired cells show a glyph', async () => {
    const w = await open('#/health');
    const { page } = w;
    await page.waitForSelector('table.health-board td.hc a');
    const cells = await page.$$eval('table.health-board td.hc', (tds: any[]) =>
      tds.map((td) => ({ level: td.className.replace('hc', '').trim(), mark: td.querySelector('.hc-mark')?.textContent ?? null, name: td.querySelector('a, span')?.textContent ?? '' })),
    );
    assert.ok(cells.length > 0);
    const words: Record<string, string> = { ok: 'ok', warn: 'warn', fire: 'fired', none: 'no data' };
    const marks: Record<string, string | null> = { ok: null, warn: '!', fire: '▲', none: null };
    for (const c of cells) {
      assert.match(c.name, new RegExp(`, .+ ${words[c.level]}: .+`), `a ${c.level} cell says so: ${c.name}`);
      assert.equal(c.mark, marks[c.level], `a ${c.level} cell's glyph`);
    }
    // The accessible name is what a screen reader reads on the link focus lands on.
    const link = page.locator('table.health-board td.hc a').first();
    const level = (await link.locator('..').getAttribute('class'))!.replace('hc', '').trim();
    assert.match((await link.ariaSnapshot())!, new RegExp(`link ".*, .+ ${words[level]}: `));
    assert.deepEqual(w.problems(), []);
  });

  it('the header search is a combobox: ↓ moves the active option, Tab leaves it in one step and the results close, Esc keeps focus', async () => {
    const w = await open('#/health');
    const { page } = w;
    await page.waitForSelector('table.health-board td.hc a');
    const input = page.locator('input[data-global-search]');
    assert.equal(await input.getAttribute('role'), 'combobox');
    await input.focus();
    await page.keyboard.type('"python tool"');
    await page.waitForSelector(`.search-results[data-query='"python tool"'][data-done] [role=option]`);
    assert.equal(await input.getAttribute('aria-expanded'), 'true');
    const list = await input.getAttribute('aria-controls');
    assert.equal(await page.locator(`#${list}`).getAttribute('role'), 'listbox');
    assert.ok((await page.locator('[role=option]').count()) > 1, 'several results');
    await page.keyboard.press('ArrowDown');
    const active = await input.getAttribute('aria-activedescendant');
    assert.equal(await page.locator(`#${active}`).getAttribute('aria-selected'), 'true');
    assert.equal(active, (await page.locator('[role=option]').nth(1).getAttribute('id'))!, '↓ made the second result the active one');
    assert.equal((await focused(page)).role, 'combobox', 'focus stays in the field');
    // Esc closes the results and leaves focus (and the text) in the field.
    await page.keyboard.press('Escape');
    await page.waitForSelector('.search-results', { state: 'detached' });
    assert.equal((await focused(page)).role, 'combobox');
    assert.equal(await input.inputValue(), '"python tool"');
    assert.equal(await input.getAttribute('aria-expanded'), 'false');
    // Enter with the results closed shows them again instead of opening a match no one can see
    const before = await page.evaluate(() => location.hash);
    await page.keyboard.press('Enter');
    await page.waitForSelector('.search-results [role=option]');
    assert.equal(await page.evaluate(() => location.hash), before);
    await page.keyboard.press('Escape');
    await page.waitForSelector('.search-results', { state: 'detached' });
    // Typing reopens them; one Tab leaves the widget (no result is a Tab stop) and closes them.
    await page.keyboard.type(' ');
    await page.waitForSelector('.search-results [role=option]');
    await page.keyboard.press('Tab');
    const after = await focused(page);
    assert.notEqual(after.role, 'option');
    assert.ok(!(await page.evaluate(() => !!document.activeElement?.closest('.header-search'))), `focus left the search: ${JSON.stringify(after)}`);
    await page.waitForSelector('.search-results', { state: 'detached' });
    assert.deepEqual(w.problems(), []);
  });

  it('a search result in another sample of the Sample view: focus lands on the heading once it names that sample, which is said', async () => {
    const w = await open('#/health');
    const { page } = w;
    const input = page.locator('input[data-global-search]');
    await input.focus();
    await page.keyboard.type('"python tool"');
    await page.waitForSelector(`.search-results[data-query='"python tool"'][data-done] [role=option]`);
    // two results in different samples: the first one's sample is shown, then the other is opened from the search
    const samples = await page.$$eval('.search-results [role=option]', (els: any[]) => els.map((el) => el.getAttribute('href')));
    const sampleOf = (h: string) => h.match(/^#\/rollout\/\d+\/sample\/\d+/)![0];
    const from = samples[0]!;
    const other = samples.findIndex((h: string) => sampleOf(h) !== sampleOf(from));
    assert.ok(other > 0, `results in two samples: ${samples.join(' ')}`);
    await page.goto(`${suite.served!.url}${sampleOf(from)}`);
    await page.waitForFunction(() => /^Sample \d/.test(document.getElementById('view-heading')?.textContent ?? ''));
    // what a screen reader reads: the heading's text when focus reaches it
    await page.evaluate(() => {
      const h = document.getElementById('view-heading');
      h.addEventListener('focus', () => h.setAttribute('data-read', h.textContent));
    });
    // (the field still holds the first search: going to the sample changed only the address's hash)
    await input.fill('');
    await page.keyboard.type('"python tool"');
    await page.waitForSelector(`.search-results[data-query='"python tool"'][data-done] [role=option]`);
    // the first result in another sample than the one shown
    const here = await page.$$eval('.search-results [role=option]', (els: any[]) => els.map((el) => el.getAttribute('href')));
    const pick = here.findIndex((h: string) => sampleOf(h) !== sampleOf(from));
    const [, step, sample] = sampleOf(here[pick]).match(/(\d+)\/sample\/(\d+)/)!;
    const want = `Sample ${sample} · ${/[?&]eval=1/.test(here[pick]) ? 'eval step' : 'step'} ${step}`;
    for (let i = 0; i < pick; i++) await page.keyboard.press('ArrowDown');
    assert.equal(await input.getAttribute('aria-activedescendant'), await page.locator('.search-results [role=option]').nth(pick).getAttribute('id'));
    await page.keyboard.press('Enter');
    await page.waitForFunction(() => document.activeElement?.id === 'view-heading' && document.activeElement.hasAttribute('data-read'));
    assert.equal(await page.getAttribute('#view-heading', 'data-read'), want, `focus reached the heading once it named the opened sample (${await page.evaluate(() => location.hash)})`);
    assert.equal(await page.textContent('[data-testid=view-announce]'), want);
    assert.deepEqual(w.problems(), []);
  });

  it('the nav marks the current view, the skip link reaches the view heading, and the step slider says the step', async () => {
    const w = await open('#/rollout/2');
    const { page } = w;
    await page.waitForSelector('[data-testid=step-slider]');
    assert.deepEqual(await page.$$eval('nav[aria-label=views] a[aria-current=page]', (as: any[]) => as.map((a) => a.textContent.trim())), ['Rollouts']);
    assert.equal(await page.locator('h1').count(), 1);
    assert.equal(await page.textContent('h1'), 'Rollouts · step 2');
    assert.match((await page.locator('[data-testid=step-slider]').getAttribute('aria-valuetext'))!, /^step 2 \(\d+ of \d+\)$/);
    assert.equal(await page.locator('button[aria-label="previous step"]').count(), 1);
    await page.keyboard.press('Tab');
    assert.equal((await focused(page)).text, 'Skip to content');
    await page.keyboard.press('Enter');
    assert.equal((await focused(page)).id, 'view-heading');
    assert.equal(hashPath(page), '#/rollout/2', 'the skip link is no route');
    assert.deepEqual(w.problems(), []);
  });

  it('the single-letter keys can be turned off, and stay off in this browser', async () => {
    const w = await open('#/rollout/1');
    const { page } = w;
    await page.waitForSelector('[data-testid=samples-table] tbody tr td');
    // j is the next step here
    await page.evaluate(() => document.activeElement?.blur());
    await page.keyboard.press('j');
    await page.waitForFunction(() => location.hash.startsWith('#/rollout/2'));
    await page.locator('[data-testid=letter-keys]').uncheck();
    await page.reload();
    await page.waitForSelector('[data-testid=samples-table] tbody tr td');
    assert.equal(await page.locator('[data-testid=letter-keys]').isChecked(), false, 'the choice is kept');
    await page.evaluate(() => document.activeElement?.blur());
    await page.keyboard.press('j');
    await page.keyboard.press('k');
    // Keys are handled as they are pressed: a route change they caused would already be under way.
    await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(() => r(null)))));
    assert.equal(hashPath(page), '#/rollout/2', 'j and k do nothing while they are off');
    await page.locator('[data-testid=letter-keys]').check();
    await page.evaluate(() => document.activeElement?.blur());
    await page.keyboard.press('k');
    await page.waitForFunction(() => location.hash.startsWith('#/rollout/1'));
    assert.deepEqual(w.problems(), []);
  });
});
