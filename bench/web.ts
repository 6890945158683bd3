// Browser benchmark: navigation → first paint with data, per view, on the demo, the --large demo and a 1,024-GPU fleet.
// Prints one JSON line. Usage: node --import tsx bench/web.ts [--skip-large] [--skip-fleet]
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { generateDemoRun, generateSyntheticRun } from '../src/demo/index.ts';
import { ensureWebBuilt, REPO } from '../test/e2e/harness.ts';

declare const performance: { getEntriesByName(n: string): { startTime: number }[]; getEntriesByType(t: string): { name: string; responseEnd: number }[] };

const args = new Set(process.argv.slice(2));

async function freePort(): Promise<number> {
  return new Promise((res) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const a = s.address();
      s.close(() => res(typeof a === 'object' && a ? a.port : 0));
    });
  });
}

async function serve(runDir: string, extra: string[] = []): Promise<{ url: string; child: ChildProcess }> {
  const port = await freePort();
  const child = spawn(process.execPath, [join(REPO, 'bin', 'rlsight.mjs'), 'serve', '--dump-details', runDir, '--port', String(port), '--no-cache', ...extra], { stdio: ['ignore', 'pipe', 'inherit'] });
  await new Promise<void>((res, rej) => {
    let log = '';
    child.stdout!.on('data', (d) => ((log += d), /serving http/.test(log) && res()));
    child.once('exit', (c) => rej(new Error(`server exited ${c}`)));
  });
  return { url: `http://127.0.0.1:${port}/`, child };
}

interface Timing {
  /** Navigation start → the view's first frame with data. */
  first_paint_ms: number;
  /** The last API answer before that frame → the frame: the app's own cost. */
  after_data_ms: number;
  api_calls: number;
}

async function measure(browser: Browser, url: string, mark: string): Promise<Timing> {
  const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
  // A warm-up load so server caches and the browser's module cache do not dominate.
  await page.goto(url);
  await page.waitForFunction((m) => performance.getEntriesByName(`rlsight:painted:${m}`).length > 0, mark, { timeout: 120_000 });
  await page.goto('about:blank');
  await page.goto(url);
  await page.waitForFunction((m) => performance.getEntriesByName(`rlsight:painted:${m}`).length > 0, mark, { timeout: 120_000 });
  const t = await page.evaluate((m) => {
    const painted = performance.getEntriesByName(`rlsight:painted:${m}`)[0]!.startTime;
    const api = performance.getEntriesByType('resource').filter((r) => r.name.includes('/api/') && r.responseEnd <= painted);
    const lastData = Math.max(0, ...api.map((r) => r.responseEnd));
    return { first_paint_ms: +painted.toFixed(1), after_data_ms: +(painted - lastData).toFixed(1), api_calls: api.length };
  }, mark);
  await page.close();
  return t;
}

const VIEWS: [string, string, string][] = [
  ['metrics', '#/?cat=perf', 'metrics'],
  ['timeline', '#/timeline', 'timeline'],
  ['rollouts', '#/rollout', 'rollouts'],
  ['sample', '#/rollout/{last}/sample/{first}', 'sample'],
  ['tokens', '#/rollout/{last}/sample/{first}?tab=tokens', 'tokens'],
];

async function benchRun(browser: Browser, runDir: string, views = VIEWS, extra: string[] = []): Promise<Record<string, Timing>> {
  const { url, child } = await serve(runDir, extra);
  try {
    const meta = (await (await fetch(`${url}api/meta`)).json()) as { rollout_ids: { train: number[] } };
    const last = meta.rollout_ids.train.at(-1);
    let first = 0;
    if (last !== undefined) {
      const s = (await (await fetch(`${url}api/rollout/${last}/summary`)).json()) as { rows: { sample_index: number }[] };
      first = s.rows[0]?.sample_index ?? 0;
    }
    const out: Record<string, Timing> = {};
    for (const [name, hash, mark] of views) out[name] = await measure(browser, url + hash.replace('{last}', String(last)).replace('{first}', String(first)), mark);
    return out;
  } finally {
    child.kill('SIGTERM');
  }
}

ensureWebBuilt();
const base = mkdtempSync(join(tmpdir(), 'rlsight-bench-web-'));
const browser = await chromium.launch({
  executablePath: process.env.RLSIGHT_CHROMIUM ?? '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
const result: Record<string, unknown> = { bench: 'web', target_after_data_ms: 150 };
try {
  await generateDemoRun(join(base, 'demo'), { seed: 1 });
  result.demo = await benchRun(browser, join(base, 'demo'));
  if (!args.has('--skip-large')) {
    await generateDemoRun(join(base, 'large'), { seed: 1, large: true });
    result.large = await benchRun(browser, join(base, 'large'));
  }
  if (!args.has('--skip-fleet')) {
    await generateSyntheticRun(join(base, 'fleet'), { gpus: 1024, hours: 1, seed: 1 });
    result.fleet_1024 = await benchRun(browser, join(base, 'fleet'), [['fleet', '#/timeline', 'fleet']]);
  }
} finally {
  await browser.close();
  rmSync(base, { recursive: true, force: true });
}
console.log(JSON.stringify(result));
