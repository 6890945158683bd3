// Browser test harness: a demo run served by the real `rlsight serve`, headless Debian Chromium, error capture, pixel probes.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Browser, chromium, type Page } from 'playwright-core';
import { isFresh } from '../../bin/freshness.mjs';
import { generateDemoRun } from '../../src/demo/index.ts';
import { ensureCliBuilt, RLSIGHT_BIN } from '../support/cli.ts';

// bin/rlsight.mjs runs dist/ as built: rebuild it first when the sources are newer.
ensureCliBuilt();

// Code passed to page.evaluate runs in the browser; these names exist there, not in Node.
declare const document: any;
export type BrowserCanvas = { width: number; height: number; getContext(k: '2d'): any; getBoundingClientRect(): { height: number } };

export const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const CHROMIUM = process.env.RLSIGHT_CHROMIUM ?? '/usr/bin/chromium';
export const SCREENSHOTS = join(REPO, 'test-results', 'screenshots');

/** Browser tests skip without Chromium on a developer's machine; under CI they run and fail loudly instead. */
export const hasChromium = existsSync(CHROMIUM) || process.env.CI === 'true';

/** Builds web/dist when it is missing or older than any web source, so the tests never run a stale app. */
export function ensureWebBuilt(): void {
  if (isFresh(join(REPO, 'web', 'dist', 'index.html'), join(REPO, 'web'), ['dist'])) return;
  execFileSync(process.execPath, [join(REPO, 'node_modules', 'vite', 'bin', 'vite.js'), 'build', 'web', '--logLevel', 'warn'], { cwd: REPO, stdio: 'inherit' });
}

async function freePort(): Promise<number> {
  return new Promise((res, rej) => {
    const s = createServer();
    s.once('error', rej);
    s.listen(0, '127.0.0.1', () => {
      const a = s.address();
      const port = typeof a === 'object' && a ? a.port : 0;
      s.close(() => res(port));
    });
  });
}

export interface Served {
  url: string;
  runDir: string;
  stop(): Promise<void>;
}

export interface DemoOptions {
  steps?: number;
  /** The 128-GPU demo (16 nodes) instead of the 16-GPU one. */
  large?: boolean;
  extraArgs?: string[];
  /** Alters the generated run before it is served (a test's own copy, e.g. to take a lane's data away). */
  prepare?: (runDir: string) => void | Promise<void>;
  /** Also serve, second, a run of the same recipe that collapses (its zero-std share climbs). */
  compare?: boolean;
  /** The wall clock the run ends by (epoch seconds; default now): an earlier one makes a run that stopped writing. */
  now?: number;
}

/** A browser suite's server and browser. */
export interface BrowserSuite<S> {
  served: S;
  browser: Browser;
}

/** Starts a suite's server (after building the app when it is stale) and its browser; a browser that fails to start stops the server. */
export async function startBrowserSuite<S extends { stop(): Promise<void> } = Served>(serve: () => Promise<S>): Promise<BrowserSuite<S>> {
  ensureWebBuilt();
  const served = await serve();
  try {
    return { served, browser: await launch() };
  } catch (e) {
    await served.stop();
    throw e;
  }
}

/** Stops what `startBrowserSuite` started (either may be missing when it failed). */
export async function stopBrowserSuite(suite: { served?: { stop(): Promise<void> }; browser?: Browser }): Promise<void> {
  try {
    await suite.browser?.close();
  } finally {
    await suite.served?.stop();
  }
}

/** Generates a demo run and serves it with `rlsight serve --follow` on a free port. */
export async function serveDemo(opts: DemoOptions = {}): Promise<Served> {
  const base = mkdtempSync(join(tmpdir(), 'rlsight-e2e-'));
  try {
    return await startOn(base, opts);
  } catch (e) {
    rmSync(base, { recursive: true, force: true });
    throw e;
  }
}

async function startOn(base: string, opts: DemoOptions): Promise<Served> {
  const runDir = join(base, 'run');
  await generateDemoRun(runDir, { steps: opts.steps ?? 4, seed: 7, large: opts.large ?? false, now: opts.now });
  await opts.prepare?.(runDir);
  const others: string[] = [];
  if (opts.compare) {
    others.push(join(base, 'collapse'));
    await generateDemoRun(others[0]!, { steps: opts.steps ?? 4, seed: 7, collapse: true });
  }
  return spawnServer(base, runDir, ['serve', '--dump-details', runDir, ...others, '--follow', ...(opts.extraArgs ?? [])]);
}

/** `rlsight demo` itself (its two runs, `healthy` and `collapse`, ~200 steps each), written under a temporary folder. */
export async function serveRlsightDemo(): Promise<Served> {
  const base = mkdtempSync(join(tmpdir(), 'rlsight-e2e-demo-'));
  try {
    return await spawnServer(base, join(base, 'healthy'), ['demo', '--out', base]);
  } catch (e) {
    rmSync(base, { recursive: true, force: true });
    throw e;
  }
}

/** Starts `rlsight ARGS --port P` and waits until it serves; stopping it removes `base`. */
export async function spawnServer(base: string, runDir: string, args: string[]): Promise<Served> {
  const port = await freePort();
  const child: ChildProcess = spawn(process.execPath, [RLSIGHT_BIN, ...args, '--port', String(port)], { cwd: REPO, stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  child.stdout!.on('data', (d) => (log += d));
  child.stderr!.on('data', (d) => (log += d));
  await new Promise<void>((res, rej) => {
    const t = setTimeout(() => rej(new Error(`server did not start:\n${log}`)), 180_000);
    const check = () => {
      if (/serving http/.test(log)) {
        clearTimeout(t);
        res();
      }
    };
    child.stdout!.on('data', check);
    child.once('exit', (code) => {
      clearTimeout(t);
      rej(new Error(`server exited with ${code}:\n${log}`));
    });
  }).catch((e) => {
    child.kill('SIGTERM');
    throw e;
  });
  return {
    url: `http://127.0.0.1:${port}/`,
    runDir,
    async stop() {
      child.kill('SIGTERM');
      await new Promise((r) => (child.exitCode !== null ? r(null) : child.once('exit', r)));
      rmSync(base, { recursive: true, force: true });
    },
  };
}

export async function launch(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}

export interface Watched {
  page: Page;
  /** Console errors, page errors and failed API answers not declared as expected. */
  problems(): string[];
  expect(pattern: RegExp): void;
}

export async function openPage(browser: Browser, width = 1440, height = 900): Promise<Watched> {
  const page = await browser.newPage({ viewport: { width, height } });
  const seen: string[] = [];
  const expected: RegExp[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error') seen.push(`console: ${m.text()}`);
  });
  page.on('pageerror', (e) => seen.push(`pageerror: ${e.message}`));
  page.on('response', (r) => {
    if (r.status() >= 400) seen.push(`http ${r.status()}: ${new URL(r.url()).pathname}${new URL(r.url()).search}`);
  });
  return {
    page,
    expect: (p) => expected.push(p),
    problems: () =>
      seen.filter((s) => {
        if (expected.some((p) => p.test(s))) return false;
        // Chromium also logs every 4xx/5xx answer as a console error; its `http` line is judged instead.
        return !/^console: Failed to load resource: the server responded with a status of \d{3}/.test(s);
      }),
  };
}

export async function screenshot(page: Page, name: string, fullPage = false): Promise<void> {
  mkdirSync(SCREENSHOTS, { recursive: true });
  await page.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage });
}

export interface PixelStats {
  width: number;
  height: number;
  /** Pixels that are not fully transparent. */
  painted: number;
  /** Distinct colours (quantised to 4 bits per channel). */
  colours: number;
  /** Pixels within ±24 per channel of each requested colour. */
  matches: Record<string, number>;
}

/** Reads a canvas's pixels in the page: how much is painted, how colourful, and where given colours occur. */
export async function canvasPixels(page: Page, selector: string, colours: string[] = []): Promise<PixelStats> {
  return page.evaluate(
    ({ selector, colours }) => {
      const c = document.querySelector(selector) as BrowserCanvas | null;
      if (!c) throw new Error(`no canvas ${selector}`);
      const ctx = c.getContext('2d')!;
      const { data } = ctx.getImageData(0, 0, c.width, c.height);
      const want = colours.map((h) => [parseInt(h.slice(1, 3), 16), parseInt(h.slice(3, 5), 16), parseInt(h.slice(5, 7), 16)]);
      const matches: Record<string, number> = Object.fromEntries(colours.map((h) => [h, 0]));
      const distinct = new Set<number>();
      let painted = 0;
      for (let i = 0; i < data.length; i += 4) {
        if (data[i + 3] === 0) continue;
        painted++;
        distinct.add(((data[i]! >> 4) << 8) | ((data[i + 1]! >> 4) << 4) | (data[i + 2]! >> 4));
        want.forEach((w, k) => {
          if (Math.abs(data[i]! - w[0]!) <= 24 && Math.abs(data[i + 1]! - w[1]!) <= 24 && Math.abs(data[i + 2]! - w[2]!) <= 24) matches[colours[k]!]!++;
        });
      }
      return { width: c.width, height: c.height, painted, colours: distinct.size, matches };
    },
    { selector, colours },
  );
}

export function hashParams(page: Page): URLSearchParams {
  const h = new URL(page.url()).hash;
  const i = h.indexOf('?');
  return new URLSearchParams(i >= 0 ? h.slice(i + 1) : '');
}

export function hashPath(page: Page): string {
  return new URL(page.url()).hash.replace(/\?.*$/, '');
}

/** Waits until every Metrics chart on `page` is drawn with `series` series in its legend (the charts there first: every() of none is true). */
export async function chartsWithSeries(page: Page, series: number, timeout = 20_000): Promise<void> {
  await page.waitForFunction(
    (n) => {
      const panels = [...(globalThis as any).document.querySelectorAll('.chart-panel[data-metric]')];
      return panels.length > 0 && panels.every((p: any) => p.querySelectorAll('.u-legend .u-series').length === n);
    },
    series,
    { timeout },
  );
}
