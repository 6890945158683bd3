// What the exports print and write, alike across formats and runs: a torn hour partition named without a line
// number (as `health` names it), Perfetto sizes in decimal MB, one column order for every rollout table, and a
// step still being written said as such (exit 3) instead of its dump/* values left out silently.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { appendFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, truncateSync, utimesSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { parquetMetadata } from 'hyparquet';
import { ensureCliBuilt, RLSIGHT_BIN } from './support/cli.ts';
import { copyFixtureRun, fixturePath, type RunCopy } from './support/fixtures.ts';

let out: string;
before(() => {
  ensureCliBuilt();
  out = mkdtempSync(join(tmpdir(), 'rlsight-export-output-'));
});
after(() => rmSync(out, { recursive: true, force: true }));

function cli(...args: string[]) {
  const r = spawnSync(process.execPath, [RLSIGHT_BIN, ...args], { encoding: 'utf8', timeout: 60_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

test('export telemetry names a torn hour partition without a line number, as health does', () => {
  const run: RunCopy = copyFixtureRun();
  try {
    const hour = readdirSync(join(run.dir, 'dashboard', 'gpu_util')).find((n) => n.endsWith('.jsonl'))!;
    const file = join(run.dir, 'dashboard', 'gpu_util', hour);
    appendFileSync(file, '{"ts": 1');
    const old = Date.now() / 1000 - 7200;
    utimesSync(file, old, old);
    const exported = cli('export', 'telemetry', run.dir, '--out', join(out, 'telemetry'));
    assert.equal(exported.code, 3, exported.stderr);
    const line = `warning: dashboard/gpu_util/${hour}: last line has no newline (8 bytes left out)\n`;
    assert.ok(exported.stderr.includes(line), exported.stderr);
    const health = cli('health', run.dir);
    assert.ok(health.stderr.includes(line), health.stderr);
  } finally {
    run.dispose();
  }
});

test('export perfetto prints the size it wrote in decimal MB', () => {
  const file = join(out, 'trace.json');
  const r = cli('export', 'perfetto', fixturePath('miles-demo', 'run'), '--out', file);
  assert.equal(r.code, 0, r.stderr);
  const mb = Number(/trace events \(([\d.]+) MB\)/.exec(r.stdout)![1]);
  assert.equal(mb, Number((statSync(file).size / 1e6).toFixed(2)), `${r.stdout} for ${statSync(file).size} bytes`);
});

test('export rollout: every step’s table has one column order, in CSV and Parquet alike', () => {
  const parquetColumns = (path: string): string[] => {
    const b = readFileSync(path);
    return parquetMetadata(b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength)).schema.slice(1).map((s) => s.name);
  };
  const headers: string[][] = [];
  // a miles step with train data, a slime step (none), a miles eval step (none)
  for (const [name, dir, step, evaluation] of [
    ['miles', fixturePath('miles-demo', 'run'), '1', false],
    ['slime', fixturePath('slime-trace'), '1', false],
    ['eval', fixturePath('miles-demo', 'run'), '0', true],
  ] as const) {
    const csv = join(out, `${name}.csv`);
    const pq = join(out, `${name}.parquet`);
    const flags = evaluation ? ['--eval'] : [];
    assert.equal(cli('export', 'rollout', dir, '--step', step, ...flags, '--out', csv).code, 0);
    assert.equal(cli('export', 'rollout', dir, '--step', step, ...flags, '--out', pq).code, 0);
    const header = readFileSync(csv, 'utf8').split(/\r?\n/)[0].split(',');
    assert.deepEqual(parquetColumns(pq), header, name);
    headers.push(header);
  }
  assert.deepEqual(headers[1], headers[0]);
  assert.equal(headers[0].indexOf('truncated'), headers[0].indexOf('normalized_reward') + 1);
  // an eval table has fewer columns, in the same relative order
  assert.deepEqual(headers[2], headers[0].filter((c) => headers[2].includes(c)));
});

test('export metrics and tensorboard say a step still being written (exit 3), as health does', () => {
  const run: RunCopy = copyFixtureRun();
  try {
    // truncated just now: the dump is taken to be still being written
    truncateSync(join(run.dir, 'rollout_data', '1.pt'), 5000);
    const line = 'warning: step 1: dump still being written: rollout_data/1.pt\n';
    const metrics = cli('export', 'metrics', run.dir, '--out', join(out, 'writing.csv'));
    assert.equal(metrics.code, 3, metrics.stderr);
    assert.ok(metrics.stderr.includes(line), metrics.stderr);
    const tb = cli('export', 'tensorboard', run.dir, '--out', join(out, 'writing-tb'));
    assert.equal(tb.code, 3, tb.stderr);
    assert.ok(tb.stderr.includes(line), tb.stderr);
    const health = cli('health', run.dir);
    assert.ok(health.stderr.includes(line), health.stderr);
  } finally {
    run.dispose();
  }
});
