// What the exports print and write, alike across formats and runs: a torn hour partition named without a line
// number (as `health` names it), Perfetto sizes in decimal MB, one column order and one Parquet type per column
// for every rollout table, metrics rows that never pair two step axes, column names DuckDB and Spark tell
// apart, and a step still being written said as such (exit 3) instead of its dump/* values left out silently.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { appendFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, truncateSync, utimesSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { DuckDBInstance } from '@duckdb/node-api';
import { parquetMetadata } from 'hyparquet';
import { openRun } from '../src/commands/openRun.ts';
import { decodeScalarEvent, readTfRecord } from '../src/formats/tfevents.ts';
import { encodeTable, rolloutTable, ROLLOUT_COLUMN_TYPES } from '../src/queries/exports.ts';
import { SUMMARY_COLUMNS_WITH_TRAIN } from '../src/queries/rollouts.ts';
import { ensureCliBuilt, RLSIGHT_BIN } from './support/cli.ts';
import { ageTree, copyFixtureRun, fixturePath, type RunCopy } from './support/fixtures.ts';

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

/** The rows DuckDB reads of `sql` (`FILE` in it standing for `file`), as JSON values. */
async function duck(sql: string, file: string): Promise<Record<string, unknown>[]> {
  const db = await DuckDBInstance.create(':memory:');
  const con = await db.connect();
  try {
    return (await con.runAndReadAll(sql.replaceAll('FILE', `'${file}'`))).getRowObjectsJson() as Record<string, unknown>[];
  } finally {
    con.closeSync();
    db.closeSync();
  }
}

/** Every scalar event of a logdir's one event file: its step, wall time and tags. */
function tensorboardEvents(logdir: string): { step: number; wallTime: number; scalars: Map<string, number> }[] {
  const [file] = readdirSync(logdir);
  const bytes = readFileSync(join(logdir, file));
  const events: { step: number; wallTime: number; scalars: Map<string, number> }[] = [];
  for (let at = 0; at < bytes.length; ) {
    const rec = readTfRecord(bytes, at);
    assert.ok('data' in rec, JSON.stringify(rec));
    const e = decodeScalarEvent(rec.data);
    if (e !== null && e.scalars.length > 0) events.push({ step: Number(e.step), wallTime: e.wallTime, scalars: new Map(e.scalars.map((x) => [x.tag, x.value])) });
    at = rec.next;
  }
  return events;
}

test('export metrics: a key is in the rows of the step key it was logged against, never beside another axis’s same number', async () => {
  const run: RunCopy = copyFixtureRun();
  try {
    // two train steps per rollout (slime's train/step = rollout_id * num_steps_per_rollout + step_id)
    const metrics = join(run.dir, 'dashboard', 'metrics.jsonl');
    for (let step = 0; step < 6; step++) {
      appendFileSync(metrics, `${JSON.stringify({ ts: 1000150 + 50 * step, step_key: 'train/step', step, metrics: { 'train/loss': 1 + step / 10, 'train/step': step } })}\n`);
    }
    ageTree(run.dir);
    const csv = join(out, 'axes.csv');
    const r = cli('export', 'metrics', run.dir, '--out', csv);
    assert.equal(r.code, 0, r.stderr);
    const rows = await duck('SELECT _step_key, _step::INT AS _step, "train/loss", "rollout/rewards_mean", "dump/reward_mean" IS NOT NULL AS dump FROM read_csv(FILE)', csv);
    // ordered by step key, then step: rollout/step 7 is not train/step 7's row
    assert.deepEqual(rows, [
      ...[0, 1, 2].map((s) => ({ _step_key: 'rollout/step', _step: s, 'train/loss': null, 'rollout/rewards_mean': [0.4, 0.45, 0.5][s], dump: true })),
      ...[0, 1, 2, 3, 4, 5].map((s) => ({ _step_key: 'train/step', _step: s, 'train/loss': 1 + s / 10, 'rollout/rewards_mean': null, dump: false })),
    ]);
    // TensorBoard alike: train/loss at its train steps, stamped when each was logged, never with a rollout's keys
    const logdir = join(out, 'axes-tb');
    assert.equal(cli('export', 'tensorboard', run.dir, '--out', logdir).code, 0);
    const train = tensorboardEvents(logdir).filter((e) => e.scalars.has('train/loss'));
    assert.deepEqual(train.map((e) => [e.step, e.wallTime, e.scalars.has('rollout/rewards_mean')]), [0, 1, 2, 3, 4, 5].map((s) => [s, 1000150 + 50 * s, false]));
  } finally {
    run.dispose();
  }
});

test('export metrics: a key named like the step column, or like another key but for case, gets a column name of its own and a warning (exit 3)', async () => {
  const run: RunCopy = copyFixtureRun();
  try {
    const record = { ts: 1000330.0, step_key: 'rollout/step', step: 4, metrics: { _step: 4, 'train/Loss': 1.5, 'train/loss': 2.5, 'rollout/step': 4, 'Perf/Step_Time': 99 } };
    appendFileSync(join(run.dir, 'dashboard', 'metrics.jsonl'), `${JSON.stringify(record)}\n`);
    ageTree(run.dir);
    const warned = [
      "warning: metric key '_step' is written as column '_step#2': DuckDB and Spark, which ignore case in column names, would not tell it from the _step column\n",
      "warning: metric key 'train/loss' is written as column 'train/loss#2': DuckDB and Spark, which ignore case in column names, would not tell it from metric key 'train/Loss'\n",
      // a stray record's key is the one renamed, not the run's history it looks like
      "warning: metric key 'Perf/Step_Time' is written as column 'Perf/Step_Time#2': DuckDB and Spark, which ignore case in column names, would not tell it from metric key 'perf/step_time', which holds more values\n",
    ];
    for (const format of ['csv', 'parquet']) {
      const file = join(out, `clash.${format}`);
      const r = cli('export', 'metrics', run.dir, '--out', file);
      assert.equal(r.code, 3, r.stderr);
      for (const w of warned) assert.ok(r.stderr.includes(w), r.stderr);
      const names = format === 'csv' ? readFileSync(file, 'utf8').split('\r\n')[0].split(',') : parquetMetadata(new Uint8Array(readFileSync(file)).buffer).schema.slice(1).map((e) => e.name);
      assert.equal(new Set(names.map((n) => n.toLowerCase())).size, names.length, names.join(','));
      const read = format === 'csv' ? 'read_csv(FILE)' : 'read_parquet(FILE)';
      const rows = await duck(`SELECT _step::INT AS _step, "_step#2"::INT AS "_step#2", "train/Loss", "train/loss#2" FROM ${read} WHERE _step_key = 'rollout/step' AND _step = 4`, file);
      assert.deepEqual(rows, [{ _step: 4, '_step#2': 4, 'train/Loss': 1.5, 'train/loss#2': 2.5 }], format);
      const history = await duck(`SELECT _step::INT AS step, "perf/step_time"::DOUBLE AS t FROM ${read} WHERE _step_key = 'rollout/step' AND "perf/step_time" IS NOT NULL ORDER BY step`, file);
      assert.deepEqual(history, [{ step: 0, t: 95 }, { step: 1, t: 94 }, { step: 2, t: 93 }], format);
    }
    // TensorBoard tells tags apart by case: they keep their names
    const logdir = join(out, 'clash-tb');
    assert.equal(cli('export', 'tensorboard', run.dir, '--out', logdir).code, 0);
    const at4 = tensorboardEvents(logdir).find((e) => e.step === 4)!;
    assert.deepEqual([at4.scalars.get('_step'), at4.scalars.get('train/Loss'), at4.scalars.get('train/loss')], [4, 1.5, 2.5]);
  } finally {
    run.dispose();
  }
});

test('export rollout: a column null in every row of a step keeps its Parquet type', async () => {
  // every column a rollout table has is of a type fixed by its name
  for (const c of SUMMARY_COLUMNS_WITH_TRAIN) assert.ok(Object.hasOwn(ROLLOUT_COLUMN_TYPES, c), c);
  const run = await openRun(fixturePath('miles-demo', 'run'));
  try {
    const table = await rolloutTable(run, 1, false);
    const types = (bytes: Uint8Array) => Object.fromEntries(parquetMetadata(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer).schema.slice(1).map((e) => [e.name, e.type]));
    const whole = types(encodeTable(table, 'parquet'));
    assert.deepEqual([whole.status, whole.remove_sample, whole.weight_version, whole.mixed_version, whole.reward, whole.turns], ['BYTE_ARRAY', 'BOOLEAN', 'BYTE_ARRAY', 'BOOLEAN', 'DOUBLE', 'INT32']);
    // the same step as a run recording no weight versions, statuses or rewards writes it: every column null
    const blank = new Set(['status', 'remove_sample', 'weight_version', 'mixed_version', 'reward', 'turns']);
    const rows = table.rows.map((r) => r.map((v, i) => (blank.has(table.columns[i]) ? null : v)));
    assert.deepEqual(types(encodeTable({ ...table, rows }, 'parquet')), whole);
  } finally {
    await run.close();
  }
});
