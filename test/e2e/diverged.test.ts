// A metric logged as NaN or ±inf: the chart marks where it was logged (the answer holds it as null, which a line
// alone would pass over as a gap).
import assert from 'node:assert/strict';
import { appendFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Browser } from 'playwright-core';
import { hasChromium, openPage, screenshot, type Served, serveDemo, startBrowserSuite, stopBrowserSuite } from './harness.ts';

describe('a metric that diverged (headless Chromium)', { skip: hasChromium ? false : 'Debian chromium is not installed at /usr/bin/chromium' }, () => {
  let served: Served;
  let browser: Browser;
  const KEY = 'train/diverged_loss';
  before(async () => {
    // two more records on the run's newest steps: the loss blows up to inf, then NaN
    const prepare = (runDir: string): void => {
      const file = join(runDir, 'dashboard', 'metrics.jsonl');
      const last = readFileSync(file, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { ts: number; step_key: string | null; step: number | null }).filter((r) => r.step_key === 'rollout/step' && r.step !== null).at(-1)!;
      const line = (step: number, ts: number, v: string): string => `{"ts": ${ts}, "step_key": "rollout/step", "step": ${step}, "metrics": {"rollout/step": ${step}, "${KEY}": ${v}}}\n`;
      appendFileSync(file, line(last.step! - 2, last.ts + 1, '0.5') + line(last.step! - 1, last.ts + 2, 'Infinity') + line(last.step!, last.ts + 3, 'NaN'));
    };
    ({ served, browser } = await startBrowserSuite(() => serveDemo({ steps: 3, prepare })));
  });
  after(() => stopBrowserSuite({ served, browser }));

  it('the answer says which points are not finite, and the chart marks them', async () => {
    const answer = (await (await fetch(`${served.url}api/metrics?keys=${encodeURIComponent(KEY)}`)).json()) as Record<string, { y: (number | null)[]; nonfinite?: [number, string][] }>;
    assert.deepEqual(answer[KEY]!.y, [0.5, null, null]);
    assert.deepEqual(answer[KEY]!.nonfinite, [[1, 'Infinity'], [2, 'NaN']]);
    const w = await openPage(browser);
    const { page } = w;
    await page.goto(`${served.url}#/?q=${encodeURIComponent(KEY)}`);
    const panel = page.locator(`.chart-panel[data-metric="${KEY}"]`);
    await panel.waitFor();
    assert.equal(await panel.getAttribute('data-markers'), 'Infinity | NaN');
    await screenshot(page, 'metrics-diverged');
    await page.close();
  });
});
