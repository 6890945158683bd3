// A slime run goes wherever the command line goes, opened by its format like any other run: `serve DIR` serves
// it as `serve --dump-details DIR` does, one server holds it beside a miles run (`serve A B`, `--runs ROOT`),
// and `export metrics` writes every metric key the app lists for it.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { openRun } from '../src/commands/openRun.ts';
import { decodeScalarEvent, readTfRecord } from '../src/formats/tfevents.ts';
import { ensureCliBuilt, RLSIGHT_BIN, servingUrl } from './support/cli.ts';
import { ageTree, fixturePath } from './support/fixtures.ts';

ensureCliBuilt();

const scratch = mkdtempSync(join(tmpdir(), 'rlsight-slime-cli-'));
after(() => rmSync(scratch, { recursive: true, force: true }));

/** A copy of a fixture run under the scratch folder, its files old enough to be read as finished. */
function placed(name: string, from: string): string {
  const dir = join(scratch, name);
  cpSync(from, dir, { recursive: true });
  ageTree(dir);
  return dir;
}

const slime = placed('slime-run', fixturePath('slime-trace'));
const miles = placed('miles-run', fixturePath('miles-demo', 'run'));

/** Starts `rlsight serve ARGS --port 0`, runs `fn` against it, stops it. */
async function serving<T>(args: string[], fn: (url: string) => Promise<T>): Promise<T> {
  const child: ChildProcess = spawn(process.execPath, [RLSIGHT_BIN, 'serve', ...args, '--port', '0'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let err = '';
  child.stderr!.on('data', (d) => (err += d));
  try {
    const url = await servingUrl(child).catch((e: Error) => {
      throw new Error(`${e.message}\n${err}`);
    });
    return await fn(url);
  } finally {
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    await exited;
  }
}

const get = async (url: string, path: string): Promise<any> => {
  const r = await fetch(new URL(path, url));
  assert.equal(r.status, 200, `${path}: ${await r.clone().text()}`);
  return r.json();
};

describe('slime runs on the command line', () => {
  test('serve DIR opens a slime layout as serve --dump-details DIR does', async () => {
    const asked = ['/api/meta', '/api/rollout/0/summary', '/api/rlsight/trace?rollout_id=0', '/api/metrics?keys=perf/request/e2e_latency/mean&x=rollout/step'];
    const byFlag = await serving(['--dump-details', slime], (url) => Promise.all(asked.map((p) => get(url, p))));
    const byDir = await serving([slime], (url) => Promise.all(asked.map((p) => get(url, p))));
    assert.deepEqual(byDir, byFlag);
    assert.equal(byDir[2].has_traces, true);
    assert.ok(byDir[0].metric_keys.length > 100, `${byDir[0].metric_keys.length} metric keys`);
  });

  test('one server holds a miles and a slime run side by side, each answering as its format does', async () => {
    const check = async (url: string): Promise<void> => {
      const { runs } = await get(url, '/api/runs');
      const formats = Object.fromEntries(runs.map((r: { id: string; formats: string[] }) => [r.id, r.formats]));
      assert.deepEqual(formats, { 'miles-run': ['miles'], 'slime-run': ['slime'] });
      assert.equal((await get(url, '/api/runs/slime-run/rlsight/trace?rollout_id=0')).has_traces, true);
      const noTraces = await fetch(new URL('/api/runs/miles-run/rlsight/trace?rollout_id=0', url));
      assert.equal(noTraces.status, 404);
      assert.match(((await noTraces.json()) as { detail: string }).detail, /holds no per-request traces/);
      const alone = await serving([slime], (one) => get(one, '/api/rollout/1/summary'));
      assert.deepEqual(await get(url, '/api/runs/slime-run/rollout/1/summary'), alone);
    };
    await serving([miles, slime], check);
    await serving(['--runs', scratch], check);
  });

  test('export metrics on a slime run writes every metric key the app lists for it', async () => {
    const out = join(scratch, 'slime-metrics.csv');
    const r = spawnSync(process.execPath, [RLSIGHT_BIN, 'export', 'metrics', '--dump-details', slime, '--out', out], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    const [header, ...rows] = readFileSync(out, 'utf8').trim().split(/\r?\n/);
    const columns = header.split(',');
    const run = await openRun(slime);
    try {
      const listed = (await run.meta({ follow: false, useUtilizationOverview: false })).metric_keys;
      // with perf/longest_sample_non_generation_time and perf/longest_effective_sample_non_generation_time (no rollout_time needed)
      assert.equal(listed.length, 172);
      assert.ok(listed.includes('perf/longest_effective_sample_non_generation_time'));
      assert.deepEqual(columns.slice(2).sort(), [...listed].sort());
    } finally {
      await run.close();
    }
    assert.deepEqual(columns.slice(0, 2), ['_step_key', '_step']);
    // the keys computed from the dumps are on the rollout step, as the charts draw them
    assert.deepEqual(
      rows.map((line) => line.split(',').slice(0, 2).join(',')),
      ['rollout/step,0', 'rollout/step,1'],
    );
    // A key computed from the dumps has its value at each train step, as the chart draws it.
    const latency = columns.indexOf('rollout/response_len/mean');
    assert.ok(rows.every((line) => Number.isFinite(Number(line.split(',')[latency]))), 'rollout/response_len/mean at every step');
  });

  test('export rollout of a step the slime run does not hold exits 1 naming the steps it holds', () => {
    const r = spawnSync(process.execPath, [RLSIGHT_BIN, 'export', 'rollout', slime, '--step', '42', '--out', join(scratch, 'nope.csv')], { encoding: 'utf8' });
    assert.equal(r.status, 1);
    assert.match(r.stderr, /rollout 42 is not in this run; its train steps are 0-1\n/);
  });

  test('export tensorboard on a slime run stamps each step with when its last request trace ended, not the export time', async () => {
    const logdir = join(scratch, 'slime-tb');
    const r = spawnSync(process.execPath, [RLSIGHT_BIN, 'export', 'tensorboard', slime, '--out', logdir], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    const [file] = readdirSync(logdir);
    const bytes = readFileSync(join(logdir, file));
    const events: { step: number; wallTime: number }[] = [];
    for (let at = 0; at < bytes.length; ) {
      const rec = readTfRecord(bytes, at);
      assert.ok('data' in rec, JSON.stringify(rec));
      const e = decodeScalarEvent(rec.data);
      if (e !== null && e.scalars.length > 0) events.push({ step: e.step, wallTime: e.wallTime });
      at = rec.next;
    }
    const run = await openRun(slime);
    try {
      const ends = await Promise.all([0, 1].map(async (id) => {
        const tr = await run.trace(id, false);
        return Math.max(...tr.rows.map((row) => tr.t0 + row.end));
      }));
      assert.deepEqual(events.map((e) => e.step), [0, 1]);
      assert.deepEqual(events.map((e) => e.wallTime), ends);
      assert.ok(ends[0] < ends[1]);
    } finally {
      await run.close();
    }
  });

  test('health --fail-on a signal no step of the run measures exits 3 saying so, not 0 as if it had passed', () => {
    const r = spawnSync(process.execPath, [RLSIGHT_BIN, 'health', slime, '--fail-on', 'engine_restart,step_time'], { encoding: 'utf8' });
    assert.equal(r.status, 3, r.stderr);
    assert.match(r.stderr, /warning: --fail-on engine_restart: no step of this run measures it, so the gate could not look/);
    assert.match(r.stderr, /warning: --fail-on step_time: no step of this run measures it/);
  });
});
