// `rlsight health` and `rlsight export` over real runs: exit codes, files that read back with independent
// decoders (hyparquet; a TFRecord/Event decoder written here from the format's definition), the demo's story.
import assert from 'node:assert/strict';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { appendFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';
import { parquetMetadata, parquetReadObjects } from 'hyparquet';
import { generateDemoRun } from '../src/demo/index.ts';
import { runHealth } from '../src/queries/health.ts';
import { openRun } from '../src/commands/openRun.ts';
import { ageTree, copyFixtureRun, type RunCopy } from './support/fixtures.ts';
import { ensureCliBuilt, RLSIGHT_BIN } from './support/cli.ts';

// bin/rlsight.mjs runs dist/ as built: rebuild it first when the sources are newer.
ensureCliBuilt();

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..');

function cli(...args: string[]): { code: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [RLSIGHT_BIN, ...args], { cwd: REPO, encoding: 'utf8' });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** CRC-32C, bit by bit (deliberately not the table-driven code under test). */
function crc32cSlow(bytes: Uint8Array): number {
  let c = 0xffffffff;
  for (const b of bytes) {
    c ^= b;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0x82f63b78 : c >>> 1;
  }
  return (c ^ 0xffffffff) >>> 0;
}
const masked = (c: number): number => ((((c >>> 15) | (c << 17)) >>> 0) + 0xa282ead8) >>> 0;

interface Field {
  no: number;
  wire: number;
  value: bigint | number | Uint8Array;
}

function protoFields(b: Uint8Array): Field[] {
  const out: Field[] = [];
  const view = new DataView(b.buffer, b.byteOffset, b.byteLength);
  let i = 0;
  const varint = (): bigint => {
    let x = 0n;
    let shift = 0n;
    for (;;) {
      const byte = b[i++];
      assert.ok(byte !== undefined, 'varint runs past the message');
      x |= BigInt(byte & 0x7f) << shift;
      if (!(byte & 0x80)) return x;
      shift += 7n;
    }
  };
  while (i < b.length) {
    const key = Number(varint());
    const no = key >> 3;
    const wire = key & 7;
    if (wire === 0) out.push({ no, wire, value: varint() });
    else if (wire === 1) out.push({ no, wire, value: view.getFloat64(i, true) }), (i += 8);
    else if (wire === 5) out.push({ no, wire, value: view.getFloat32(i, true) }), (i += 4);
    else if (wire === 2) {
      const n = Number(varint());
      out.push({ no, wire, value: b.subarray(i, i + n) });
      i += n;
    } else assert.fail(`unexpected wire type ${wire}`);
  }
  assert.equal(i, b.length, 'message ends on a field boundary');
  return out;
}

interface DecodedEvent {
  wallTime: number;
  step: number;
  fileVersion?: string;
  scalars: Map<string, number>;
}

/** Every record of a TFRecord file, checking both masked CRCs, decoded as Event messages. */
function decodeEventFile(bytes: Uint8Array): DecodedEvent[] {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const events: DecodedEvent[] = [];
  let at = 0;
  while (at < bytes.length) {
    assert.ok(at + 12 <= bytes.length, 'record header complete');
    const len = Number(view.getBigUint64(at, true));
    assert.equal(view.getUint32(at + 8, true), masked(crc32cSlow(bytes.subarray(at, at + 8))), `length CRC of the record at ${at}`);
    const data = bytes.subarray(at + 12, at + 12 + len);
    assert.equal(data.length, len, 'record data complete');
    assert.equal(view.getUint32(at + 12 + len, true), masked(crc32cSlow(data)), `data CRC of the record at ${at}`);
    at += 12 + len + 4;
    const e: DecodedEvent = { wallTime: NaN, step: 0, scalars: new Map() };
    for (const f of protoFields(data)) {
      if (f.no === 1 && f.wire === 1) e.wallTime = f.value as number;
      else if (f.no === 2 && f.wire === 0) e.step = Number(f.value);
      else if (f.no === 3 && f.wire === 2) e.fileVersion = new TextDecoder().decode(f.value as Uint8Array);
      else if (f.no === 5 && f.wire === 2) {
        for (const v of protoFields(f.value as Uint8Array)) {
          assert.equal(v.no, 1, 'Summary holds only values');
          const parts = protoFields(v.value as Uint8Array);
          const tag = new TextDecoder().decode(parts.find((p) => p.no === 1)!.value as Uint8Array);
          // a DT_DOUBLE scalar tensor (field 8) of the `scalars` plugin (metadata, field 9), as TensorBoard reads it
          assert.ok(!parts.some((p) => p.no === 2), `${tag} is not a float32 simple_value`);
          const meta = protoFields(parts.find((p) => p.no === 9)!.value as Uint8Array);
          const plugin = protoFields(meta.find((p) => p.no === 1)!.value as Uint8Array);
          assert.equal(new TextDecoder().decode(plugin.find((p) => p.no === 1)!.value as Uint8Array), 'scalars', `${tag}'s plugin`);
          const tensor = protoFields(parts.find((p) => p.no === 8)!.value as Uint8Array);
          assert.equal(tensor.find((p) => p.no === 1)?.value, 2n, `${tag} is DT_DOUBLE`);
          const packed = tensor.find((p) => p.no === 6)!.value as Uint8Array;
          assert.equal(packed.length, 8, `${tag} holds one double`);
          e.scalars.set(tag, new DataView(packed.buffer, packed.byteOffset, 8).getFloat64(0, true));
        }
      } else assert.fail(`unexpected Event field ${f.no}`);
    }
    events.push(e);
  }
  return events;
}

/** Each column's physical Parquet type. */
const parquetTypes = (path: string): Record<string, string | undefined> => {
  const b = readFileSync(path);
  return Object.fromEntries(parquetMetadata(b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength) as ArrayBuffer).schema.slice(1).map((e) => [e.name, e.type]));
};

const parquetRows = (path: string) => {
  const b = readFileSync(path);
  return parquetReadObjects({ file: b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength) as ArrayBuffer });
};

/** The CSV written by the exporter, read back (plain cells only: the fixtures' metrics have no quoting). */
function csvRows(path: string): Record<string, string>[] {
  const [head, ...lines] = readFileSync(path, 'utf8').trimEnd().split('\r\n');
  const cols = head.split(',');
  return lines.map((l) => Object.fromEntries(l.split(',').map((v, i) => [cols[i], v])));
}

describe('rlsight health and export over the miles fixture', () => {
  let run: RunCopy;
  let out: string;
  before(() => {
    run = copyFixtureRun('miles-demo');
    out = mkdtempSync(join(tmpdir(), 'rlsight-exports-'));
  });
  after(() => {
    run.dispose();
    rmSync(out, { recursive: true, force: true });
  });

  test('health prints the board and exits 0 without --fail-on', () => {
    const r = cli('health', '--dump-details', run.dir);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^ step +zero_std +lp_drift/);
    assert.equal(r.stdout.trim().split('\n').length, 4);
  });

  test('health --fail-on exits 1 naming the step and signal that fired', () => {
    const r = cli('health', '--dump-details', run.dir, '--fail-on', 'engine_restart,zero_std');
    assert.equal(r.code, 1);
    assert.match(r.stderr, /fired: step 1: engine_restart 1 >= 0\.5 \(.*15004 → .*15006\)/);
    assert.doesNotMatch(r.stderr, /zero_std/);
  });

  test('health --fail-on a signal that did not fire exits 0; bad lists and configs exit 2', () => {
    assert.equal(cli('health', '--dump-details', run.dir, '--fail-on', 'zero_std,straggler').code, 0);
    const bad = cli('health', '--dump-details', run.dir, '--fail-on', 'zero_std,typo');
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /unknown signal 'typo'/);
    const config = join(out, 'health.json');
    writeFileSync(config, JSON.stringify({ engine_restart: { warn: 5, fire: 5 } }));
    assert.equal(cli('health', '--dump-details', run.dir, '--fail-on', 'engine_restart', '--health-config', config).code, 0);
    writeFileSync(config, '{"lp_drift": {"fire": "high"}}');
    const r = cli('health', '--dump-details', run.dir, '--health-config', config);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /lp_drift\.fire' must be a finite number/);
    // a FIFO is refused, not waited on
    const fifo = join(out, 'health.fifo');
    execFileSync('mkfifo', [fifo]);
    const piped = cli('health', run.dir, '--health-config', fifo);
    assert.equal(piped.code, 2);
    assert.match(piped.stderr, /--health-config: cannot read .*a FIFO, not a regular file/);
    assert.equal(cli('health').code, 2);
    assert.equal(cli('health', '--dump-details', join(out, 'nope')).code, 2);
  });

  test('health --json answers the board for scripts', () => {
    const r = cli('health', '--dump-details', run.dir, '--json');
    const answer = JSON.parse(r.stdout);
    assert.deepEqual(answer.rows.map((x: { step: number }) => x.step), [0, 1, 2]);
    assert.equal(answer.rows[1].cells.engine_restart.value, 1);
  });

  test('export metrics as CSV and Parquet read back with equal values', async () => {
    const csv = join(out, 'm.csv');
    const pq = join(out, 'm.parquet');
    assert.equal(cli('export', 'metrics', '--dump-details', run.dir, '--format', 'csv', '--out', csv).code, 0);
    assert.equal(cli('export', 'metrics', '--dump-details', run.dir, '--format', 'parquet', '--out', pq).code, 0);
    const fromCsv = csvRows(csv);
    const fromParquet = await parquetRows(pq);
    assert.equal(fromCsv.length, 3);
    assert.deepEqual(Object.keys(fromParquet[0]), Object.keys(fromCsv[0]));
    assert.deepEqual(Object.keys(fromCsv[0]).slice(0, 2), ['_step_key', '_step']);
    assert.deepEqual(fromCsv.map((r) => r._step_key), ['rollout/step', 'rollout/step', 'rollout/step']);
    for (const key of ['perf/step_time', 'rollout/rewards_mean', 'dump/reward_mean', 'dump/zero_std_group_frac']) assert.ok(key in fromCsv[0], key);
    fromParquet.forEach((row, i) => {
      for (const [k, v] of Object.entries(row)) assert.equal(v, k === '_step_key' ? fromCsv[i][k] : Number(fromCsv[i][k]), `${k} at row ${i}`);
    });
    // The logged values, exactly as metrics.jsonl has them.
    assert.deepEqual(fromParquet.map((r) => r['perf/step_time']), [95, 94, 93]);
    assert.deepEqual(fromParquet.map((r) => r['perf/wait_time_ratio']), [0.4, 0.30000000000000004, 0.2]);
    // the step is an integer column; a metric stays a double even when its values are whole
    assert.equal(parquetTypes(pq)._step, 'INT32');
    assert.equal(parquetTypes(pq)['perf/step_time'], 'DOUBLE');
  });

  test('export rollout writes the step’s table', async () => {
    const pq = join(out, 'r.parquet');
    const csv = join(out, 'r.csv');
    assert.equal(cli('export', 'rollout', '--dump-details', run.dir, '--step', '1', '--format', 'parquet', '--out', pq).code, 0);
    assert.equal(cli('export', 'rollout', '--dump-details', run.dir, '--step', '1', '--out', csv).code, 0);
    const rows = await parquetRows(pq);
    assert.equal(rows.length, 32);
    assert.deepEqual(rows.map((r) => r.sample_index), Array.from({ length: 32 }, (_, i) => 32 + i));
    const types = parquetTypes(pq);
    for (const c of ['sample_index', 'group_index', 'response_length', 'total_length']) assert.equal(types[c], 'INT32', c);
    assert.equal(types.reward, 'DOUBLE');
    const fromCsv = csvRows(csv);
    rows.forEach((r, i) => {
      for (const [k, v] of Object.entries(r)) assert.equal(v === null ? '' : String(v), fromCsv[i][k], `${k} at row ${i}`);
    });
    const missing = cli('export', 'rollout', '--dump-details', run.dir, '--step', '42', '--out', csv);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /rollout_data\/42\.pt not found.*; its train steps are 0-2\n/);
    assert.equal(cli('export', 'rollout', '--dump-details', run.dir, '--step', 'x', '--out', csv).code, 2);
    assert.equal(cli('export', 'rollout', '--dump-details', run.dir, '--step', '1', '--format', 'xlsx', '--out', csv).code, 2);
    assert.equal(cli('export', 'bogus').code, 2);
  });

  test('export tensorboard writes an event file whose every record checks out', () => {
    const logdir = join(out, 'tb');
    const r = cli('export', 'tensorboard', '--dump-details', run.dir, '--out', logdir);
    assert.equal(r.code, 0, r.stderr);
    const files = readdirSync(logdir);
    assert.equal(files.length, 1);
    assert.match(files[0], /^events\.out\.tfevents\.\d+\./);
    const events = decodeEventFile(readFileSync(join(logdir, files[0])));
    assert.equal(events[0].fileVersion, 'brain.Event:2');
    const steps = events.slice(1);
    assert.deepEqual(steps.map((e) => e.step), [0, 1, 2]);
    // Wall time is when the step was logged; values are doubles, exactly as logged.
    assert.deepEqual(steps.map((e) => e.wallTime), [1000125, 1000225, 1000325]);
    assert.deepEqual(steps.map((e) => e.scalars.get('perf/step_time')), [95, 94, 93]);
    assert.equal(steps[1].scalars.get('perf/wait_time_ratio'), 0.30000000000000004);
    assert.ok(steps.every((e) => e.scalars.has('dump/reward_mean')));
  });
});

describe('the demo run’s story on the health board', () => {
  let base: string;
  let board: Awaited<ReturnType<typeof runHealth>>;
  before(async () => {
    base = mkdtempSync(join(tmpdir(), 'rlsight-health-demo-'));
    await generateDemoRun(join(base, 'run'), { seed: 0 });
    const run = await openRun(join(base, 'run'));
    board = await runHealth(run);
    await run.close();
  });
  after(() => rmSync(base, { recursive: true, force: true }));

  const firedSteps = (signal: string) => board.fired.filter((f) => f.signal === signal).map((f) => f.step);

  test('the engine restart lights its step only', () => assert.deepEqual(firedSteps('engine_restart'), [2]));
  test('log-prob drift after a tool call lights its step, pointing at a drifting sample', () => {
    assert.deepEqual(firedSteps('lp_drift'), [3]);
    const cell = board.rows.find((r) => r.step === 3)!.cells.lp_drift;
    assert.equal(cell.evidence?.view, 'sample');
  });
  test('the straggling rank is named', () => {
    assert.ok(firedSteps('straggler').length > 0);
    for (const r of board.rows) if (r.cells.straggler.level === 'fire') assert.match(r.cells.straggler.detail, /^rank 11 /);
  });
});

describe('health, search and export take the run directory as serve does: DIR or --dump-details DIR', () => {
  let run: RunCopy;
  let out: string;
  before(() => {
    run = copyFixtureRun('miles-demo');
    out = mkdtempSync(join(tmpdir(), 'rlsight-run-dir-'));
  });
  after(() => {
    run.dispose();
    rmSync(out, { recursive: true, force: true });
  });

  test('a bare DIR answers exactly what --dump-details DIR answers', () => {
    const bare = cli('health', run.dir, '--json');
    assert.equal(bare.code, 0, bare.stderr);
    assert.equal(bare.stdout, cli('health', '--dump-details', run.dir, '--json').stdout);
    const found = cli('search', run.dir, '1:40');
    assert.equal(found.code, 0, found.stderr);
    assert.deepEqual(JSON.parse(found.stdout), JSON.parse(cli('search', '--dump-details', run.dir, '1:40').stdout));
    assert.equal(JSON.parse(found.stdout).sample_index, 40);
    const [bareCsv, flagCsv] = [join(out, 'bare.csv'), join(out, 'flag.csv')];
    assert.equal(cli('export', 'metrics', run.dir, '--format', 'csv', '--out', bareCsv).code, 0);
    assert.equal(cli('export', 'metrics', '--dump-details', run.dir, '--format', 'csv', '--out', flagCsv).code, 0);
    assert.equal(readFileSync(bareCsv, 'utf8'), readFileSync(flagCsv, 'utf8'));
    assert.equal(cli('export', 'rollout', run.dir, '--step', '1', '--out', join(out, 'r.csv')).code, 0);
    assert.equal(cli('export', 'tensorboard', run.dir, '--out', join(out, 'tb')).code, 0);
    assert.equal(cli('export', 'perfetto', run.dir, '--out', join(out, 'p.json')).code, 0);
    assert.equal(cli('export', 'telemetry', run.dir, '--out', join(out, 'tel')).code, 0);
  });

  test('a missing or an extra directory argument exits 2 naming the forms, never guessing', () => {
    for (const args of [['health'], ['search'], ['export', 'metrics', '--out', join(out, 'x.csv')], ['export', 'perfetto', '--out', join(out, 'x.json')]]) {
      const r = cli(...args);
      assert.equal(r.code, 2, args.join(' '));
      assert.match(r.stderr, /a run directory is required: rlsight .* DIR or rlsight .* --dump-details DIR/, args.join(' '));
    }
    for (const args of [['health', run.dir, 'extra'], ['health', '--dump-details', run.dir, run.dir], ['export', 'metrics', run.dir, run.dir, '--out', join(out, 'y.csv')], ['export', 'telemetry', run.dir, 'extra', '--out', join(out, 'tel2')]]) {
      const r = cli(...args);
      assert.equal(r.code, 2, args.join(' '));
      assert.match(r.stderr, /unexpected argument '.*': one run directory is taken/, args.join(' '));
    }
    const twice = cli('search', '--dump-details', run.dir, '--dump-details', run.dir, '1:40');
    assert.equal(twice.code, 2);
    assert.match(twice.stderr, /--dump-details given twice: one run directory is taken/);
    // any other flag given twice: which one was meant is not guessed
    for (const args of [
      ['search', run.dir, '1:40', '--limit', '1', '--limit', '2'],
      ['export', 'rollout', run.dir, '--step', '0', '--step', '1', '--out', join(out, 'twice.csv')],
      ['serve', run.dir, '--port', '0', '--port', '1'],
      ['collect', '--dump-details', join(out, 'c1'), '--dump-details', join(out, 'c2')],
    ]) {
      const r = cli(...args);
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, /--(limit|step|port|dump-details) given twice/, args.join(' '));
    }
    assert.equal(existsSync(join(out, 'twice.csv')), false);
    // a mistyped run folder is a missing directory (not a missing dump file); a step written in hex is no step
    const typo = cli('serve', join(out, 'no-such-run'), '--port', '0');
    assert.equal(typo.code, 2);
    assert.match(typo.stderr, /serve: no such directory: .*no-such-run/);
    const hex = cli('export', 'rollout', run.dir, '--step', '0x1', '--out', join(out, 'hex.csv'));
    assert.equal(hex.code, 2);
    assert.match(hex.stderr, /--step: expected an integer >= 0, got '0x1'/);
    // a Perfetto window holding nothing of the run writes nothing and says where the run lies
    const nothing = cli('export', 'perfetto', run.dir, '--t0', '1', '--t1', '2', '--out', join(out, 'empty.json'));
    assert.equal(nothing.code, 1, nothing.stderr);
    assert.match(nothing.stderr, /nothing to export between --t0 1 and --t1 2; the run's phases, GPU utilisation and engine series span \d+\.\d{3} to \d+\.\d{3} \(Unix seconds\); nothing written/);
    assert.equal(existsSync(join(out, 'empty.json')), false);
    // the same run twice, and a second TensorBoard export into a logdir holding one
    const dup = cli('serve', run.dir, `${run.dir}/`, '--port', '0');
    assert.equal(dup.code, 2);
    assert.match(dup.stderr, /is named twice .*each run is served once/);
    const logdir = join(out, 'tb-once');
    assert.equal(cli('export', 'tensorboard', run.dir, '--out', logdir).code, 0);
    const second = cli('export', 'tensorboard', run.dir, '--out', logdir);
    assert.equal(second.code, 2);
    assert.match(second.stderr, /already holds events\.out\.tfevents\..*TensorBoard would show every point twice/);
    assert.equal(readdirSync(logdir).length, 1);
    // a QUERY the search cannot take is named as the command names it
    const badRe = cli('search', run.dir, '/(unclosed/');
    assert.equal(badRe.code, 2);
    assert.match(badRe.stderr, /QUERY: not a regular expression/);
    // --cache-dir naming a file, or a path under one
    const file = join(out, 'cache-file');
    writeFileSync(file, 'x');
    for (const args of [['health', run.dir, '--cache-dir', file], ['search', run.dir, '1:40', '--cache-dir', join(file, 'sub')], ['serve', run.dir, '--port', '0', '--cache-dir', file]]) {
      const r = cli(...args);
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, /--cache-dir: .*cache-file is a file/, args.join(' '));
    }
    const missing = cli('health', join(out, 'nope'));
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /health: no such directory: .*nope/);
    // search's words after DIR are its QUERY; with --dump-details every word is.
    assert.equal(cli('search', run.dir).code, 2);
    assert.match(cli('search', run.dir).stderr, /a QUERY is required/);
  });

  test('export telemetry of a directory that is missing or holds no telemetry exits 2 and writes nothing', () => {
    const empty = join(out, 'empty');
    mkdirSync(empty);
    for (const [dir, problem] of [[join(out, 'nope'), /export telemetry: no such directory: .*nope/], [empty, /export telemetry: no telemetry: .*empty holds no dashboard\/ folder/]] as const) {
      const target = join(out, 'tel-none');
      const r = cli('export', 'telemetry', dir, '--out', target);
      assert.equal(r.code, 2, r.stdout);
      assert.match(r.stderr, problem);
      assert.equal(existsSync(target), false);
    }
    const flagged = cli('export', 'telemetry', '--dump-details', join(out, 'nope'), '--out', join(out, 'tel-none'));
    assert.match(flagged.stderr, /--dump-details: no such directory/);
  });

  test('--out inside the run, on a directory for a file, on a file for a directory, or under a file exits 2 and writes nothing', () => {
    const metricsFile = join(run.dir, 'dashboard', 'metrics.jsonl');
    const before = readFileSync(metricsFile);
    const file = join(out, 'a-file');
    writeFileSync(file, 'x');
    const cases: [string[], RegExp][] = [
      [['export', 'metrics', run.dir, '--format', 'csv', '--out', metricsFile], /--out: .*metrics\.jsonl is inside the run directory/],
      [['export', 'perfetto', run.dir, '--out', join(run.dir, 'rollout_data', '0.pt')], /--out: .* is inside the run directory/],
      [['export', 'telemetry', run.dir, '--out', join(run.dir, 'dashboard')], /--out: .* is inside the run directory/],
      [['export', 'tensorboard', run.dir, '--out', join(run.dir, 'tb')], /--out: .* is inside the run directory/],
      [['export', 'metrics', run.dir, '--format', 'csv', '--out', out], /--out: .* is a directory; give the name of the file to write/],
      [['export', 'tensorboard', run.dir, '--out', file], /--out: .*a-file is a file; give a directory/],
      [['export', 'rollout', run.dir, '--step', '1', '--format', 'csv', '--out', join(file, 'r.csv')], /--out: .*a-file is a file, so .* cannot be made under it/],
    ];
    // a link into the run is inside it too
    symlinkSync(join(run.dir, 'dashboard'), join(out, 'into-run'));
    cases.push([['export', 'metrics', run.dir, '--format', 'csv', '--out', join(out, 'into-run', 'metrics.jsonl')], /is inside the run directory/]);
    for (const [args, problem] of cases) {
      const r = cli(...args);
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, problem, args.join(' '));
    }
    assert.deepEqual(readFileSync(metricsFile), before, 'the run is not written');
    assert.equal(existsSync(join(run.dir, 'tb')), false);
  });

  test('export metrics without --format takes it from --out’s extension, and needs it otherwise', async () => {
    const pq = join(out, 'by-ext.parquet');
    assert.equal(cli('export', 'metrics', run.dir, '--out', pq).code, 0);
    assert.equal(readFileSync(pq).subarray(0, 4).toString(), 'PAR1');
    const none = cli('export', 'metrics', run.dir, '--out', join(out, 'table.txt'));
    assert.equal(none.code, 2);
    assert.match(none.stderr, /--format is required \(csv or parquet\)/);
    const crossed = cli('export', 'metrics', run.dir, '--format', 'csv', '--out', join(out, 'crossed.parquet'));
    assert.equal(crossed.code, 2);
    assert.match(crossed.stderr, /--format csv does not match --out's \.parquet/);
    // integers in decimal digits everywhere: a port in hex is refused too
    const hexPort = cli('serve', run.dir, '--port', '0x1F90');
    assert.equal(hexPort.code, 2);
    assert.match(hexPort.stderr, /--port: expected an integer, got '0x1F90'/);
    // a logdir that is not there is said to be missing, not to be something else
    const noLogdir = cli('serve', run.dir, '--tensorboard', join(out, 'no-logdir'));
    assert.equal(noLogdir.code, 2);
    assert.match(noLogdir.stderr, /--tensorboard: no such directory: .*no-logdir/);
    writeFileSync(join(out, 'a-file'), '');
    assert.match(cli('serve', run.dir, '--tensorboard', join(out, 'a-file')).stderr, /--tensorboard: .*a-file is not a directory/);
  });

  test('export telemetry into a directory holding files exits 2; into an empty one it is written whole, nothing left beside it', () => {
    const full = join(out, 'full');
    mkdirSync(full);
    writeFileSync(join(full, 'old.parquet'), 'x');
    const r = cli('export', 'telemetry', run.dir, '--out', full);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /--out: .*full is not empty; give a new or empty directory/);
    const empty = join(out, 'empty-out');
    mkdirSync(empty);
    assert.equal(cli('export', 'telemetry', run.dir, '--out', empty).code, 0);
    assert.ok(readdirSync(empty).some((n) => n.startsWith('stream=')));
    assert.equal(existsSync(`${empty}.partial`), false);
    // through a link to an empty directory: written into what it leads to
    const target = join(out, 'link-target');
    mkdirSync(target);
    symlinkSync(target, join(out, 'link-out'));
    const linked = cli('export', 'telemetry', run.dir, '--out', join(out, 'link-out'));
    assert.equal(linked.code, 0, linked.stderr);
    assert.ok(readdirSync(target).some((n) => n.startsWith('stream=')));
  });

  test('export telemetry killed (-9) while writing leaves no --out behind; the next export clears its leftovers and writes it whole', async () => {
    const clean = join(out, 'tel-clean');
    assert.equal(cli('export', 'telemetry', run.dir, '--out', clean).code, 0);
    const files = (dir: string): string[] => readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((n) => n.endsWith('.parquet')).sort();
    const dest = join(out, 'tel-killed');
    const child = spawn(process.execPath, [RLSIGHT_BIN, 'export', 'telemetry', run.dir, '--out', dest], { cwd: REPO, stdio: 'ignore' });
    const exited = new Promise<number | null>((ok) => child.once('exit', (code) => ok(code)));
    let gone = false;
    void exited.then(() => (gone = true));
    // killed as soon as the first Parquet file of the export is being written beside --out
    const partial = `${dest}.partial`;
    while (!gone && !(existsSync(partial) && readdirSync(partial, { recursive: true, encoding: 'utf8' }).some((n) => n.endsWith('.parquet.partial') || n.endsWith('.parquet')))) await new Promise((r) => setImmediate(r));
    assert.equal(gone, false, 'the export ended before a file of it was seen being written');
    child.kill('SIGKILL');
    assert.equal(await exited, null);
    assert.equal(existsSync(dest), false, 'a killed export left --out behind');
    assert.ok(existsSync(partial), 'what the killed export wrote lies beside --out');
    const again = cli('export', 'telemetry', run.dir, '--out', dest);
    assert.equal(again.code, 0, again.stderr);
    assert.equal(existsSync(partial), false);
    assert.deepEqual(files(dest), files(clean));
    for (const f of files(clean)) assert.deepEqual(readFileSync(join(dest, f)), readFileSync(join(clean, f)), f);
  });

  test('what a run holds is printed with its control characters escaped: a line or a file name cannot drive the terminal', () => {
    const hostile = copyFixtureRun('miles-demo');
    try {
      appendFileSync(join(hostile.dir, 'dashboard', 'metrics.jsonl'), '\x1b[2J\x1b[H all good\n');
      writeFileSync(join(hostile.dir, 'dashboard', 'gpu_util', '\x1b[31mred.jsonl'), '');
      ageTree(hostile.dir);
      const r = cli('health', hostile.dir);
      assert.equal(r.code, 3, r.stderr);
      assert.ok(!/[\x00-\x09\x0b-\x1f\x7f]/.test(r.stdout + r.stderr), JSON.stringify(r.stderr));
      assert.match(r.stderr, /\\x1b\[2J/);
    } finally {
      hostile.dispose();
    }
  });

  test('what could not be read is said on stderr and the run-wide exports exit 3, their output written from the rest', () => {
    const damaged = copyFixtureRun('miles-demo');
    try {
      appendFileSync(join(damaged.dir, 'dashboard', 'metrics.jsonl'), '{garbled\n');
      const dump = join(damaged.dir, 'rollout_data', '1.pt');
      truncateSync(dump, Math.floor(statSync(dump).size / 2));
      ageTree(damaged.dir);
      const garbled = /warning: dashboard\/metrics\.jsonl:\d+: not JSON/;
      const truncated = /warning: .*rollout_data\/1\.pt: truncated archive/;
      for (const [args, says] of [
        [['export', 'metrics', damaged.dir, '--out', join(out, 'dm.csv')], [garbled, truncated]],
        [['export', 'tensorboard', damaged.dir, '--out', join(out, 'dtb')], [garbled, truncated]],
        [['export', 'perfetto', damaged.dir, '--out', join(out, 'dp.json')], [garbled]],
        [['export', 'telemetry', damaged.dir, '--out', join(out, 'dtel')], [garbled]],
        [['health', damaged.dir], [garbled, truncated]],
      ] as [string[], RegExp[]][]) {
        const r = cli(...args);
        assert.equal(r.code, 3, `${args.join(' ')}: ${r.stderr}`);
        for (const said of says) assert.match(r.stderr, said, args.join(' '));
        // files named relative to the run, as the server names them
        assert.ok(!r.stderr.includes(damaged.dir), `${args.join(' ')}: ${r.stderr}`);
        // each problem once
        assert.equal(r.stderr.match(/truncated archive/g)?.length ?? 0, says.includes(truncated) ? 1 : 0, r.stderr);
      }
      assert.ok(existsSync(join(out, 'dm.csv')) && existsSync(join(out, 'dp.json')) && readdirSync(join(out, 'dtel')).length > 0);
      // search goes on past the damaged step, says so, and exits 3 with what the other steps matched
      const found = cli('search', damaged.dir, '/answer for sample 64/');
      assert.equal(found.code, 3, found.stderr);
      assert.ok(!found.stderr.includes(damaged.dir), found.stderr);
      assert.match(found.stderr, /warning: step 1: .*rollout_data\/1\.pt: truncated archive/);
      assert.equal(JSON.parse(found.stdout).sample_index, 64);
      // one step's table, of a step that reads whole, is complete whatever else is damaged
      assert.equal(cli('export', 'rollout', damaged.dir, '--step', '0', '--out', join(out, 'd0.csv')).code, 0);
    } finally {
      damaged.dispose();
    }
  });

  test('--help shows one form for every command: DIR first', () => {
    const help = cli('--help').stdout;
    for (const command of ['health', 'search', 'export metrics', 'export rollout', 'export tensorboard', 'export perfetto', 'export telemetry']) {
      assert.match(help, new RegExp(`rlsight ${command} DIR `), command);
    }
  });
});
