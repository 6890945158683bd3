// The Sample view and Rollouts on a run a custom trainer recorded through the Python client: a 6,000-token sample
// whose train and rollout log-probs part only after response token 4,000, short samples in a group of four, a
// zero-std group, and an eval step of prompts sampled once (headless Chromium against `rlsight serve`).
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { startCollectorService } from '../../src/collect/service.ts';
import { ensureWebBuilt, hasChromium, launch, openPage, REPO, screenshot, spawnServer, type Served } from './harness.ts';

declare const document: any;
declare const location: { hash: string };
declare const getComputedStyle: (e: unknown) => { backgroundImage: string };

const skip = hasChromium ? false : 'Debian chromium is not installed at /usr/bin/chromium';

const PROMPT = 40;
const RESP = 6000;
const DRIFT = 4000; // response token where train and rollout log-probs part
const PEAK = RESP - 500; // the one large lp_diff, far past the first window
const MASK = [2000, 2080]; // a loss-masked stretch of the long sample (response positions)

// step 3: the long sample 0 and samples 1-3 in group 0 (rewards 0, 1, 0, 0: mean 0.25, std 0.5, advantage
// (r - 0.25) / 0.5), sample 1 generated across weight versions 2 and 3; group 1 of two equal rewards (zero std).
// eval step 3: three prompts sampled once.
const TRAINER = `
import json, sys, rlsight
c = rlsight.connect(dump_details=sys.argv[1], node="10.0.0.1", gpus=[0], rank=0)
PROMPT, RESP, DRIFT, PEAK, MASK = ${PROMPT}, ${RESP}, ${DRIFT}, ${PEAK}, (${MASK[0]}, ${MASK[1]})
def sample(i, n, reward, group, versions, long=False):
    rlp = [-0.3 - 0.1 * ((k * 7) % 5) for k in range(n)]
    lp = [a + ((0.4 + 0.05 * (k % 7)) * (1 if k % 2 else -1) if long and k >= DRIFT else 0.0) for k, a in enumerate(rlp)]
    if long: lp[PEAK] = rlp[PEAK] + 3.0
    lm = [0 if long and MASK[0] <= k < MASK[1] else 1 for k in range(n)]
    return {"index": i, "group_index": group, "prompt": [{"role": "user", "content": "question %d" % i}],
            "response": "answer %d" % i, "tokens": [(k * 31 + i) % 500 + 5 for k in range(PROMPT + n)], "response_length": n,
            "reward": reward, "status": "completed", "loss_mask": lm, "rollout_log_probs": rlp, "log_probs": lp,
            "entropy": [0.5] * n, "advantages": [(reward - 0.25) / 0.5 if group == 0 else 0.0] * n, "weight_versions": versions}
train = [sample(0, RESP, 0.0, 0, ["3"], long=True)] + [sample(i, 12, r, 0, ["2", "3"] if i == 1 else ["3"]) for i, r in ((1, 1.0), (2, 0.0), (3, 0.0))]
train += [sample(4, 10, 1.0, 1, ["3"]), sample(5, 10, 1.0, 1, ["3"])]
c.samples(3, train)
c.samples(3, [sample(100, 10, 1.0, 0, ["3"]), sample(101, 10, 0.0, 1, ["3"]), sample(102, 10, 1.0, 2, ["3"])], evaluation=True)
print(json.dumps({"flushed": c.flush(60)}))
c.close()
`;

async function collectedRun(): Promise<Served> {
  const base = mkdtempSync(join(tmpdir(), 'rlsight-e2e-sample-'));
  const runDir = join(base, 'run');
  try {
    const svc = await startCollectorService({ dashboardDir: join(runDir, 'dashboard'), port: 0, flushIntervalS: 0.2, log: () => {} });
    try {
      const py = await promisify(execFile)('python3', ['-c', TRAINER, runDir], { env: { ...process.env, PYTHONPATH: join(REPO, 'python'), PYTHONDONTWRITEBYTECODE: '1' }, encoding: 'utf8', timeout: 120_000 });
      assert.equal(JSON.parse(py.stdout.trim().split('\n').at(-1)!).flushed, true);
    } finally {
      await svc.close();
    }
    return await spawnServer(base, runDir, ['serve', runDir]);
  } catch (e) {
    rmSync(base, { recursive: true, force: true });
    throw e;
  }
}

/** Painted pixels of a colour per canvas column, summed over the columns of each [from, to) share of the canvas width. */
async function columnCounts(page: Page, selector: string, hex: string, shares: [number, number][]): Promise<number[]> {
  return page.evaluate(
    ({ selector, hex, shares }) => {
      const c = document.querySelector(selector);
      const { data, width, height } = c.getContext('2d').getImageData(0, 0, c.width, c.height);
      const want = [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16));
      return shares.map(([a, b]: [number, number]) => {
        let n = 0;
        const x0 = Math.floor(a * width);
        const x1 = Math.floor(b * width);
        for (let y = 0; y < height; y++)
          for (let x = x0; x < x1; x++) {
            const i = (y * width + x) * 4;
            if (want.every((w, k) => Math.abs(data[i + k] - w) <= 30)) n++;
          }
        return n / Math.max(1, x1 - x0);
      });
    },
    { selector, hex, shares },
  );
}

const range = async (page: Page) => {
  const m = /tokens (\d+)–(\d+) of (\d+)/.exec((await page.textContent('[data-testid=token-range]'))!)!;
  return { start: Number(m[1]), end: Number(m[2]), total: Number(m[3]) };
};

describe('Sample view and Rollouts on a collected run with a long sample', { skip }, () => {
  let served: Served;
  let browser: Browser;
  before(async () => {
    ensureWebBuilt();
    served = await collectedRun();
    browser = await launch();
  });
  after(async () => {
    await browser?.close();
    await served?.stop();
  });
  const api = async <T,>(path: string): Promise<T> => (await fetch(`${served.url}api/${path}`)).json() as Promise<T>;

  it('tokens: the whole response at a glance (overview and chart), one request for it, the peak searched over all of it', async () => {
    const w = await openPage(browser, 1366, 800);
    const { page } = w;
    const asked: string[] = [];
    page.on('request', (r) => /\/sample\/0\/tokens/.test(r.url()) && asked.push(new URL(r.url()).search));
    await page.goto(`${served.url}#/rollout/3/sample/0?tab=tokens`);
    await page.waitForSelector('[data-testid=token-overview] canvas');
    await page.locator('[data-testid=token-overview]', { hasText: 'click or drag to move the window' }).waitFor();
    const total = PROMPT + RESP;
    assert.deepEqual(await range(page), { start: 0, end: 1024, total }, 'the text shows the first window');
    // the overview spans the response: flat before the drift, busy after it
    const drift = DRIFT / RESP;
    const [calm, busy] = await columnCounts(page, '[data-testid=token-overview] canvas', '#ff8a3d', [
      [0.05, drift - 0.05],
      [drift + 0.03, 0.98],
    ]);
    assert.ok(busy! > 5 * Math.max(1, calm!), `overview: ${calm} orange pixels a column before the drift, ${busy} after`);
    // so does the chart below, with the window marked on it
    assert.match((await page.textContent('[data-testid=chart-span]'))!, new RegExp(`whole response \\(${PROMPT}–${total}\\)`));
    const [chartCalm, chartBusy] = await columnCounts(page, '[data-testid=tokens] .uplot canvas', '#ff8a3d', [
      [0.15, 0.55],
      [0.75, 0.95],
    ]);
    assert.ok(chartBusy! > 5 * Math.max(1, chartCalm!), `chart: ${chartCalm} orange pixels a column before the drift, ${chartBusy} after`);
    await screenshot(page, 'sample-tokens-overview');
    // the sample is read whole in one request beside the first window's
    assert.equal(asked.length, 2, asked.join(' '));

    // peak: the largest |lp_diff| of the whole sample, its window shown and the token marked
    await page.click('[data-testid=peak]');
    await page.waitForFunction(() => /start=\d+/.test(location.hash));
    const at = await range(page);
    assert.ok(at.start <= PROMPT + PEAK && PROMPT + PEAK < at.end, `peak ${PROMPT + PEAK} in the window ${JSON.stringify(at)}`);
    await page.waitForSelector(`[data-testid=token-text] .tok.hot[data-pos="${PROMPT + PEAK}"]`);
    // a click on the overview shows the tokens there
    const box = (await page.locator('[data-testid=token-overview] canvas').boundingBox())!;
    await page.mouse.click(box.x + box.width * 0.25, box.y + box.height / 2);
    await page.waitForFunction((s) => !location.hash.includes(`start=${s}`), at.start);
    const there = await range(page);
    const pos = PROMPT + 0.25 * RESP;
    assert.ok(there.start <= pos && pos < there.end, `position ${pos} in the window ${JSON.stringify(there)}`);
    await page.click('button[title="next window"]');
    await page.waitForFunction((s) => (document.querySelector('[data-testid=token-range]')?.textContent ?? '').startsWith(`tokens ${s}`), there.end);
    assert.equal(asked.length, 2, `moving the window asks nothing more: ${asked.join(' ')}`);
    await screenshot(page, 'sample-tokens-overview-moved');
    assert.deepEqual(w.problems(), []);
    await page.close();
  });

  it('tokens: a short sample is shown whole; the chart labels whole token positions only', async () => {
    const w = await openPage(browser, 1366, 800);
    const { page } = w;
    // the labels the chart draws on its canvas, with their alignment (uPlot centres the x axis's)
    await page.addInitScript(() => {
      const g = globalThis as any;
      g.__labels = [];
      const fill = g.CanvasRenderingContext2D.prototype.fillText;
      g.CanvasRenderingContext2D.prototype.fillText = function (this: any, text: string, ...rest: unknown[]) {
        g.__labels.push({ text: String(text), align: this.textAlign, baseline: this.textBaseline });
        return fill.call(this, text, ...rest);
      };
    });
    await page.goto(`${served.url}#/rollout/3/sample/2?tab=tokens`);
    await page.waitForSelector('[data-testid=tokens] .uplot canvas');
    await page.waitForTimeout(300);
    assert.deepEqual(await range(page), { start: 0, end: PROMPT + 12, total: PROMPT + 12 });
    assert.equal(await page.inputValue('[data-testid=window-size]'), 'all');
    const labels: { text: string; align: string; baseline: string }[] = await page.evaluate(() => (globalThis as any).__labels);
    const x = labels.filter((l) => l.align === 'center' && /^[\d,.]+$/.test(l.text)).map((l) => Number(l.text.replace(/,/g, '')));
    assert.ok(x.length >= 3, `x labels drawn: ${JSON.stringify(labels)}`);
    assert.ok(x.every(Number.isInteger), `whole positions only: ${x}`);
    assert.deepEqual(w.problems(), []);
    await page.close();
  });

  it('tokens: loss-masked tokens are hatched, unlike the prompt, and the legend says which is which', async () => {
    const w = await openPage(browser, 1366, 800);
    const { page } = w;
    const look = (sel: string) => page.$eval(sel, (e) => getComputedStyle(e).backgroundImage);
    await page.goto(`${served.url}#/rollout/3/sample/0?tab=tokens&win=256`);
    await page.waitForSelector('[data-testid=token-text] .tok.prompt');
    assert.equal(await look('[data-testid=token-text] .tok.prompt'), 'none', 'prompt tokens: grey text, no pattern');
    await page.goto(`${served.url}#/rollout/3/sample/0?tab=tokens&win=256&start=${PROMPT + MASK[0]! - 20}`);
    await page.waitForSelector('[data-testid=token-text] .tok.masked');
    assert.match(await look('[data-testid=token-text] .tok.masked'), /gradient/);
    assert.equal(await look('[data-testid=token-text] .tok:not(.masked)'), 'none');
    assert.match(await look('.token-legend .tok.masked'), /gradient/);
    assert.match((await page.textContent('.token-legend'))!, /prompt grey text.*loss-masked hatched/);
    await screenshot(page, 'sample-tokens-masked');
    // a window size the select does not offer is said, not ignored
    await page.goto(`${served.url}#/rollout/3/sample/0?tab=tokens&win=777`);
    assert.match((await page.locator('[data-testid=win-note]').textContent())!, /win=777 is not a window size/);
    assert.deepEqual(w.problems(), []);
    await page.close();
  });

  it("header: the sample's advantage beside its group's reward mean and std; best vs worst only for a group of two or more", async () => {
    const w = await openPage(browser, 1366, 800);
    const { page } = w;
    await page.goto(`${served.url}#/rollout/3/sample/2`);
    await page.waitForSelector('[data-testid=advantage]');
    assert.match((await page.textContent('[data-testid=group-rewards]'))!, /group mean 0\.250 · std 0\.500 · n 4/);
    assert.match((await page.textContent('[data-testid=advantage]'))!, /advantage -0\.500/);
    assert.match((await page.getAttribute('[data-testid=advantage]', 'title'))!, /\(reward 0 − group mean 0\.250\) ÷ group std 0\.500 = -0\.500/);
    assert.match((await page.getAttribute('a[data-testid=best-vs-worst]', 'href'))!, /#\/diff\/sample\?step=3&group=0/);
    await screenshot(page, 'sample-header-advantage');
    // an eval prompt sampled once: nothing to compare the sample with
    await page.goto(`${served.url}#/rollout/3/sample/100?eval=1`);
    const lone = page.locator('[data-testid=best-vs-worst]');
    await lone.waitFor();
    assert.equal(await lone.evaluate((e) => e.tagName), 'SPAN');
    assert.equal(await lone.getAttribute('aria-disabled'), 'true');
    assert.match((await lone.getAttribute('title'))!, /alone/);
    assert.equal(await page.locator('[data-testid=group-rewards]').count(), 0, 'a group of one has no reward spread to show');
    await screenshot(page, 'sample-header-lone');
    assert.deepEqual(w.problems(), []);
    await page.close();
  });

  it('rollouts: an eval step has its figures from its rows; a train step adds samples and avg staleness', async () => {
    const w = await openPage(browser, 1366, 800);
    const { page } = w;
    await page.goto(`${served.url}#/rollout/3?eval=1`);
    const figures = page.locator('[data-testid=eval-summary] .stat');
    await page.locator('[data-testid=eval-summary] .stat', { hasText: 'reward mean' }).waitFor();
    const read = async (sel: string) =>
      Object.fromEntries(await page.$$eval(`${sel} .stat`, (els) => els.map((e) => [e.querySelector('.k').textContent, e.querySelector('.v').textContent])));
    const ev = await read('[data-testid=eval-summary]');
    assert.equal(await figures.count(), Object.keys(ev).length);
    assert.equal(ev.samples, '3');
    assert.equal(ev['reward mean'], '0.667');
    assert.equal(ev['truncated frac'], '0');
    await screenshot(page, 'rollouts-eval-figures');
    await page.goto(`${served.url}#/rollout/3`);
    await page.locator('[data-testid=dump-summary] .stat', { hasText: 'avg staleness' }).waitFor();
    await page.waitForFunction(() => document.querySelector('[data-testid=dump-summary] .stat .v')?.textContent !== '…');
    const train = await read('[data-testid=dump-summary]');
    assert.equal(train.samples, '6');
    assert.equal(train['avg staleness'], '0.167');
    assert.deepEqual(w.problems(), []);
    await page.close();
  });

  it("rollouts: a mixed-version sample's versions as a range; the legend counts only the zero-std groups shown", async () => {
    const w = await openPage(browser, 1366, 800);
    const { page } = w;
    await page.goto(`${served.url}#/rollout/3`);
    await page.locator('[data-testid=scatter-legend]', { hasText: 'zero-std group (1)' }).waitFor();
    const cellOf = async (sample: string, col: string) =>
      page.evaluate(
        ({ sample, col }) => {
          const heads = [...document.querySelectorAll('[data-testid=samples-table] th')].map((t: any) => t.textContent.replace(/[▾▴\s]/g, ''));
          const row = [...document.querySelectorAll('[data-testid=samples-table] tbody tr')].find((tr: any) => tr.children[0]?.textContent === sample) as any;
          return row?.children[heads.indexOf(col)]?.textContent ?? null;
        },
        { sample, col },
      );
    assert.equal(await cellOf('1', 'weight_version'), '2–3');
    assert.equal(await cellOf('2', 'weight_version'), '3');
    // group 0 alone: its group is not zero-std, so the ring is not in the legend
    await page.goto(`${served.url}#/rollout/3?group=0`);
    await page.locator('[data-testid=group-filter]').waitFor();
    await page.locator('[data-testid=scatter-legend]', { hasText: 'group 0' }).waitFor();
    await page.waitForTimeout(300);
    assert.doesNotMatch((await page.textContent('[data-testid=scatter-legend]'))!, /zero-std/);
    await page.goto(`${served.url}#/rollout/3?group=1`);
    await page.locator('[data-testid=scatter-legend]', { hasText: 'zero-std group (1)' }).waitFor();
    await screenshot(page, 'rollouts-group-legend');
    assert.deepEqual(w.problems(), []);
    await page.close();
  });
});
