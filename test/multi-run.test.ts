// Several runs in one server: `/api/runs`, every endpoint under `/api/runs/{run}/…` answering exactly what the
// reference path answers for the first run, `--runs ROOT` discovery, and `rlsight serve DIR DIR`.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { appendFileSync, cpSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';
import { type RunningServer, startRunsServer } from '../src/server/listen.ts';
import { openRun } from '../src/commands/openRun.ts';
import { ServedRuns } from '../src/server/runSet.ts';
import { ageTree, fixturePath, loadGoldens } from './support/fixtures.ts';
import { ensureCliBuilt, RLSIGHT_BIN, servingUrl } from './support/cli.ts';

// bin/rlsight.mjs runs dist/ as built: rebuild it first when the sources are newer.
ensureCliBuilt();

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** Copies the fixture run to `root/name`, its meta.json naming it `runName` (or removed when null). */
function placeRun(root: string, name: string, runName: string | null): string {
  const dir = join(root, name);
  cpSync(fixturePath('miles-demo', 'run'), dir, { recursive: true });
  const meta = join(dir, 'dashboard', 'meta.json');
  if (runName === null) rmSync(meta);
  else writeFileSync(meta, JSON.stringify({ run_name: runName, start_ts: 1000000.0, args: { colocate: true }, schema_version: 1 }));
  ageTree(dir);
  return dir;
}

async function body(res: Response): Promise<{ status: number; type: string | null; bytes: string }> {
  return { status: res.status, type: res.headers.get('content-type'), bytes: Buffer.from(await res.arrayBuffer()).toString('base64') };
}

describe('a resumed run in the runs table', () => {
  test('starts at its first record when meta.json names a later start (the resume), and lasts to its edge', async () => {
    const root = mkdtempSync(join(tmpdir(), 'rlsight-runs-'));
    const dir = placeRun(root, 'resumed', 'grpo-resumed');
    const meta = join(dir, 'dashboard', 'meta.json');
    writeFileSync(meta, JSON.stringify({ run_name: 'grpo-resumed', start_ts: 4_000_000_000, args: {}, schema_version: 1 }));
    ageTree(dir);
    const runs = new ServedRuns({}, (d) => openRun(d));
    runs.add(dir, await openRun(dir));
    const server = await startRunsServer(runs, { port: 0 });
    try {
      const run = ((await (await fetch(new URL('/api/runs', server.url))).json()) as any).runs[0];
      const range = ((await (await fetch(new URL('/api/meta', server.url))).json()) as any).time_range;
      assert.deepEqual([run.start_ts, run.end_ts], range);
    } finally {
      await server.close();
      rmSync(root, { recursive: true, force: true });
    }
  });
});

describe('a server with no run yet (--runs ROOT --follow before the first run)', () => {
  test('refuses more latest= keys than the runs table may ask, as with runs', async () => {
    const server = await startRunsServer(new ServedRuns({}, (d) => openRun(d)), { port: 0 });
    try {
      const res = await fetch(new URL(`/api/runs?latest=${Array.from({ length: 17 }, (_, i) => `k${i}`).join(',')}`, server.url));
      assert.equal(res.status, 400);
      assert.match(((await res.json()) as { detail: string }).detail, /latest: at most 16/);
      assert.deepEqual(await (await fetch(new URL('/api/runs?latest=a,b', server.url))).json(), { runs: [] });
    } finally {
      await server.close();
    }
  });
});

describe('several runs in one server', () => {
  let root: string;
  let server: RunningServer;
  before(async () => {
    root = mkdtempSync(join(tmpdir(), 'rlsight-runs-'));
    const a = placeRun(root, 'healthy', 'grpo-healthy');
    const b = placeRun(root, 'collapse', 'grpo-collapse');
    // a key logged against another step key, as a trainer's own loss is
    appendFileSync(join(b, 'dashboard', 'metrics.jsonl'), '{"ts":1000400.0,"step_key":"train/step","step":7,"metrics":{"train/loss":0.25}}\n');
    ageTree(b);
    const runs = new ServedRuns({}, (dir) => openRun(dir));
    runs.add(a, await openRun(a));
    runs.add(b, await openRun(b));
    server = await startRunsServer(runs, { port: 0 });
  });
  after(async () => {
    await server?.close();
    rmSync(root, { recursive: true, force: true });
  });

  const get = (path: string) => fetch(new URL(path, server.url));

  test('/api/runs lists each run with its name, start, GPUs, steps and formats', async () => {
    const listed = (await (await get('/api/runs')).json()) as any;
    assert.deepEqual(
      listed.runs.map((r: any) => [r.id, r.name, r.start_ts, r.gpus, r.steps, r.formats, r.primary]),
      [
        ['healthy', 'grpo-healthy', 1000000, 4, 3, ['miles'], true],
        ['collapse', 'grpo-collapse', 1000000, 4, 3, ['miles'], false],
      ],
    );
  });

  test('/api/runs gives each run its status, edge, scalar meta.json args and the newest value of the metrics asked for', async () => {
    const listed = (await (await get('/api/runs?latest=rollout/rewards_mean,perf/step_time,nope/never,train/loss')).json()) as any;
    const metrics = (await (await get('/api/runs/collapse/metrics?keys=rollout/rewards_mean,perf/step_time&x=rollout/step')).json()) as any;
    const r = listed.runs[1];
    assert.deepEqual([r.status, r.warnings, r.config], ['finished', [], { colocate: true }]);
    assert.ok(r.end_ts > r.start_ts, `edge ${r.end_ts} after start ${r.start_ts}`);
    // whatever step key a value was logged against
    assert.deepEqual(r.latest, { 'rollout/rewards_mean': metrics['rollout/rewards_mean'].y.at(-1), 'perf/step_time': metrics['perf/step_time'].y.at(-1), 'nope/never': null, 'train/loss': 0.25 });
    assert.equal(typeof r.latest['perf/step_time'], 'number');
    const tooMany = await get(`/api/runs?latest=${Array.from({ length: 17 }, (_, i) => `k${i}`).join(',')}`);
    assert.equal(tooMany.status, 400);
    assert.match(((await tooMany.json()) as any).detail, /latest: at most 16/);
  });

  test('every golden request answers the same bytes under /api/runs/{first}/ as under the reference path', async () => {
    const requests = [...new Set(loadGoldens().map((g) => g.request))].filter((r) => r.startsWith('/api/'));
    assert.ok(requests.length > 250, `${requests.length} requests`);
    for (const request of requests) {
      const reference = await body(await get(request));
      const prefixed = await body(await get(request.replace(/^\/api\//, '/api/runs/healthy/')));
      assert.deepEqual(prefixed, reference, request);
    }
  });

  test('the second run answers under its own prefix; an unknown run is a 404 naming it', async () => {
    const meta = (await (await get('/api/runs/collapse/meta')).json()) as any;
    assert.equal(meta.run_name, 'grpo-collapse');
    assert.equal(((await (await get('/api/meta')).json()) as any).run_name, 'grpo-healthy');
    const missing = await get('/api/runs/nope/meta');
    assert.equal(missing.status, 404);
    assert.match(((await missing.json()) as any).detail, /no run named "nope"; the runs served are "healthy", "collapse"/);
  });

  test('search and step diff answer across the runs held, each match naming its run', async () => {
    const lines = async (path: string) => (await (await get(path)).text()).trim().split('\n').map((l) => JSON.parse(l));
    const all = (await lines('/api/rlsight/search?q=1:33&runs=all')).filter((e) => e.type === 'match');
    assert.deepEqual(all.map((m) => [m.run, m.step, m.sample_index]).sort(), [['collapse', 1, 33], ['healthy', 1, 33]]);
    const one = (await lines('/api/rlsight/search?q=1:33&runs=collapse')).filter((e) => e.type === 'match');
    assert.deepEqual(one.map((m) => m.run), ['collapse']);
    const unknown = await get('/api/rlsight/search?q=1:33&runs=nope');
    assert.equal(unknown.status, 400);
    assert.match(((await unknown.json()) as any).detail, /runs: no run named "nope"/);
    const diff = await get('/api/rlsight/diff/steps?a=0&b=1&run_a=healthy&run_b=collapse');
    assert.equal(diff.status, 200);
    const bad = await get('/api/rlsight/diff/steps?a=0&b=1&run_a=nope');
    assert.equal(bad.status, 400);
  });
});

describe('--runs ROOT', () => {
  test('finds every run directory below the root, names them uniquely, and finds a run started later', async () => {
    const root = mkdtempSync(join(tmpdir(), 'rlsight-root-'));
    try {
      placeRun(join(root, 'team-a'), 'run', null);
      placeRun(join(root, 'team-b'), 'run', 'b-run');
      mkdirSync(join(root, 'notes'));
      // folders merely named like a run's dump folders (JSON decodes of one) are no run
      for (const f of ['rollout_data', 'train_data', 'dashboard_columns']) mkdirSync(join(root, 'notes', 'decoded', f), { recursive: true });
      writeFileSync(join(root, 'notes', 'decoded', 'rollout_data', '0.pt.json'), '{}');
      const runs = new ServedRuns({}, (dir) => openRun(dir));
      const first = await runs.discover(root);
      assert.deepEqual(first.map((r) => [r.id, r.folder]), [['team-a-run', 'team-a/run'], ['team-b-run', 'team-b/run']]);
      assert.deepEqual(await Promise.all(runs.runs().map(async (r) => (await r.run.listing(r.id, false)).name)), ['run', 'b-run']);
      assert.deepEqual(await runs.discover(root), [], 'a known run is not added twice');
      placeRun(root, 'late', null);
      assert.deepEqual((await runs.discover(root)).map((r) => r.id), ['late']);
      runs.stop();
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  test('ids stay with their folders when a folder of the same name joins the root and the server starts again', async () => {
    const root = mkdtempSync(join(tmpdir(), 'rlsight-root-ids-'));
    const served = async () => {
      const runs = new ServedRuns({}, (dir) => openRun(dir));
      await runs.discover(root);
      runs.stop();
      return Object.fromEntries(runs.runs().map((r) => [r.folder, r.id]));
    };
    try {
      placeRun(join(root, 'teamA'), 'healthy', 'grpo');
      placeRun(join(root, 'teamB'), 'healthy', 'grpo');
      placeRun(root, 'solo', null);
      const before = await served();
      assert.deepEqual(before, { 'teamA/healthy': 'teamA-healthy', 'teamB/healthy': 'teamB-healthy', solo: 'solo' });
      // a folder sorted ahead of the others: no id moves to another run
      placeRun(join(root, 'team0'), 'healthy', 'grpo');
      assert.deepEqual(await served(), { ...before, 'team0/healthy': 'team0-healthy' });
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  test('/api/runs names each run\'s folder below the root (no path of the machine)', async () => {
    const root = mkdtempSync(join(tmpdir(), 'rlsight-root-folder-'));
    const runs = new ServedRuns({}, (dir) => openRun(dir));
    try {
      placeRun(join(root, 'teamA'), 'healthy', 'grpo');
      placeRun(join(root, 'teamB'), 'healthy', 'grpo');
      await runs.discover(root);
      const server = await startRunsServer(runs, { port: 0 });
      try {
        const listed = ((await (await fetch(new URL('/api/runs', server.url))).json()) as any).runs;
        assert.deepEqual(listed.map((r: any) => [r.id, r.folder]), [['teamA-healthy', 'teamA/healthy'], ['teamB-healthy', 'teamB/healthy']]);
        assert.equal((await fetch(new URL('/api/runs/teamB-healthy/meta', server.url))).status, 200);
      } finally {
        await server.close();
      }
    } finally {
      runs.stop();
      rmSync(root, { recursive: true, force: true });
    }
  });

  test('watching the root tells each run found later, once', async () => {
    const root = mkdtempSync(join(tmpdir(), 'rlsight-root-watch-'));
    const runs = new ServedRuns({}, (dir) => openRun(dir));
    try {
      placeRun(root, 'first', null);
      await runs.discover(root);
      const told: string[][] = [];
      runs.watch(root, 20, (added) => told.push(added.map((r) => r.id)));
      placeRun(root, 'later', null);
      for (let i = 0; i < 250 && told.length === 0; i++) await new Promise((r) => setTimeout(r, 20));
      await new Promise((r) => setTimeout(r, 100));
      assert.deepEqual(told, [['later']]);
    } finally {
      runs.stop();
      rmSync(root, { recursive: true, force: true });
    }
  });

  test('a run reached twice through links (a link to the root inside it, a second link to the run) is served once', async () => {
    const root = mkdtempSync(join(tmpdir(), 'rlsight-root-links-'));
    try {
      placeRun(root, 'm16', null);
      symlinkSync('.', join(root, 'self'));
      symlinkSync(join(root, 'm16'), join(root, 'again'));
      const runs = new ServedRuns({}, (dir) => openRun(dir));
      assert.deepEqual((await runs.discover(root)).map((r) => r.id), ['again']);
      assert.deepEqual(await runs.discover(root), []);
      runs.stop();
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});

describe('rlsight serve DIR DIR', () => {
  test('serves both runs, the first at the reference paths', async () => {
    const root = mkdtempSync(join(tmpdir(), 'rlsight-serve2-'));
    const a = placeRun(root, 'a', 'first');
    const b = placeRun(root, 'b', 'second');
    const child = spawn(process.execPath, [RLSIGHT_BIN, 'serve', a, '--dump-details', b, '--port', '0'], { stdio: ['ignore', 'pipe', 'pipe'] });
    try {
      const url = await servingUrl(child);
      const listed = (await (await fetch(new URL('/api/runs', url))).json()) as any;
      assert.deepEqual(listed.runs.map((r: any) => [r.id, r.name, r.folder]), [['a', 'first', 'a'], ['b', 'second', 'b']], 'in command-line order');
      assert.equal(((await (await fetch(new URL('/api/meta', url))).json()) as any).run_name, 'first');
    } finally {
      child.kill();
      rmSync(root, { recursive: true, force: true });
    }
  });
});
