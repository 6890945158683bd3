// The health board, the header search box, the diffs and the download buttons, in headless Chromium over the demo run.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser } from 'playwright-core';
import { hasChromium, hashParams, hashPath, openPage, screenshot, type Served, serveDemo, startBrowserSuite, stopBrowserSuite, type Watched } from './harness.ts';

/**
 * Types `query` in the header search and opens its first hit in a recorded conversation (its prompt or its
 * messages), waiting for the Sample view to open there with `find=`.
 */
async function openConversationHit(page: Watched['page'], query: string): Promise<void> {
  await page.locator('input[data-global-search]').fill(query);
  await page.waitForSelector(`.search-results[data-query=${JSON.stringify(query)}][data-done] .search-result`);
  const hits = page.locator('.search-result');
  let k = 0;
  while (!/ · (prompt|conversation)$/.test((await hits.nth(k).locator('.facts').textContent())!)) k++;
  const where = (await hits.nth(k).locator('.where').textContent())!;
  await hits.nth(k).click();
  const [, step, sample] = /step (\d+) · sample (\d+)/.exec(where)!;
  await page.waitForFunction(`location.hash.startsWith("#/rollout/${step}/sample/${sample}") && location.hash.includes("find=")`);
}

describe('answers in the web app (headless Chromium)', { skip: hasChromium ? false : 'Debian chromium is not installed at /usr/bin/chromium' }, () => {
  let served: Served;
  let browser: Browser;

  before(async () => ({ served, browser } = await startBrowserSuite(() => serveDemo({ steps: 4 }))));
  after(() => stopBrowserSuite({ served, browser }));

  async function open(hash: string): Promise<Watched> {
    const w = await openPage(browser);
    await w.page.goto(`${served.url}${hash}`);
    return w;
  }

  test('the health board lights the demo’s restart and drift, and a cell opens its evidence', async () => {
    const w = await open('#/health');
    const { page } = w;
    await page.waitForSelector('table.health-board tbody tr');
    assert.equal(await page.locator('table.health-board tbody tr').count(), 4);
    const level = (step: number, signal: string) =>
      page.locator(`table.health-board tbody tr:nth-child(${step + 1}) td[data-signal="${signal}"]`).getAttribute('class');
    assert.match((await level(2, 'engine_restart'))!, /\bfire\b/);
    assert.match((await level(1, 'engine_restart'))!, /\bok\b/);
    assert.match((await level(3, 'lp_drift'))!, /\bfire\b/);
    assert.match((await level(0, 'lp_drift'))!, /\bok\b/);
    await screenshot(page, 'health-board');
    await page.locator('table.health-board tbody tr:nth-child(4) td[data-signal="lp_drift"] a').click();
    await page.waitForFunction('location.hash.startsWith("#/rollout/3/sample/")');
    assert.match(hashPath(page), /^#\/rollout\/3\/sample\/\d+$/);
    assert.equal(hashParams(page).get('tab'), 'tokens');
    assert.equal(hashParams(page).get('color'), 'lp_diff');
    assert.deepEqual(w.problems(), []);
  });

  test('download buttons save the step table, the metrics and a sample as JSON', async () => {
    const w = await open('#/rollout/1');
    const { page } = w;
    const save = async (selector: string) => {
      const [download] = await Promise.all([page.waitForEvent('download'), page.locator(selector).first().click()]);
      const path = await download.path();
      return { name: download.suggestedFilename(), text: (await import('node:fs')).readFileSync(path, 'utf8') };
    };
    const csv = await save('.downloads a[data-download="csv"]');
    assert.match(csv.name, /\.1\.rollout\.csv$/);
    assert.equal(csv.text.trimEnd().split('\r\n').length, 1 + 128);
    assert.match(csv.text, /^sample_index,group_index,status,/);
    await page.goto(`${served.url}#/rollout/1/sample/${csv.text.split('\r\n')[1].split(',')[0]}`);
    const json = await save('.downloads a[data-download="json"]');
    const doc = JSON.parse(json.text);
    assert.equal(doc.step, 1);
    assert.ok(doc.tokens.token_ids.length > 0);
    assert.ok(Array.isArray(doc.conversation?.messages));
    await page.goto(`${served.url}#/`);
    const metrics = await save('.downloads a[data-download="parquet"]');
    assert.match(metrics.name, /\.metrics\.parquet$/);
    assert.deepEqual(w.problems(), []);
  });

  test('the header search box: "/" focuses it, results stream in as you type, a result opens its sample', async () => {
    const w = await open('#/');
    const { page } = w;
    await page.waitForSelector('input[data-global-search]');
    // Click away from where the result list opens, so the pointer does not pick a result.
    await page.mouse.click(5, 890);
    await page.keyboard.press('/');
    assert.equal(await page.evaluate('document.activeElement?.hasAttribute("data-global-search")'), true);
    await page.keyboard.type('"python tool"', { delay: 20 });
    await page.waitForSelector(`.search-results[data-query='"python tool"'][data-done] .search-result`);
    const first = page.locator('.search-result').first();
    const where = (await first.locator('.where').textContent())!;
    assert.match(where, /^step \d+ · sample \d+$/);
    assert.match((await first.locator('.facts').textContent())!, /^reward [\d.-]+ · \w+ · (prompt|response|conversation)$/);
    assert.equal((await first.locator('mark').first().textContent())!.toLowerCase(), 'python tool');
    await screenshot(page, 'search-header');
    const [, step, sample] = /step (\d+) · sample (\d+)/.exec(where)!;
    await page.keyboard.press('Enter');
    await page.waitForFunction(`location.hash.startsWith("#/rollout/${step}/sample/${sample}")`);
    await page.waitForSelector('[data-testid="sample-title"]');
    assert.equal(await page.locator('[data-testid="sample-title"]').textContent(), `sample ${sample}`);
    assert.deepEqual(w.problems(), []);
  });

  test('Enter in the header search opens a match of the text in the box, never one of the query typed before', async () => {
    const w = await open('#/health');
    const { page } = w;
    const input = page.locator('input[data-global-search]');
    const at = (where: string) => /^step (\d+) · sample (\d+)$/.exec(where);
    await input.fill('"python tool"');
    await page.waitForSelector(`.search-results[data-query='"python tool"'][data-done] .search-result`);
    const wheres = await page.locator('.search-result .where').allTextContents();
    const [, oldStep, oldSample] = at(wheres[0])!;
    // A sample the text query's first match is not: the id query typed next opens it.
    const [, step, sample] = wheres.map(at).find((m) => m && !(m[1] === oldStep && m[2] === oldSample))!;
    // Text, then an id typed at a person's pace and Enter before its results came: the id's sample opens.
    await input.selectText();
    await input.pressSequentially(`${step}:${sample}`, { delay: 80 });
    await input.press('Enter');
    await page.waitForFunction('location.hash.startsWith("#/rollout/")');
    await page.waitForTimeout(400);
    assert.equal(hashPath(page), `#/rollout/${step}/sample/${sample}`);
    assert.equal(hashParams(page).get('find'), null);
    // An id, then text: the text's first match opens, not the id's sample.
    await page.evaluate('location.hash = "#/health"');
    await page.waitForFunction('location.hash === "#/health"');
    await page.mouse.click(5, 890);
    await input.focus();
    await page.waitForSelector(`.search-results[data-query="${step}:${sample}"][data-done]`);
    await input.selectText();
    await input.pressSequentially('"python tool"', { delay: 80 });
    await input.press('Enter');
    await page.waitForFunction('location.hash.startsWith("#/rollout/")');
    await page.waitForTimeout(400);
    assert.equal(hashPath(page), `#/rollout/${oldStep}/sample/${oldSample}`);
    assert.deepEqual(w.problems(), []);
  });

  test('a conversation hit opens the conversation with the match highlighted and in view', async () => {
    const w = await open('#/health');
    const { page } = w;
    await openConversationHit(page, '"python tool"');
    await page.waitForSelector('[data-testid="conversation"][data-found]');
    const seen = (await page.evaluate(`(() => {
      const h = CSS.highlights.get('rlsight-find');
      const ranges = h ? [...h] : [];
      const first = ranges[0]?.getBoundingClientRect();
      return {
        found: Number(document.querySelector('[data-testid="conversation"]').dataset.found),
        highlighted: ranges.length,
        texts: [...new Set(ranges.map((r) => r.toString().toLowerCase()))],
        inView: !!first && first.top >= 0 && first.bottom <= innerHeight,
      };
    })()`)) as { found: number; highlighted: number; texts: string[]; inView: boolean };
    assert.ok(seen.found > 0, 'the match is in the shown conversation');
    assert.equal(seen.highlighted, seen.found);
    assert.deepEqual(seen.texts, ['python tool']);
    assert.ok(seen.inView, 'the first occurrence is scrolled into view');
    await screenshot(page, 'search-opens-conversation');
    assert.deepEqual(w.problems(), []);
  });

  test('a hit of several words opens the conversation with the query highlighted, not only its first matched word', async () => {
    const w = await open('#/health');
    const { page } = w;
    // "of" comes first in "the sum of all positive multiples of N": the server's first hit, a stop word
    await openConversationHit(page, 'positive multiples of');
    assert.equal(hashParams(page).get('find'), 'positive multiples of');
    await page.waitForSelector('[data-testid="conversation"][data-found]');
    const seen = (await page.evaluate(`(() => {
      const texts = (name) => [...(CSS.highlights.get(name) ?? [])].map((r) => r.toString().toLowerCase());
      const first = [...(CSS.highlights.get('rlsight-find') ?? [])][0]?.getBoundingClientRect();
      return {
        found: Number(document.querySelector('[data-testid="conversation"]').dataset.found),
        best: texts('rlsight-find'),
        more: texts('rlsight-find-more'),
        inView: !!first && first.top >= 0 && first.bottom <= innerHeight,
      };
    })()`)) as { found: number; best: string[]; more: string[]; inView: boolean };
    assert.equal(seen.best.length + seen.more.length, seen.found);
    // the words in sequence stand out (the most specific, scrolled to); each word elsewhere is marked lighter:
    // whole words, the last one (still being typed) a prefix
    assert.ok(seen.best.length > 0 && seen.best.every((t) => t === 'positive multiples of'), seen.best.join(' | '));
    assert.ok(seen.inView, 'the words in sequence are scrolled into view');
    assert.ok(seen.more.every((t) => t === 'positive' || t === 'multiples' || t.startsWith('of')), seen.more.join(' | '));
    assert.ok(seen.more.includes('of'), 'each word is marked where it stands alone too');
    await screenshot(page, 'search-opens-conversation-words');
    assert.deepEqual(w.problems(), []);
  });

  test('a number no sample has as its index is looked for in the texts, and the results say so', async () => {
    const w = await open('#/health');
    const { page } = w;
    await page.locator('input[data-global-search]').fill('999999');
    await page.waitForSelector('.search-results[data-query="999999"][data-done]');
    assert.equal(await page.locator('[data-testid="search-note"]').textContent(), 'no sample has index 999999: the samples whose text holds 999999');
    assert.deepEqual(w.problems(), []);
  });

  test('typing a step:sample opens exactly that sample', async () => {
    const w = await open('#/health');
    const { page } = w;
    await page.locator('input[data-global-search]').fill('2:300');
    await page.waitForSelector('.search-results[data-query="2:300"][data-done]');
    const results = page.locator('.search-result');
    const n = await results.count();
    if (n === 1) {
      await results.first().click();
      await page.waitForFunction('location.hash.startsWith("#/rollout/2/sample/300")');
    } else assert.equal(n, 0, 'sample 300 is in step 2 or in no step');
    assert.deepEqual(w.problems(), []);
  });

  test('the search results close when the address changes (Back, a link, a typed URL), not only on a pick', async () => {
    const w = await open('#/health');
    const { page } = w;
    await page.locator('input[data-global-search]').fill('"python tool"');
    await page.waitForSelector(`.search-results[data-query='"python tool"'][data-done]`);
    await page.evaluate('location.hash = "#/metrics"');
    await page.waitForFunction('location.hash === "#/metrics"');
    await page.waitForSelector('.search-results', { state: 'detached' });
    // The query stays in the box: coming back to it shows the results again.
    assert.equal(await page.locator('input[data-global-search]').inputValue(), '"python tool"');
    await page.mouse.click(5, 890);
    await page.locator('input[data-global-search]').focus();
    await page.waitForSelector('.search-results');
    assert.deepEqual(w.problems(), []);
  });

  test('step diff: distributions overlaid with deltas, moved samples open a sample diff', async () => {
    // Adjacent steps share the prompts of the group a partial rollout carried over: find such a pair.
    let pair: [number, number] | null = null;
    for (const [a, b] of [[0, 1], [1, 2], [2, 3]] as const) {
      const d = (await (await fetch(`${served.url}api/rlsight/diff/steps?a=${a}&b=${b}`)).json()) as { moved: unknown[] };
      if (d.moved.length > 0) {
        pair = [a, b];
        break;
      }
    }
    assert.ok(pair, 'some adjacent steps share a prompt');
    const w = await open(`#/diff?a=${pair[0]}&b=${pair[1]}`);
    const { page } = w;
    await page.waitForSelector('.diff-dist svg.histogram');
    assert.equal(await page.locator('.diff-dist').count(), 6);
    // The share axis: its top is the largest bin's share of either side's samples, labelled in percent.
    const answer = (await (await fetch(`${served.url}api/rlsight/diff/steps?a=${pair[0]}&b=${pair[1]}`)).json()) as { distributions: { metric: string; counts_a: number[]; counts_b: number[] }[] };
    const reward = answer.distributions.find((d) => d.metric === 'reward')!;
    const share = (c: number[]) => Math.max(...c) / Math.max(1, c.reduce((x, y) => x + y, 0));
    const top = Math.max(share(reward.counts_a), share(reward.counts_b));
    const axis = page.locator('.diff-dist[data-metric="reward"] svg.histogram .share-axis');
    assert.ok(Math.abs(Number(await axis.getAttribute('data-top-share')) - top) < 1e-9);
    assert.equal(await axis.locator('text').first().textContent(), `${(top * 100).toFixed(top < 0.1 ? 1 : 0)}%`);
    assert.equal(await page.locator('[data-testid="run-a"]').count(), 0, 'a server of one run shows no run picker');
    const lp = (await page.locator('.diff-dist[data-metric="mean_abs_lp_diff"] h3 b').textContent())!;
    // The demo's log-prob drift at step 3 shows as a rise of mean |lp diff| (and a fall after it), a change
    // for the worse: coloured by what it means, not by its sign.
    if (pair[1] === 3) {
      assert.match(lp, /^\+/);
      assert.equal(await page.locator('.diff-dist[data-metric="mean_abs_lp_diff"] h3 b').getAttribute('class'), 'worse');
    }
    assert.equal(await page.locator('.diff-dist[data-metric="response_length"] h3 b').getAttribute('class'), '', 'length has no better side');
    // A 0/1 flag's axis reads 0 … 1 (its outer edges are half a unit past them).
    assert.deepEqual(
      [await page.locator('.diff-dist[data-metric="truncated"] [data-testid=axis-low]').textContent(), await page.locator('.diff-dist[data-metric="truncated"] [data-testid=axis-high]').textContent()],
      ['0', '1'],
    );
    assert.ok((await page.locator('[data-testid="metrics"] tbody tr').count()) > 5);
    await screenshot(page, 'diff-steps', true);
    await page.locator('[data-testid="moved"] a', { hasText: 'compare' }).first().click();
    await page.waitForSelector('.diff-sample[data-side="b"] .diff-text');
    assert.equal(hashPath(page), '#/diff/sample');
    assert.match(hashParams(page).get('a')!, new RegExp(`^${pair[0]}:\\d+$`));
    assert.equal(hashParams(page).get('run_a'), null, 'a server of one run names no run in links');
    await page.waitForSelector('svg.token-series path');
    assert.match((await page.locator('[data-testid="alignment"]').textContent())!, /\d+ matched · \d+ only in A · \d+ only in B/);
    await screenshot(page, 'diff-samples', true);
    assert.deepEqual(w.problems(), []);
  });

  test('sample diff of a group’s best and worst marks where the responses part', async () => {
    const summary = (await (await fetch(`${served.url}api/rollout/1/summary`)).json()) as { rows: { group_index: number }[] };
    const group = summary.rows[0].group_index;
    const w = await open(`#/diff/sample?step=1&group=${group}`);
    const { page } = w;
    await page.waitForSelector('.diff-sample[data-side="a"] .diff-text');
    assert.equal(await page.locator('mark.diverge').count(), 2, 'the first difference is marked on both sides');
    assert.match((await page.locator('.diff-head .muted').textContent())!, /first different token: \d+/);
    assert.ok(await page.locator('line[data-divergence]').count());
    // which side is which: the best (A) and the worst (B) by reward, or the first and last of a group all alike
    const rewards = await Promise.all(['a', 'b'].map(async (s) => /reward (\S+) ·/.exec((await page.locator(`.diff-sample[data-side="${s}"] h3 .muted`).textContent())!)![1]));
    const said = (await page.locator('[data-testid="best-worst"]').textContent())!;
    if (rewards[0] === rewards[1]) assert.match(said, new RegExp(`^group ${group}: every sample scored the same`));
    else assert.equal(said, `group ${group}: A is its best sample (reward ${rewards[0]}), B its worst (reward ${rewards[1]})`);
    assert.deepEqual(w.problems(), []);
  });

  test('a response hit opens the tokens tab scrolled to the token where it starts', async () => {
    const w = await open('#/health');
    const { page } = w;
    await page.locator('input[data-global-search]').fill('"the tool returned"');
    await page.waitForSelector(`.search-results[data-query='"the tool returned"'][data-done] .search-result`);
    const facts = (await page.locator('.search-result .facts').first().textContent())!;
    assert.match(facts, / · response$/);
    await page.locator('input[data-global-search]').press('Enter');
    await page.waitForFunction('location.hash.includes("tab=tokens") && location.hash.includes("at=")');
    const at = hashParams(page).get('at')!;
    await page.waitForSelector(`[data-pos="${at}"].found`);
    const text = await page.evaluate(`(() => { const els = [...document.querySelectorAll('[data-pos]')]; const i = els.findIndex((e) => e.getAttribute('data-pos') === '${at}'); return els.slice(i, i + 8).map((e) => e.textContent).join(''); })()`);
    assert.match(String(text).toLowerCase(), /tool/);
    await screenshot(page, 'search-opens-tokens');
    assert.deepEqual(w.problems(), []);
  });
});
