// The first screen of each view in headless Chromium, each on a fresh server over the run with an empty cache
// directory: navigation -> first content (the view's first painted chart or table) and navigation -> settled
// (no "loading" and no spinner left anywhere on the screen, and none for 2 s after). Views: Compute
// Utilization, Metrics, Rollouts of the newest train step, Sample tokens of that step's longest sample, the
// Health board and the Metrics view's dump/* charts (over the steps read so far).
// Usage: node --import tsx bench/firstScreen.ts --run DIR [--bin PATH] [--port N] [--views a,b] [--requests]. Prints one
// JSON line; --requests adds each view's API requests (path, start, end ms after navigation).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { chromium } from 'playwright-core';
import { load, round, startFreshServer } from './freshServer.ts';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const { values } = parseArgs({ options: { run: { type: 'string' }, bin: { type: 'string' }, port: { type: 'string' }, views: { type: 'string' }, requests: { type: 'boolean' } } });
if (!values.run) throw new Error('--run DIR is required');
const runDir = resolve(values.run);
const bin = resolve(values.bin ?? join(repoRoot, 'bin', 'rlsight.mjs'));
const port = Number(values.port ?? 17811);
const base = `http://127.0.0.1:${port}/`;
const SETTLE_QUIET_MS = 2000;
// evaluated in the page
declare const window: { __firstScreen?: { first: number | null; settled: number | null; quiet: number } };
declare const performance: { getEntriesByType(t: string): { name: string; startTime: number; responseEnd: number }[] };
declare const document: { querySelectorAll(selector: string): ArrayLike<{ textContent: string | null }> & Iterable<{ textContent: string | null }> };
const TIMEOUT_MS = 180_000;

// Watches the page from its first script: when a view's first content appears and when nothing is loading.
const WATCH = `(() => {
  const w = { first: null, settled: null, quietSince: null };
  window.__firstScreen = w;
  const tick = () => {
    const marks = performance.getEntriesByType('mark').filter((m) => m.name.startsWith('rlsight:painted:'));
    const now = performance.now();
    if (w.first === null && marks.length > 0) w.first = Math.min(...marks.map((m) => m.startTime));
    const loading = document.querySelector('.loading, .spinner') !== null;
    if (loading || w.first === null) w.settled = null;
    else if (w.settled === null) w.settled = now;
    w.quiet = w.settled === null ? 0 : now - w.settled;
  };
  setInterval(tick, 20);
})();`;

const scratch = mkdtempSync(join(tmpdir(), 'rlsight-bench-first-'));
const loadBefore = load();

// The views' addresses, resolved by a probe process over a cache directory of its own (thrown away).
const probeDir = mkdtempSync(join(scratch, 'probe-'));
const probe = await startFreshServer({ bin, runDir, port, cacheDir: probeDir });
const meta = (await (await fetch(`${base}api/meta`)).json()) as { rollout_ids: { train: number[] } };
const rid = meta.rollout_ids.train.at(-1) ?? 0;
const summary = (await (await fetch(`${base}api/rollout/${rid}/summary`)).json()) as { rows?: { sample_index: number; total_length: number }[] };
const rows = summary.rows ?? [];
const longest = [...rows].sort((a, b) => (b.total_length ?? 0) - (a.total_length ?? 0))[0];
await probe.stop();
rmSync(probeDir, { recursive: true, force: true });

const VIEWS: Record<string, string> = {
  compute_utilization: '#/timeline',
  metrics: '#/?cat=perf',
  rollouts: `#/rollout/${rid}`,
  sample_tokens: `#/rollout/${rid}/sample/${longest?.sample_index ?? 0}?tab=tokens`,
  health: '#/health',
  dump_metrics: '#/?cat=dump',
};
const wanted = values.views ? values.views.split(',') : Object.keys(VIEWS);

const browser = await chromium.launch({
  executablePath: process.env.RLSIGHT_CHROMIUM ?? '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
const out: Record<string, unknown> = {};
try {
  for (const name of wanted) {
    const cacheDir = mkdtempSync(join(scratch, 'cache-'));
    const server = await startFreshServer({ bin, runDir, port, cacheDir });
    const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
    await page.addInitScript(WATCH);
    try {
      await page.goto(base + VIEWS[name]);
      let timedOut = false;
      try {
        await page.waitForFunction((quiet) => (window.__firstScreen?.quiet ?? 0) >= quiet, SETTLE_QUIET_MS, { timeout: TIMEOUT_MS, polling: 100 });
      } catch {
        timedOut = true;
      }
      const w = (await page.evaluate(() => window.__firstScreen)) as { first: number | null; settled: number | null };
      const left = timedOut ? await page.evaluate(() => [...document.querySelectorAll('.loading')].map((e) => e.textContent?.trim())) : [];
      const requests = values.requests
        ? await page.evaluate(() =>
            performance
              .getEntriesByType('resource')
              .filter((r) => r.name.includes('/api/'))
              .map((r) => [r.name.replace(/^.*\/api\//, ''), Math.round(r.startTime), Math.round(r.responseEnd)]),
          )
        : undefined;
      out[name] = {
        first_content_ms: w.first === null ? null : round(w.first),
        settled_ms: timedOut || w.settled === null ? null : round(w.settled),
        ...(timedOut ? { still_loading_after_ms: TIMEOUT_MS, loading: left } : {}),
        peak_rss_mib: server.mib('VmHWM'),
        ...(requests ? { requests } : {}),
      };
    } finally {
      await page.close();
      await server.stop();
      rmSync(cacheDir, { recursive: true, force: true });
    }
  }
} finally {
  await browser.close();
  rmSync(scratch, { recursive: true, force: true });
}
console.log(JSON.stringify({ bench: 'first-screen', run: runDir, step: rid, samples: rows.length, tokens_sample_length: longest?.total_length ?? null, views: out, loadavg_before: loadBefore, loadavg_after: load() }));
