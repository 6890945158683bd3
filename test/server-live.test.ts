// The server over a changing or locked-down run: dumps appearing, a read-only directory, --follow, the CLI.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { appendFileSync, chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { after, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { openRun } from '../src/commands/openRun.ts';
import { startServer } from '../src/server/listen.ts';
import { copyFixtureRun, diffJson, readFixtureJson } from './support/fixtures.ts';
import { ensureCliBuilt, RLSIGHT_BIN } from './support/cli.ts';

// bin/rlsight.mjs runs dist/ as built: rebuild it first when the sources are newer.
ensureCliBuilt();

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** Path → "size:mtime" of every file and directory below `root`. */
function snapshotTree(root: string): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (p: string): void => {
    const st = statSync(p);
    out.set(p, `${st.size}:${st.mtimeMs}:${st.isDirectory() ? readdirSync(p).sort().join('|') : ''}`);
    if (st.isDirectory()) for (const name of readdirSync(p)) walk(join(p, name));
  };
  walk(root);
  return out;
}

function setModes(root: string, dirMode: number, fileMode: number): void {
  const walk = (p: string): void => {
    const isDir = statSync(p).isDirectory();
    if (isDir) for (const name of readdirSync(p)) walk(join(p, name));
    chmodSync(p, isDir ? dirMode : fileMode);
  };
  walk(root);
}

/** Asks until the answer is no longer `stale` (the reader may reuse a file's stat for a moment). */
async function settle(url: URL, stale: number): Promise<Response> {
  for (let i = 0; ; i++) {
    const res = await fetch(url);
    if (res.status !== stale || i >= 50) return res;
    await res.arrayBuffer();
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('a dump that appears while serving', () => {
  test('a truncated young file is 503 with Retry-After, then 200 once complete', async () => {
    const copy = copyFixtureRun();
    const file = join(copy.dir, 'rollout_data', '2.pt');
    const full = readFileSync(file);
    rmSync(file);
    rmSync(join(copy.dir, 'dashboard_columns', 'rollout_2.parquet'));
    const server = await startServer(await openRun(copy.dir), { port: 0 });
    try {
      const url = new URL('/api/rollout/2/summary', server.url);
      assert.equal((await fetch(url)).status, 404);
      writeFileSync(file, full.subarray(0, Math.floor(full.length / 2)));
      const busy = await settle(url, 404);
      assert.equal(busy.status, 503, await busy.clone().text());
      assert.ok(Number(busy.headers.get('retry-after')) > 0);
      // The advisory reads the newest step; one still being written leaves its other rules answering.
      const advisory = await fetch(new URL('/api/advisory', server.url));
      assert.equal(advisory.status, 200, await advisory.clone().text());
      assert.equal(((await advisory.json()) as any).mfu.steps, 2);
      writeFileSync(file, full);
      const ok = await settle(url, 503);
      assert.equal(ok.status, 200);
      const golden = readFixtureJson('miles-demo', 'golden', '153.json');
      assert.equal(golden.request, '/api/rollout/2/summary');
      assert.equal(diffJson(await ok.json(), golden.body), null);
    } finally {
      await server.close();
      copy.dispose();
    }
  });
});

describe('a read-only run directory', () => {
  test('every endpoint still answers and nothing under the run changes', async () => {
    const copy = copyFixtureRun();
    setModes(copy.dir, 0o555, 0o444);
    const before = snapshotTree(copy.dir);
    const cacheDir = mkdtempSync(join(tmpdir(), 'rlsight-cache-'));
    const server = await startServer(await openRun(copy.dir, { cacheDir }), { port: 0 });
    try {
      const index = readFixtureJson<{ entries: { request: string; status: number }[] }>('miles-demo', 'golden', 'index.json');
      const ok = index.entries.filter((e) => e.status === 200);
      assert.ok(ok.length > 200);
      for (const e of ok) {
        const res = await fetch(new URL(e.request, server.url));
        await res.arrayBuffer();
        assert.equal(res.status, 200, e.request);
      }
    } finally {
      await server.close();
      setModes(copy.dir, 0o755, 0o644);
      rmSync(cacheDir, { recursive: true, force: true });
    }
    try {
      const afterSnap = snapshotTree(copy.dir);
      assert.deepEqual([...afterSnap.keys()].sort(), [...before.keys()].sort());
      for (const [p, v] of before) assert.equal(afterSnap.get(p), v, p);
    } finally {
      copy.dispose();
    }
  });
});

/** Reads SSE events from a streaming response until `want` names have all been seen. */
async function readEvents(res: Response, want: string[], onOpen: () => Promise<void>): Promise<Map<string, any>> {
  const reader = res.body!.getReader();
  const seen = new Map<string, any>();
  let buffer = '';
  let opened = false;
  while (!want.every((w) => seen.has(w))) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += Buffer.from(value).toString('utf8');
    let cut: number;
    while ((cut = buffer.indexOf('\n\n')) >= 0) {
      const block = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      const event = /^event: (.*)$/m.exec(block)?.[1];
      const data = /^data: (.*)$/m.exec(block)?.[1];
      if (event) seen.set(event, data ? JSON.parse(data) : null);
      if (event === 'hello' && !opened) {
        opened = true;
        await onOpen();
      }
    }
  }
  await reader.cancel();
  return seen;
}

describe('--follow', () => {
  test('new steps and metric keys are picked up and announced on /api/events', async () => {
    const copy = copyFixtureRun();
    const server = await startServer(await openRun(copy.dir), { port: 0, follow: true, followTimer: false });
    try {
      const meta0: any = await (await fetch(new URL('/api/meta', server.url))).json();
      assert.equal(meta0.mode, 'follow');
      assert.ok(!meta0.metric_keys.includes('train/grad_norm'));
      const events = await fetch(new URL('/api/events', server.url));
      assert.equal(events.headers.get('content-type')?.split(';')[0], 'text/event-stream');
      const seen = await readEvents(events, ['steps', 'keys', 'edge'], async () => {
        const record = { ts: 1000425.0, step_key: 'rollout/step', step: 3, metrics: { 'rollout/rewards_mean': 0.55, 'train/grad_norm': 1.5 } };
        appendFileSync(join(copy.dir, 'dashboard', 'metrics.jsonl'), `${JSON.stringify(record)}\n`);
        await server.follower!.tick();
      });
      assert.deepEqual(seen.get('steps'), { steps: [3] });
      assert.deepEqual(seen.get('keys').metric_keys, ['train/grad_norm']);
      assert.equal(seen.get('edge').time_range[1], 1000425.0);
      const meta1: any = await (await fetch(new URL('/api/meta', server.url))).json();
      assert.ok(meta1.metric_keys.includes('train/grad_norm'));
      const series: any = await (await fetch(new URL('/api/metrics?keys=rollout/rewards_mean', server.url))).json();
      assert.deepEqual(series['rollout/rewards_mean'].x, [0, 1, 2, 3]);
      // A tick with nothing new announces nothing.
      assert.deepEqual(await server.follower!.tick(), []);
    } finally {
      await server.close();
      copy.dispose();
    }
  });
});

describe('the CLI', () => {
  const cli = (...args: string[]) =>
    spawnSync(process.execPath, [RLSIGHT_BIN, ...args], { encoding: 'utf8', timeout: 180_000 });
  const empty = mkdtempSync(join(tmpdir(), 'rlsight-notarun-'));
  const run = copyFixtureRun();
  const copyRunDir = (): string => run.dir;
  after(() => {
    rmSync(empty, { recursive: true, force: true });
    run.dispose();
  });

  test('a missing or non-run directory is a one-line error and exit code 2', () => {
    for (const args of [
      ['serve', '--dump-details', join(empty, 'missing')],
      ['serve', '--dump-details', empty],
      ['serve'],
      ['serve', '--dump-details', empty, '--bogus'],
      ['serve', '--dump-details', empty, '--port', 'x'],
      ['frobnicate'],
      ['serve', '--dump-details', copyRunDir(), '--cache-dir', join(copyRunDir(), 'cache')],
    ]) {
      const r = cli(...args);
      assert.equal(r.status, 2, `${args.join(' ')}: ${r.stderr}`);
      assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
      assert.match(r.stderr, /^rlsight: /);
    }
  });

  test('--help prints the usage and exits 0', () => {
    const r = cli('--help');
    assert.equal(r.status, 0);
    assert.match(r.stdout, /rlsight serve --dump-details DIR/);
  });
});
