// Damaged and hostile telemetry: what is refused is skipped with a warning naming the file, never served.
import assert from 'node:assert/strict';
import { appendFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { ageTree, copyFixtureRun } from '../../../test/support/fixtures.ts';
import { MAX_LANES } from './laneCatalog.ts';
import { TelemetryStore } from './store.ts';

const root = mkdtempSync(join(tmpdir(), 'rlsight-telemetry-damage-'));
after(() => rmSync(root, { recursive: true, force: true }));
let n = 0;
function fresh(): string {
  const d = join(root, `d${n++}`);
  mkdirSync(join(d, 'gpu_util'), { recursive: true });
  return d;
}
const H13 = 997200;
const gpuLine = (ts: number, node: string, gpu: number, util: number): string =>
  `{"ts":${ts}.0,"node":"${node}","gpu":${gpu},"util":${util},"mem_mb":1000,"power_w":100}\n`;

describe('lane catalog limits', () => {
  test('a catalog of 200,000 lanes is refused with a warning; lanes are scanned from the streams instead', () => {
    const d = fresh();
    writeFileSync(join(d, 'gpu_util', '19700112_13.jsonl'), gpuLine(H13 + 1, 'a', 0, 1) + gpuLine(H13 + 2, 'a', 1, 2));
    const lanes: Record<string, unknown> = {};
    for (let i = 0; i < 200_000; i++) lanes[`10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}:${i % 8}`] = { ranks: [i], engine_addrs: [], roles: ['train'] };
    writeFileSync(join(d, 'lane_catalog.json'), JSON.stringify({ version: 1, lanes }));
    const store = TelemetryStore.open(d);
    assert.equal(store.hasLaneCatalog(), false);
    const w = store.warnings().filter((x) => x.file === 'lane_catalog.json');
    assert.equal(w.length, 1);
    assert.match(w[0].message, /bytes exceed the limit|lanes exceed the limit/);
    assert.deepEqual(store.laneIndex().map((l) => l.gpu), [0, 1]);
  });

  test('a compact catalog over the lane limit is refused by its lane count', () => {
    const d = fresh();
    const lanes: Record<string, unknown> = {};
    for (let i = 0; i <= MAX_LANES; i++) lanes[`n:${i}`] = {};
    writeFileSync(join(d, 'lane_catalog.json'), JSON.stringify({ version: 1, lanes }));
    const store = TelemetryStore.open(d);
    assert.equal(store.hasLaneCatalog(), false);
    assert.match(store.warnings().find((x) => x.file === 'lane_catalog.json')!.message, new RegExp(`${MAX_LANES + 1} lanes exceed the limit of ${MAX_LANES}`));
  });
});

describe('partition names and value domains', () => {
  const phaseLine = (t0: number, t1: number, gpu: number): string =>
    `{"name":"train","t0":${t0}.0,"t1":${t1}.0,"node":"a","gpus":[${gpu}],"rank":0,"role":"train"}\n`;

  test('a copy of a partition under a bogus hour name is skipped with a warning, not read twice', () => {
    const d = fresh();
    const good = gpuLine(H13 + 1, 'a', 0, 10) + gpuLine(H13 + 2, 'a', 1, 20);
    writeFileSync(join(d, 'gpu_util', '19700112_13.jsonl'), good);
    for (const bogus of ['19700112_99', '99991231_23', '19701301_00', 'notanhour']) writeFileSync(join(d, 'gpu_util', `${bogus}.jsonl`), good);
    const store = TelemetryStore.open(d);
    const rows = store.gpuUtilBlocks().reduce((n, b) => n + b.length, 0);
    assert.equal(rows, 2, 'every point once');
    const warned = store.warnings().map((w) => `${w.file}: ${w.message}`).join('\n');
    for (const bogus of ['19700112_99', '99991231_23', '19701301_00', 'notanhour']) assert.match(warned, new RegExp(`gpu_util/${bogus}\\.jsonl: .*skipped`));
  });

  test('values outside their domain are dropped and reported whenever the partition is parsed', () => {
    const d = fresh();
    mkdirSync(join(d, 'phases'));
    writeFileSync(
      join(d, 'gpu_util', '19700112_13.jsonl'),
      gpuLine(H13 + 1, 'a', 0, 10) +
        gpuLine(H13 + 2, 'a', -1, 10) +
        gpuLine(H13 + 3, 'a', 2 ** 53 + 7, 10) +
        '{"ts":1e300,"node":"a","gpu":0,"util":5,"mem_mb":1000,"power_w":100}\n' +
        '{"ts":-1e300,"node":"a","gpu":0,"util":5,"mem_mb":1000,"power_w":100}\n' +
        gpuLine(H13 + 4, 'a', 0, 1e308) +
        gpuLine(H13 + 5, 'a', 0, 55),
    );
    writeFileSync(join(d, 'phases', '19700112_13.jsonl'), phaseLine(H13 + 10, H13 + 20, 0) + phaseLine(H13 + 30, H13 + 25, 0) + phaseLine(H13 + 40, H13 + 50, 5000));
    const store = TelemetryStore.open(d);
    // Nothing is parsed at open: the warnings come when a partition is read, however late.
    assert.equal(store.warnings().filter((w) => w.file.startsWith('gpu_util/')).length, 0);
    const utils = store.gpuUtilBlocks().flatMap((b) => Array.from(b.util.subarray(0, b.length)));
    assert.deepEqual(utils, [10, 55]);
    const phases = store.phaseBlocks().reduce((n, b) => n + b.length, 0);
    assert.equal(phases, 1);
    const w = store.warnings().map((x) => `${x.file}:${x.line}: ${x.message}`);
    for (const [line, re] of [
      [2, /GPU index -1 is outside/],
      [3, /GPU index 900719925474\d+ is outside/],
      [4, /timestamp 1e\+300 is in the future/],
      [5, /timestamp -1e\+300 is not a time/],
      [6, /utilisation 1e\+308 is outside 0\.\.100/],
    ] as const) {
      assert.ok(w.some((x) => x.startsWith(`gpu_util/19700112_13.jsonl:${line}: `) && re.test(x)), `line ${line}: ${w.join('\n')}`);
    }
    assert.ok(w.some((x) => x.startsWith('phases/19700112_13.jsonl:2: ') && /ends .* before it starts/.test(x)), w.join('\n'));
    assert.ok(w.some((x) => x.startsWith('phases/19700112_13.jsonl:3: ') && /GPU index 5000/.test(x)), w.join('\n'));
  });

  test('a partition of random bytes is reported', () => {
    const d = fresh();
    let s = 7;
    const bytes = Buffer.alloc(64 * 1024, 0).map(() => (s = (s * 1103515245 + 12345) & 0xff));
    writeFileSync(join(d, 'gpu_util', '19700112_13.jsonl'), bytes);
    const store = TelemetryStore.open(d);
    assert.equal(store.gpuUtilBlocks().reduce((n, b) => n + b.length, 0), 0);
    assert.ok(store.warnings().some((x) => x.file === 'gpu_util/19700112_13.jsonl'), 'named in a warning');
  });
});

describe('an unterminated last line', () => {
  /** `n` random bytes holding no newline. */
  const noNewline = (n: number, seed: number): Uint8Array => {
    let s = seed;
    return Buffer.alloc(n).map(() => {
      s = (s * 1103515245 + 12345) & 0x7fffffff;
      const b = s >> 16 & 0xff;
      return b === 10 ? 11 : b;
    });
  };
  const tailWarnings = (store: TelemetryStore): string[] =>
    store.warnings().filter((w) => /no newline/.test(w.message)).map((w) => `${w.file}:${w.line}: ${w.message}`);

  test('in a file nobody writes is a warning naming the file, line and bytes left out', () => {
    const run = copyFixtureRun();
    try {
      const d = join(run.dir, 'dashboard');
      appendFileSync(join(d, 'topology.jsonl'), noNewline(5000, 1));
      // longer than the first windows the end is searched in
      appendFileSync(join(d, 'metrics.jsonl'), noNewline(3 << 20, 2));
      const torn = '{"ts":997300.0,"node":"10.0.0.1","gpu":0,"ut';
      appendFileSync(join(d, 'gpu_util', '19700112_13.jsonl'), torn);
      ageTree(run.dir);
      const store = TelemetryStore.open(d);
      assert.deepEqual(tailWarnings(store), [
        `gpu_util/19700112_13.jsonl:0: last line has no newline (${torn.length} bytes left out)`,
        'metrics.jsonl:4: last line has no newline (3145728 bytes left out)',
        'topology.jsonl:3: last line has no newline (5000 bytes left out)',
      ]);
      // the complete lines are all read
      assert.equal(store.metricsRecords().length, 3);
      assert.equal(store.topologySnapshots().length, 2);
    } finally {
      run.dispose();
    }
  });

  test('in a file modified within the freshness window is pending, and a warning once the window has passed', () => {
    const d = fresh();
    const torn = '{"ts":2.0,"st';
    writeFileSync(join(d, 'metrics.jsonl'), `{"ts":1.0,"step_key":null,"step":null,"metrics":{"a":1}}\n${torn}`);
    const store = TelemetryStore.open(d);
    assert.deepEqual(tailWarnings(store), []);
    const opened = Date.now();
    store.now = () => opened + 61_000;
    assert.deepEqual(tailWarnings(store), [`metrics.jsonl:2: last line has no newline (${torn.length} bytes left out)`]);
  });

  test('while the run is followed it stays pending, and is read once it ends', () => {
    const run = copyFixtureRun();
    try {
      const d = join(run.dir, 'dashboard');
      const line = '{"ts":1000300.0,"engines":[]}';
      appendFileSync(join(d, 'topology.jsonl'), line.slice(0, 10));
      ageTree(run.dir);
      const store = TelemetryStore.open(d);
      assert.equal(tailWarnings(store).length, 1, 'read once: a finished run');
      // a second read: the run is followed, the line may still be being written
      store.follow();
      assert.deepEqual(tailWarnings(store), []);
      appendFileSync(join(d, 'topology.jsonl'), `${line.slice(10)}\n`);
      assert.equal(store.follow().byStream.topology, 1);
      assert.equal(store.topologySnapshots().length, 3);
      assert.deepEqual(store.warnings(), []);
    } finally {
      run.dispose();
    }
  });

  test('a file ending with a newline, or empty, is no warning', () => {
    const run = copyFixtureRun();
    try {
      writeFileSync(join(run.dir, 'dashboard', 'topology.jsonl'), '');
      ageTree(run.dir);
      assert.deepEqual(TelemetryStore.open(join(run.dir, 'dashboard')).warnings(), []);
    } finally {
      run.dispose();
    }
  });
});
