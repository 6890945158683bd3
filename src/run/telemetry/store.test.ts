import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { appendFileSync, mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { copyFixtureRun, loadGoldens, type RunCopy } from '../../../test/support/fixtures.ts';
import { SAMPLED_HOURS, sampledHours } from './metricPresence.ts';
import { TelemetryStore } from './store.ts';

/** Python's float repr for the values used here (integral floats keep `.0`). */
const pyFloat = (x: number): string => (Number.isInteger(x) ? `${x}.0` : String(x));
const gpuLine = (ts: number, node: string, gpu: number, util: number, mem = 1000, power = 100): string =>
  `{"ts":${pyFloat(ts)},"node":"${node}","gpu":${gpu},"util":${util},"mem_mb":${mem},"power_w":${power}}\n`;
const phaseLine = (name: string, t0: number, t1: number, gpu: number): string =>
  `{"name":"${name}","t0":${pyFloat(t0)},"t1":${pyFloat(t1)},"node":"10.0.0.1","gpus":[${gpu}],"rank":${gpu},"role":"train"}\n`;
const metricsLine = (ts: number, step: number, metrics: Record<string, number>): string =>
  JSON.stringify({ ts, step_key: 'rollout/step', step, metrics: { ...metrics, 'rollout/step': step } }) + '\n';

// 1970-01-12 13:00 UTC and the next hours
const H13 = 997200;
const H14 = H13 + 3600;
const H15 = H14 + 3600;

/** Every gpu_util row of every block, as plain tuples. */
function gpuRows(store: TelemetryStore): [number, string, number, number, number][] {
  const out: [number, string, number, number, number][] = [];
  for (const b of store.gpuUtilBlocks()) {
    for (let i = 0; i < b.length; i++) out.push([b.ts[i], store.lanes.key(b.lane[i]), b.util[i], b.memMb(i), b.powerW(i)]);
  }
  return out;
}

describe('TelemetryStore on the demo run', () => {
  let run: RunCopy;
  before(() => {
    run = copyFixtureRun();
  });
  after(() => run.dispose());

  test('opening reads the catalog parts of /api/meta and parses no partition', () => {
    const store = TelemetryStore.open(join(run.dir, 'dashboard'));
    for (const r of Object.values(store.partitions)) assert.deepEqual(r.cachedKeys(), [], `${r.stream} stays lazy`);
    const meta = loadGoldens().find((g) => g.group === 'meta')!.body;
    assert.equal(store.meta()?.run_name, meta.run_name);
    assert.equal(store.meta()?.start_ts, meta.start_ts);
    assert.deepEqual(store.timeRange(), meta.time_range);
    assert.equal(store.latestDataBufferLength(), meta.data_buffer_length);
    assert.deepEqual(store.metricKeys(), meta.metric_keys);
    assert.deepEqual(store.stepKeys(), meta.step_keys);
    assert.equal(store.hasStream('metrics'), meta.capabilities.has_metrics);
    assert.equal(store.hasStream('phases') || store.hasStream('gpu_util'), meta.capabilities.has_timeline);
    assert.equal(store.hasStream('engine_series'), meta.capabilities.has_engine_series);
    assert.equal(store.hasStream('gpu_processes'), false);
    for (const r of Object.values(store.partitions)) assert.deepEqual(r.cachedKeys(), [], `${r.stream} still lazy`);
    assert.deepEqual(store.warnings(), []);
  });

  test('the lane catalog equals the stream scan; engine series rows keep their identity', () => {
    const store = TelemetryStore.open(join(run.dir, 'dashboard'));
    assert.ok(store.hasLaneCatalog());
    assert.deepEqual(store.laneIndex(), store.scannedLaneIndex());
    const [b] = store.engineSeriesBlocks();
    assert.equal(b.length, 1500);
    assert.deepEqual(store.engineSeries.key(b.series[0]), {
      addr: 'http://10.0.0.1:15000',
      metric: 'sglang_num_running_reqs',
      labelsJson: '{}',
      addrId: 0,
      metricId: 0,
      labelsId: 0,
    });
    assert.equal(b.value[0], 16);
    const names = new Set<string>();
    for (let i = 0; i < b.length; i++) names.add(store.engineSeries.key(b.series[i]).metric);
    const cold = TelemetryStore.open(join(run.dir, 'dashboard'));
    assert.deepEqual(cold.engineMetricsPresent(), [...names].sort(), 'sampled without parsing');
    assert.deepEqual(cold.partitions.engine_series.cachedKeys(), []);
    assert.deepEqual(store.engineMetricsPresent(), [...names].sort(), 'from the resident block');
    assert.equal(store.trajectoryEvents().length, 512);
    assert.equal(store.trajectoryEvents(1000030, 1000031).length, store.trajectoryEvents().filter((e) => e.ts >= 1000030 && e.ts <= 1000031).length);
  });
});

describe('engine metric names present', () => {
  test('a big cold hour is named from its first and last MiB (escaped and non-ASCII names decoded, cut lines ignored)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'rlsight-engnames-'));
    try {
      const line = (metric: string, ts: number) => `${JSON.stringify({ ts, addr: 'http://a:1', metric, labels: {}, value: 1 })}\n`;
      const filler = (metric: string) => line(metric, 997300.5).repeat(Math.ceil((1.2 * 2 ** 20) / line(metric, 997300.5).length));
      const body =
        line('sglang_num_running_reqs', 997201) + line('sglang_prompt_tokens_total', 997201) + filler('head') + line('only_in_the_middle', 997300.5) + filler('tail') + line('sglang_e2e_request_latency_seconds_count', 997400) + line('we"ird', 997400) + line('débit_µs', 997400) + line('head', 997400) + line('débit_µs', 997400);
      mkdirSync(join(dir, 'engine_series'));
      writeFileSync(join(dir, 'engine_series', '19700112_13.jsonl'), body);
      const store = TelemetryStore.open(dir);
      assert.deepEqual(store.engineMetricsPresent(), ['débit_µs', 'head', 'sglang_e2e_request_latency_seconds_count', 'sglang_num_running_reqs', 'sglang_prompt_tokens_total', 'tail', 'we"ird']);
      assert.deepEqual(store.partitions.engine_series.cachedKeys(), [], 'nothing parsed');
      store.engineSeriesBlocks();
      assert.ok(store.engineMetricsPresent().includes('only_in_the_middle'), 'a resident hour is exact');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('engine metric names of a long run', () => {
  test('at most SAMPLED_HOURS cold hours are sampled (first and last two, evenly spaced others); the rest count once read', () => {
    for (const n of [0, 1, 8, 9, 12, 72, 500]) {
      const picked = [...sampledHours(n)].sort((a, b) => a - b);
      assert.equal(picked.length, Math.min(n, SAMPLED_HOURS), String(n));
      assert.ok(picked.every((i) => Number.isInteger(i) && i >= 0 && i < n), String(n));
      if (n > SAMPLED_HOURS) assert.deepEqual([picked[0], picked[1], picked.at(-2), picked.at(-1)], [0, 1, n - 2, n - 1]);
    }
    const dir = mkdtempSync(join(tmpdir(), 'rlsight-engnames-long-'));
    try {
      mkdirSync(join(dir, 'engine_series'));
      const hour0 = 997200; // 1970-01-12 13:00 UTC
      const unsampled = [...Array(12).keys()].find((i) => !sampledHours(12).has(i))!;
      for (let h = 0; h < 12; h++) {
        const ts = hour0 + h * 3600 + 1;
        const metric = h === unsampled ? 'only_in_an_unsampled_hour' : h === 11 ? 'only_in_the_last_hour' : 'everywhere';
        const key = new Date((hour0 + h * 3600) * 1000).toISOString().replace(/[-T:]/g, '').slice(0, 10);
        writeFileSync(join(dir, 'engine_series', `${key.slice(0, 8)}_${key.slice(8, 10)}.jsonl`), `${JSON.stringify({ ts, addr: 'http://a:1', metric, labels: {}, value: 1 })}\n`);
      }
      const store = TelemetryStore.open(dir);
      assert.deepEqual(store.engineMetricsPresent(), ['everywhere', 'only_in_the_last_hour']);
      const t = hour0 + unsampled * 3600 + 1;
      store.engineSeriesBlocks(t, t);
      assert.deepEqual(store.engineMetricsPresent(), ['everywhere', 'only_in_an_unsampled_hour', 'only_in_the_last_hour'], 'a resident hour is exact');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('engine_series read selectively by metric', () => {
  test('finds _sum/_count twins with one shared search and keeps file order', () => {
    const run = copyFixtureRun();
    try {
      const dash = join(run.dir, 'dashboard');
      const want = ['sglang_time_to_first_token_seconds_sum', 'sglang_time_to_first_token_seconds_count', 'sglang_time_to_first_token_seconds'];
      const rowsOf = (store: TelemetryStore, blocks: ReturnType<TelemetryStore['engineSeriesBlocks']>): string[] =>
        blocks.flatMap((b) => Array.from({ length: b.length }, (_, i) => store.engineSeries.key(b.series[i])).map((k, i) => `${b.ts[i]} ${k.addr} ${k.metric} ${b.value[i]}`)).filter((r) => want.some((m) => r.split(' ')[2] === m));
      const selective = TelemetryStore.open(dash);
      const some = selective.engineSeriesBlocks(null, null, want);
      assert.equal(some[0].length, 600, 'exactly the rows of the two counters');
      const whole = TelemetryStore.open(dash);
      assert.deepEqual(rowsOf(selective, some), rowsOf(whole, whole.engineSeriesBlocks()));
    } finally {
      run.dispose();
    }
  });

  test('three distinct views per hour, then the fourth ask reads the hour whole', () => {
    const run = copyFixtureRun();
    try {
      const store = TelemetryStore.open(join(run.dir, 'dashboard'));
      for (const m of ['sglang_num_running_reqs', 'sglang_gen_throughput', 'sglang_generation_tokens_total']) assert.equal(store.engineSeriesBlocks(null, null, [m])[0].length, 300);
      assert.equal(store.engineSeriesBlocks(null, null, ['sglang_num_running_reqs'])[0].length, 300, 'a resident view still serves');
      assert.equal(store.engineSeriesBlocks(null, null, ['sglang_time_to_first_token_seconds_sum'])[0].length, 1500);
      assert.deepEqual(store.partitions.engine_series.cachedKeys(), ['19700112_13'], 'the whole block replaced the views');
    } finally {
      run.dispose();
    }
  });

  test('gives the same rows of those metrics as a whole read, and tails them on follow', () => {
    const run = copyFixtureRun();
    try {
      const dash = join(run.dir, 'dashboard');
      const want = ['sglang_num_running_reqs', 'sglang_generation_tokens_total'];
      const rowsOf = (store: TelemetryStore, blocks: ReturnType<TelemetryStore['engineSeriesBlocks']>): string[] => {
        const out: string[] = [];
        for (const b of blocks) {
          for (let i = 0; i < b.length; i++) {
            const k = store.engineSeries.key(b.series[i]);
            if (want.includes(k.metric)) out.push(`${b.ts[i]} ${k.addr} ${k.metric} ${k.labelsJson} ${b.value[i]}`);
          }
        }
        return out;
      };
      const selective = TelemetryStore.open(dash);
      const some = selective.engineSeriesBlocks(null, null, want);
      assert.ok(some[0].length < 1500 && some[0].length > 0, `only the asked metrics are parsed (${some[0].length} rows)`);
      const whole = TelemetryStore.open(dash);
      assert.deepEqual(rowsOf(selective, some), rowsOf(whole, whole.engineSeriesBlocks()));
      appendFileSync(
        join(dash, 'engine_series', '19700112_13.jsonl'),
        '{"ts":1000400.0,"addr":"http://10.0.0.1:15000","metric":"sglang_num_running_reqs","labels":{},"value":3.0}\n' +
          '{"ts":1000400.0,"addr":"http://10.0.0.1:15000","metric":"sglang_gen_throughput","labels":{},"value":3.0}\n',
      );
      selective.follow();
      whole.follow();
      const after = rowsOf(selective, selective.engineSeriesBlocks(null, null, want));
      assert.deepEqual(after, rowsOf(whole, whole.engineSeriesBlocks()));
      assert.equal(after.at(-1), '1000400 http://10.0.0.1:15000 sglang_num_running_reqs {} 3');
    } finally {
      run.dispose();
    }
  });
});

describe('gpu_util read selectively by lane', () => {
  test('gives the same rows of those lanes as a whole read, tails them, and yields to a whole block', () => {
    const d = mkdtempSync(join(tmpdir(), 'rlsight-gpuview-'));
    try {
      mkdirSync(join(d, 'gpu_util'), { recursive: true });
      const f = join(d, 'gpu_util', '19700112_13.jsonl');
      let text = '';
      for (let t = 0; t < 50; t++) for (const node of ['10.0.0.1', '10.0.0.2']) for (let g = 0; g < 4; g++) text += gpuLine(H13 + t, node, g, (t + g) % 100);
      writeFileSync(f, text);
      const sel = new Set(['10.0.0.2:3', '10.0.0.1:0']);
      const store = TelemetryStore.open(d);
      const view = store.gpuUtilBlocks(null, null, sel);
      assert.equal(view[0].length, 100, 'only the selected lanes are parsed');
      const pick = (s: TelemetryStore): [number, string, number, number, number][] => gpuRows(s).filter((r) => sel.has(r[1]));
      assert.deepEqual(
        view.flatMap((b) => Array.from({ length: b.length }, (_, i) => [b.ts[i], store.lanes.key(b.lane[i]), b.util[i], b.memMb(i), b.powerW(i)])),
        pick(TelemetryStore.open(d)),
      );
      appendFileSync(f, gpuLine(H13 + 99, '10.0.0.2', 3, 42) + gpuLine(H13 + 99, '10.0.0.2', 2, 43));
      store.follow();
      const tailed = store.gpuUtilBlocks(null, null, sel)[0];
      assert.equal(tailed.length, 101);
      assert.equal(tailed.util[100], 42);
      assert.equal(store.gpuUtilBlocks()[0].length, 402, 'an unfiltered read parses the whole hour');
      assert.equal(store.gpuUtilBlocks(null, null, sel)[0].length, 402, 'and then serves every view');
    } finally {
      rmSync(d, { recursive: true, force: true });
    }
  });

  test('a resident view serves any subset of its lanes without reading again', () => {
    const d = mkdtempSync(join(tmpdir(), 'rlsight-gpuview-'));
    try {
      mkdirSync(join(d, 'gpu_util'), { recursive: true });
      let text = '';
      for (let t = 0; t < 20; t++) for (let g = 0; g < 4; g++) text += gpuLine(H13 + t, '10.0.0.1', g, g);
      writeFileSync(join(d, 'gpu_util', '19700112_13.jsonl'), text);
      const store = TelemetryStore.open(d);
      const wide = store.gpuUtilBlocks(null, null, ['10.0.0.1:0', '10.0.0.1:2'])[0];
      const fills = store.partitions.gpu_util.fills;
      assert.equal(store.gpuUtilBlocks(null, null, ['10.0.0.1:2'])[0], wide);
      assert.equal(store.partitions.gpu_util.fills, fills);
      const other = store.gpuUtilBlocks(null, null, ['10.0.0.1:3'])[0];
      assert.equal(store.partitions.gpu_util.fills, fills + 1, 'a lane the view lacks is read');
      assert.equal(other.length, 80, 'a second distinct selection reads the hour whole');
      assert.deepEqual(store.partitions.gpu_util.cachedKeys(), ['19700112_13']);
    } finally {
      rmSync(d, { recursive: true, force: true });
    }
  });
});

describe('a window ending on an hour boundary', () => {
  test('skips the next hour file when its first sample is later, reads it when a sample sits on the boundary', () => {
    const d = mkdtempSync(join(tmpdir(), 'rlsight-boundary-'));
    try {
      mkdirSync(join(d, 'gpu_util'), { recursive: true });
      writeFileSync(join(d, 'gpu_util', '19700112_13.jsonl'), gpuLine(H13 + 10, '10.0.0.1', 0, 5) + gpuLine(H14 - 0.5, '10.0.0.1', 0, 6));
      writeFileSync(join(d, 'gpu_util', '19700112_14.jsonl'), gpuLine(H14 + 0.25, '10.0.0.1', 0, 7));
      const store = TelemetryStore.open(d);
      assert.deepEqual(store.gpuUtilBlocks(H13, H14).map((b) => b.key), ['19700112_13']);
      assert.deepEqual(store.partitions.gpu_util.cachedKeys(), ['19700112_13'], 'the next hour is not parsed');
      assert.deepEqual(store.gpuUtilBlocks(H13, H14 + 0.25).map((b) => b.key), ['19700112_13', '19700112_14']);
      writeFileSync(join(d, 'gpu_util', '19700112_15.jsonl'), gpuLine(H15, '10.0.0.1', 0, 8));
      store.follow();
      assert.deepEqual(store.gpuUtilBlocks(H15 - 1, H15).map((b) => b.key), ['19700112_14', '19700112_15'], 'a sample stamped exactly at t1 counts');
    } finally {
      rmSync(d, { recursive: true, force: true });
    }
  });
});

describe('TelemetryStore partitions and tailing', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'rlsight-store-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  const fresh = (name: string): string => {
    const d = join(dir, name);
    mkdirSync(join(d, 'gpu_util'), { recursive: true });
    mkdirSync(join(d, 'phases'), { recursive: true });
    return d;
  };

  test('a missing directory is an empty store', () => {
    const store = TelemetryStore.open(join(dir, 'nope'));
    assert.equal(store.meta(), null);
    assert.equal(store.timeRange(), null);
    assert.deepEqual(store.laneIndex(), []);
    assert.deepEqual(store.metricKeys(), []);
    assert.equal(store.follow().rows, 0);
  });

  test('a window parses only the hour files it touches; the time range comes from edge lines', () => {
    const d = fresh('hours');
    for (const h of [H13, H14, H15]) writeFileSync(join(d, 'gpu_util', `19700112_${(h - H13) / 3600 + 13}.jsonl`), gpuLine(h + 10, 'a', 0, 20) + gpuLine(h + 20, 'a', 0, 20));
    const store = TelemetryStore.open(d);
    assert.deepEqual(store.timeRange(), [H13 + 10, H15 + 20]);
    assert.equal(store.partitions.gpu_util.rowsParsed, 0);
    const blocks = store.gpuUtilBlocks(H14 + 100, H14 + 200);
    assert.deepEqual(blocks.map((b) => b.key), ['19700112_14']);
    assert.deepEqual([...blocks[0].util], [20, 20]);
    assert.deepEqual(store.partitions.gpu_util.cachedKeys(), ['19700112_14']);
    store.gpuUtilBlocks(H14 + 300, H14 + 400);
    assert.equal(store.partitions.gpu_util.rowsParsed, 2, 'a second read inside the hour re-parses nothing');
    // scan fallback: no catalog, lanes from the streams
    assert.deepEqual(store.laneIndex().map((l) => [l.node, l.gpu, l.index]), [['a', 0, 0]]);
  });

  test('a cached block tails appended rows on follow; a new hour file stays lazy but is listed', () => {
    const d = fresh('tail');
    const f = join(d, 'gpu_util', '19700112_13.jsonl');
    writeFileSync(f, gpuLine(H13 + 1, 'a', 0, 1) + gpuLine(H13 + 2, 'a', 0, 2) + gpuLine(H13 + 3, 'a', 0, 3));
    const store = TelemetryStore.open(d);
    assert.equal(store.gpuUtilBlocks()[0].length, 3);
    assert.equal(store.follow().rows, 0);
    appendFileSync(f, gpuLine(H13 + 4, 'a', 0, 4));
    writeFileSync(join(d, 'gpu_util', '19700112_14.jsonl'), gpuLine(H14 + 1, 'b', 1, 9));
    const r = store.follow();
    assert.equal(r.rows, 1);
    assert.deepEqual(r.newPartitions, [{ stream: 'gpu_util', key: '19700112_14' }]);
    assert.deepEqual(r.timeRange, [H13 + 1, H14 + 1]);
    assert.ok(r.timeRangeChanged);
    assert.deepEqual(r.newLanes.map((l) => `${l.node}:${l.gpu}`), []);
    assert.equal(store.partitions.gpu_util.isCached('19700112_14'), false);
    assert.deepEqual(gpuRows(store).map((x) => x[2]), [1, 2, 3, 4, 9]);
  });

  test('a trailing partial line is left for later, then read whole', () => {
    const d = fresh('partial');
    const f = join(d, 'metrics.jsonl');
    const whole = metricsLine(H13, 0, { 'a/b': 1 });
    writeFileSync(f, whole + whole.slice(0, 20));
    const store = TelemetryStore.open(d);
    assert.equal(store.metricsRecords().length, 1);
    appendFileSync(f, whole.slice(20, 40));
    assert.equal(store.follow().rows, 0);
    appendFileSync(f, whole.slice(40));
    const r = store.follow();
    assert.equal(r.rows, 1);
    assert.deepEqual(store.metricsRecords().length, 2);
    assert.deepEqual(store.warnings(), []);
  });

  test('corrupt complete lines are skipped and reported with file and line, never fatal', () => {
    const d = fresh('corrupt');
    writeFileSync(join(d, 'metrics.jsonl'), metricsLine(H13, 0, { k: 1 }) + 'not json\n' + '\n' + metricsLine(H13 + 1, 1, { k: 2 }));
    writeFileSync(
      join(d, 'gpu_util', '19700112_13.jsonl'),
      gpuLine(H13 + 1, 'a', 0, 5) +
        '{"ts":1.0,"node":"a","gpu":0,"util":5,"mem_mb":1,"power_w":1,"extra":1}\n' +
        '{"ts":1.0,"node":"a","gpu":"0","util":5,"mem_mb":1,"power_w":1}\n' +
        '{"ts":1.0,"node":"a","gpu":0,"util":5\n' +
        gpuLine(H13 + 2, 'a', 0, 6),
    );
    const store = TelemetryStore.open(d);
    assert.deepEqual(store.metricsRecords().map((r) => r.step), [0, 1]);
    assert.deepEqual(store.warnings().map((w) => [w.file, w.line]), [
      ['metrics.jsonl', 2],
      ['metrics.jsonl', 3],
    ]);
    assert.match(store.warnings()[1].message, /empty line/);
    assert.deepEqual(gpuRows(store).map((r) => r[2]), [5, 6], 'the partition reads around its bad lines');
    assert.deepEqual(store.warnings().slice(2).map((w) => [w.file, w.line]), [
      ['gpu_util/19700112_13.jsonl', 2],
      ['gpu_util/19700112_13.jsonl', 3],
      ['gpu_util/19700112_13.jsonl', 4],
    ]);
    const report = TelemetryStore.open(d).follow();
    assert.deepEqual(report.warnings, [], 'a follow with nothing new reports nothing');
  });

  test('the legacy flat file reads as a partition, before the hour files', () => {
    const d = fresh('legacy');
    writeFileSync(join(d, 'gpu_util.jsonl'), gpuLine(H13 + 5, 'a', 0, 1));
    writeFileSync(join(d, 'gpu_util', '19700112_13.jsonl'), gpuLine(H13 + 1, 'a', 1, 2));
    writeFileSync(join(d, 'phases.jsonl'), phaseLine('actor_train', H13, H13 + 3, 2));
    const store = TelemetryStore.open(d);
    assert.deepEqual(store.gpuUtilBlocks(H13 + 3000, H13 + 3100).map((b) => b.key), ['legacy', '19700112_13']);
    assert.deepEqual(store.timeRange(), [H13, H13 + 5]);
    assert.deepEqual(
      store.laneIndex().map((l) => [l.node, l.gpu, l.ranks, l.roles]),
      [
        ['10.0.0.1', 2, [2], ['train']],
        ['a', 0, [], []],
        ['a', 1, [], []],
      ],
    );
  });

  test('an open marker contributes only its t0 to the time range', () => {
    const d = fresh('open');
    writeFileSync(join(d, 'phases', '19700112_13.jsonl'), phaseLine('rollout', H13 + 50, -1, 0));
    writeFileSync(join(d, 'gpu_util', '19700112_13.jsonl'), gpuLine(H13 + 60, 'a', 0, 1));
    assert.deepEqual(TelemetryStore.open(d).timeRange(), [H13 + 50, H13 + 60]);
  });

  test('an LRU of one block re-parses evicted hours from byte 0 with identical rows', () => {
    const d = fresh('lru');
    for (const h of [H13, H14, H15]) writeFileSync(join(d, 'gpu_util', `19700112_${(h - H13) / 3600 + 13}.jsonl`), gpuLine(h + 1, 'a', 0, 7) + gpuLine(h + 2, 'b', 3, 8));
    const small = TelemetryStore.open(d, { cacheBlocks: 1 });
    const cold = gpuRows(small);
    assert.equal(small.partitions.gpu_util.cachedKeys().length, 1);
    assert.deepEqual(gpuRows(small), cold);
    assert.equal(small.partitions.gpu_util.rowsParsed, 12);
    assert.deepEqual(gpuRows(TelemetryStore.open(d)), cold);
  });

  test('a rewritten meta.json, an unreadable catalog and a truncated hour file are all survived', () => {
    const d = fresh('rewrite');
    const f = join(d, 'gpu_util', '19700112_13.jsonl');
    writeFileSync(f, gpuLine(H13 + 1, 'a', 0, 1) + gpuLine(H13 + 2, 'a', 1, 2));
    writeFileSync(join(d, 'meta.json'), JSON.stringify({ run_name: 'one', start_ts: H13, args: {}, schema_version: 1 }, null, 1));
    writeFileSync(join(d, 'lane_catalog.json'), '{"version": 1, "lanes": {');
    const store = TelemetryStore.open(d);
    assert.equal(store.meta()?.run_name, 'one');
    assert.equal(store.hasLaneCatalog(), false);
    assert.deepEqual(store.warnings().map((w) => w.file), ['lane_catalog.json']);
    assert.deepEqual(store.laneIndex().map((l) => l.gpu), [0, 1], 'lanes come from the scan instead');
    writeFileSync(join(d, 'meta.json'), JSON.stringify({ run_name: 'two', start_ts: H13 + 5, args: {}, schema_version: 1, added_later: true }, null, 1));
    writeFileSync(f, gpuLine(H13 + 3, 'a', 2, 3));
    const r = store.follow();
    assert.ok(r.metaChanged);
    assert.equal(store.meta()?.run_name, 'two', 'unknown meta keys are tolerated');
    assert.deepEqual(gpuRows(store).map((x) => x[2]), [3], 'a file rewritten shorter is read again');
    const next = join(d, 'next.jsonl');
    writeFileSync(next, gpuLine(H13 + 4, 'a', 3, 4) + gpuLine(H13 + 5, 'a', 3, 5) + gpuLine(H13 + 6, 'a', 3, 6));
    renameSync(next, f);
    store.follow();
    assert.deepEqual(gpuRows(store).map((x) => x[2]), [4, 5, 6], 'a file replaced by a longer one is read again');
  });

  test('follow reports new metric keys, step keys and lanes from the catalog', () => {
    const d = fresh('report');
    writeFileSync(join(d, 'metrics.jsonl'), metricsLine(H13, 0, { 'a/x': 1 }));
    const store = TelemetryStore.open(d);
    appendFileSync(join(d, 'metrics.jsonl'), metricsLine(H13 + 1, 1, { 'a/x': 1, 'b/y': 2 }));
    writeFileSync(join(d, 'lane_catalog.json'), JSON.stringify({ version: 1, lanes: { '10.0.0.2:0': { ranks: [], engine_addrs: [], roles: [] }, '10.0.0.10:1': { ranks: [4], engine_addrs: [], roles: ['train'] } } }));
    const r = store.follow();
    assert.deepEqual(r.newMetricKeys, ['b/y']);
    assert.deepEqual(r.newStepKeys, []);
    assert.ok(r.lanesChanged);
    // nodes in cluster order: IPv4 by octet, "10.0.0.2" < "10.0.0.10"
    assert.deepEqual(r.newLanes.map((l) => [l.node, l.gpu, l.index]), [
      ['10.0.0.2', 0, 0],
      ['10.0.0.10', 1, 1],
    ]);
  });
});

describe('cold hours parsed on a worker thread', () => {
  test('give exactly what the main thread alone gives, views and bad lines included', () => {
    const d = mkdtempSync(join(tmpdir(), 'rlsight-pool-'));
    try {
      for (const s of ['gpu_util', 'engine_series', 'phases', 'trajectories', 'gpu_processes']) mkdirSync(join(d, s), { recursive: true });
      for (let h = 0; h < 4; h++) {
        const base = H13 + h * 3600;
        const key = `19700112_${13 + h}`;
        let gpu = '';
        for (let t = 0; t < 30; t++) for (const node of ['10.0.0.1', '10.0.0.2']) for (let g = 0; g < 2; g++) gpu += gpuLine(base + t + 0.25, node, g, (t * 3 + g) % 101, 1000 + t, 100 + g);
        writeFileSync(join(d, 'gpu_util', `${key}.jsonl`), gpu + (h === 2 ? 'oops\n' : ''));
        let eng = '';
        for (let t = 0; t < 20; t++) {
          eng += `{"ts":${pyFloat(base + t)},"addr":"http://10.0.0.1:15000","metric":"sglang_num_running_reqs","labels":{"dp_rank":"${t % 2}"},"value":${pyFloat(t)}}\n`;
          eng += `{"ts":${pyFloat(base + t)},"addr":"http://10.0.0.1:15000","metric":"sglang_gen_throughput","labels":{},"value":${pyFloat(t * 1.5)}}\n`;
        }
        writeFileSync(join(d, 'engine_series', `${key}.jsonl`), eng);
        writeFileSync(join(d, 'phases', `${key}.jsonl`), phaseLine(`p${h}`, base + 1, base + 9, h % 2) + phaseLine('open', base + 10, -1, 0));
        writeFileSync(join(d, 'trajectories', `${key}.jsonl`), `{"ts":${pyFloat(base + 2)},"kind":"attempt_start","sample_index":${h},"group_index":0,"turn":-1,"weight_version":"0","detail":""}\n`);
        writeFileSync(join(d, 'gpu_processes', `${key}.jsonl`), `{"ts":${pyFloat(base + 3)},"node":"10.0.0.1","gpu":0,"pid":${h},"name":"python","mem_mb":5}\n`);
      }
      const serial = TelemetryStore.open(d, { parseWorkers: 0 });
      const parallel = TelemetryStore.open(d, { parseWorkers: 1, parallelFromBytes: 0 });
      try {
        assert.equal(parallel.parseWorkersReady(), 1);
        const lanes = new Set(['10.0.0.2:1']);
        const view = (s: TelemetryStore): string[] => s.gpuUtilBlocks(null, null, lanes).flatMap((b) => Array.from({ length: b.length }, (_, i) => `${b.ts[i]} ${s.lanes.key(b.lane[i])} ${b.util[i]}`).filter((r) => r.includes('10.0.0.2:1')));
        assert.deepEqual(view(parallel), view(serial));
        assert.deepEqual(gpuRows(parallel), gpuRows(serial));
        const eng = (s: TelemetryStore, metrics?: string[]): string[] =>
          s.engineSeriesBlocks(null, null, metrics).flatMap((b) => Array.from({ length: b.length }, (_, i) => {
            const k = s.engineSeries.key(b.series[i]);
            return `${b.ts[i]} ${k.addr} ${k.metric} ${k.labelsJson} ${b.value[i]}`;
          }));
        assert.deepEqual(eng(parallel, ['sglang_gen_throughput']).filter((r) => r.includes('gen_throughput')), eng(serial, ['sglang_gen_throughput']).filter((r) => r.includes('gen_throughput')));
        assert.deepEqual(eng(parallel), eng(serial));
        assert.deepEqual(parallel.phaseEvents(), serial.phaseEvents());
        assert.deepEqual(parallel.trajectoryEvents(), serial.trajectoryEvents());
        assert.deepEqual(parallel.gpuProcessRows(), serial.gpuProcessRows());
        assert.deepEqual(new Set(parallel.warnings().map((w) => `${w.file}:${w.line}`)), new Set(serial.warnings().map((w) => `${w.file}:${w.line}`)));
        assert.deepEqual(serial.warnings().map((w) => `${w.file}:${w.line}`), ['gpu_util/19700112_15.jsonl:121']);
        assert.ok(parallel.partitions.gpu_util.workerFills > 0, 'the worker took a share');
        assert.equal(serial.partitions.gpu_util.workerFills, 0);
        // appended rows of a worker-parsed block arrive through follow like any other
        appendFileSync(join(d, 'gpu_util', '19700112_16.jsonl'), gpuLine(H13 + 3 * 3600 + 50, '10.0.0.1', 0, 77));
        parallel.follow();
        serial.follow();
        assert.deepEqual(gpuRows(parallel), gpuRows(serial));
        assert.equal(gpuRows(parallel).at(-1)![2], 77);
      } finally {
        parallel.close();
      }
    } finally {
      rmSync(d, { recursive: true, force: true });
    }
  });
});

describe('one hour read by two parse threads at once', () => {
  test('a lane view’s pieces join into what one thread reads: rows in file order, widened values, bad lines at their line numbers', async () => {
    const d = mkdtempSync(join(tmpdir(), 'rlsight-pieces-'));
    try {
      mkdirSync(join(d, 'gpu_util'), { recursive: true });
      let gpu = '';
      for (let t = 0; t < 400; t++) {
        for (const node of ['10.0.0.1', '10.0.0.2']) for (let g = 0; g < 2; g++) gpu += gpuLine(H13 + t + 0.25, node, g, (t * 3 + g) % 101, 1000 + t, 100 + g);
        // bad lines spread over the pieces, and one value only the wide schema holds, late in the file
        if (t % 97 === 5) gpu += 'oops\n';
        if (t === 350) gpu += gpuLine(H13 + t + 0.5, '10.0.0.2', 1, 12.5);
      }
      writeFileSync(join(d, 'gpu_util', '19700112_13.jsonl'), gpu);
      const serial = TelemetryStore.open(d, { parseWorkers: 0 });
      for (const lanes of [new Set(['10.0.0.2:1']), null]) {
        const parallel = TelemetryStore.open(d, { parseWorkers: 2, parallelFromBytes: 0 });
        try {
          assert.equal(parallel.parseWorkersReady(), 2);
          parallel.partitions.gpu_util.minPieceBytes = 4096;
          await parallel.readOnThreads('gpu_util', null, null, lanes);
          // a selective read is cut in pieces; a whole hour is not (its columns would be held twice while joined)
          if (lanes !== null) assert.ok(parallel.partitions.gpu_util.workerPieces >= 4, `the hour was cut in pieces (${parallel.partitions.gpu_util.workerPieces})`);
          else assert.equal(parallel.partitions.gpu_util.workerPieces, 1);
          assert.equal(parallel.partitions.gpu_util.workerFills, 1, 'and taken in as one block');
          const rows = (s: TelemetryStore): string[] =>
            s.gpuUtilBlocks(null, null, lanes).flatMap((b) =>
              Array.from({ length: b.length }, (_, i) => `${b.ts[i]} ${s.lanes.key(b.lane[i])} ${b.util[i]} ${b.memMb(i)} ${b.powerW(i)}`).filter((r) => lanes === null || r.includes(' 10.0.0.2:1 ')),
            );
          assert.equal(parallel.partitions.gpu_util.fills, 1, 'nothing read again on this thread');
          assert.deepEqual(rows(parallel), rows(serial));
          assert.ok(parallel.gpuUtilBlocks(null, null, lanes)[0]!.wide);
          assert.deepEqual(
            parallel.warnings().map((w) => `${w.file}:${w.line}`),
            serial.warnings().map((w) => `${w.file}:${w.line}`),
          );
        } finally {
          parallel.close();
        }
      }
      assert.equal(serial.warnings().length, 5);
    } finally {
      rmSync(d, { recursive: true, force: true });
    }
  });
});

describe('a window\'s edge hours read for the window only', () => {
  for (const parseWorkers of [0, 2]) {
    test(`a lane view of an hour the window cuts leaves out the rows before it, yet answers exactly with rows out of order (${parseWorkers} parse threads)`, async () => {
      const d = mkdtempSync(join(tmpdir(), 'rlsight-bounded-'));
      try {
        mkdirSync(join(d, 'gpu_util'), { recursive: true });
        const lanes = new Set(['10.0.0.2:1']);
        const rowsOf = (t: number): string => ['10.0.0.1', '10.0.0.2'].flatMap((node) => [0, 1].map((g) => gpuLine(t, node, g, Math.round(t) % 101))).join('');
        // late rows first: stamps of the window's part of the hour written ahead of the hour's start
        let h13 = rowsOf(H13 + 3000.5) + rowsOf(H13 + 2500);
        for (let t = 0; t < 3600; t += 5) h13 += rowsOf(H13 + t + 0.25);
        h13 += rowsOf(H13 + 1900.75) + rowsOf(H13 + 10);
        let h14 = '';
        for (let t = 0; t < 3600; t += 5) h14 += rowsOf(H14 + t);
        writeFileSync(join(d, 'gpu_util', '19700112_13.jsonl'), h13);
        writeFileSync(join(d, 'gpu_util', '19700112_14.jsonl'), h14);
        const whole = TelemetryStore.open(d, { parseWorkers: 0 });
        const store = TelemetryStore.open(d, { parseWorkers, parallelFromBytes: 0 });
        try {
          if (parseWorkers > 0) assert.equal(store.parseWorkersReady(), parseWorkers);
          store.partitions.gpu_util.minPieceBytes = 4096;
          /** The lane's rows stamped within the window, in block and file order. */
          const inWindow = (s: TelemetryStore, t0: number, t1: number, sel: Set<string> | null): string[] =>
            s.gpuUtilBlocks(t0, t1, sel).flatMap((b) => Array.from({ length: b.length }, (_, i) => i).filter((i) => b.ts[i] >= t0 && b.ts[i] <= t1 && s.lanes.key(b.lane[i]) === '10.0.0.2:1').map((i) => `${b.ts[i]} ${b.util[i]}`));
          const t0 = H13 + 1800.5;
          const t1 = H14 + 600;
          if (parseWorkers > 0) await store.readOnThreads('gpu_util', t0, t1, lanes);
          assert.deepEqual(inWindow(store, t0, t1, lanes), inWindow(whole, t0, t1, null));
          const reader = store.partitions.gpu_util;
          const fills = reader.fills;
          // the skip was taken: the cut hours hold only rows near the window, the late rows at the start kept
          const [first, second] = store.gpuUtilBlocks(t0, t1, lanes);
          const before = Array.from(first!.ts).filter((t) => t < t0 - 1).length;
          assert.ok(before < 30, `hour 13 read from about the window's start (${before} of its 361 earlier rows kept)`);
          assert.ok(Array.from(first!.ts).includes(H13 + 3000.5) && Array.from(first!.ts).includes(H13 + 1900.75));
          const after = Array.from(second!.ts).filter((t) => t > t1 + 1).length;
          assert.ok(after < 30, `hour 14 read to about the window's end (${after} of its 600 later rows kept)`);
          // a window within the bounds is served as read; a wider one reads its hours again, as exactly
          assert.deepEqual(inWindow(store, t0 + 60, t1 - 60, lanes), inWindow(whole, t0 + 60, t1 - 60, null));
          assert.equal(reader.fills, fills, 'nothing read again for a window within the bounds');
          for (const [a, b] of [[H13 + 5, t1], [t0, H14 + 3000], [H13, H14 + 3599]]) {
            if (parseWorkers > 0) await store.readOnThreads('gpu_util', a, b, lanes);
            assert.deepEqual(inWindow(store, a!, b!, lanes), inWindow(whole, a!, b!, null));
          }
          assert.ok(reader.fills > fills, 'a wider window was read again');
          assert.deepEqual(store.warnings(), []);
        } finally {
          store.close();
        }
      } finally {
        rmSync(d, { recursive: true, force: true });
      }
    });
  }
});

test('the pieces of a window\'s cold hours go to the parse threads costliest first, an hour\'s part before the window counted cheap', async () => {
  const d = mkdtempSync(join(tmpdir(), 'rlsight-piece-order-'));
  try {
    mkdirSync(join(d, 'gpu_util'), { recursive: true });
    const rows = (t: number, nodes: string[]): string => nodes.flatMap((node) => [0, 1].map((g) => gpuLine(t, node, g, 5))).join('');
    let h13 = '';
    for (let t = 0; t < 3600; t += 5) h13 += rows(H13 + t, ['10.0.0.1', '10.0.0.2']);
    let h14 = '';
    for (let t = 0; t < 3000; t += 5) h14 += rows(H14 + t, ['10.0.0.1']);
    writeFileSync(join(d, 'gpu_util', '19700112_13.jsonl'), h13);
    writeFileSync(join(d, 'gpu_util', '19700112_14.jsonl'), h14);
    const store = TelemetryStore.open(d, { parseWorkers: 0 });
    const reader = store.partitions.gpu_util;
    reader.minPieceBytes = 4096;
    // one thread that takes every piece and fails it: what is recorded is the order the pieces were handed out in
    const handed: string[] = [];
    let busy = false;
    const pool = {
      size: 1,
      idle: () => (busy ? -1 : 0),
      submit: (_slot: number, job: { path: string; offset: number }) => {
        busy = true;
        handed.push(`${basename(job.path, '.jsonl')}@${job.offset === 0 ? 0 : 'cut'}`);
      },
      poll: () => {
        busy = false;
        return 'failed' as const;
      },
      waitingForThread: () => {},
    };
    reader.poolSource = () => pool as never;
    // hour 13 is cut in two: its first half lies wholly before the window, its second half partly; hour 14 is
    // the smallest piece in bytes but read whole
    await store.readOnThreads('gpu_util', H13 + 2700, null, new Set(['10.0.0.1:0']));
    assert.deepEqual(handed, ['19700112_14@0', '19700112_13@cut', '19700112_13@0']);
    // the newest hour's rows stop before its end (a run's last hour): a window ending with them reads it all
    let newest = '';
    for (let t = 0; t < 1200; t += 5) newest += rows(H14 + t, ['10.0.0.1', '10.0.0.2', '10.0.0.3', '10.0.0.4']);
    writeFileSync(join(d, 'gpu_util', '19700112_14.jsonl'), newest);
    const again = TelemetryStore.open(d, { parseWorkers: 0 });
    again.partitions.gpu_util.minPieceBytes = 4096;
    again.partitions.gpu_util.poolSource = () => pool as never;
    handed.length = 0;
    await again.readOnThreads('gpu_util', H13 + 1800, H14 + 1195, new Set(['10.0.0.1:0']));
    assert.deepEqual(handed, ['19700112_14@0', '19700112_13@cut', '19700112_13@0']);
  } finally {
    rmSync(d, { recursive: true, force: true });
  }
});

describe('TelemetryStore with a concurrent writer', () => {
  test('follow never sees a torn or duplicated record, and ends equal to a cold load', async () => {
    const d = mkdtempSync(join(tmpdir(), 'rlsight-writer-'));
    try {
      mkdirSync(join(d, 'gpu_util'), { recursive: true });
      mkdirSync(join(d, 'phases'), { recursive: true });
      // The writer appends lines in pieces (a reader sees half-written lines) and crosses into a new hour.
      const writer = `
        const fs = require('node:fs');
        const path = require('node:path');
        const dir = ${JSON.stringify(d)};
        const H = ${H14};
        const py = (x) => Number.isInteger(x) ? x + '.0' : String(x);
        const hour = (ts) => '19700112_' + (13 + Math.floor((ts - ${H13}) / 3600));
        const pause = (ms) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
        function put(file, line, i) {
          const fd = fs.openSync(file, 'a');
          const cut = 1 + (i * 7919) % (line.length - 1);
          fs.writeSync(fd, line.slice(0, cut));
          if (i % 3 === 0) pause(1);
          fs.writeSync(fd, line.slice(cut));
          fs.closeSync(fd);
        }
        for (let i = 0; i < 600; i++) {
          const ts = H - 300 + i;
          for (let gpu = 0; gpu < 2; gpu++) {
            const util = (ts * 7 + gpu) % 101;
            put(path.join(dir, 'gpu_util', hour(ts) + '.jsonl'),
              '{"ts":' + py(ts) + ',"node":"10.0.0.1","gpu":' + gpu + ',"util":' + util + ',"mem_mb":' + (ts % 1000) * 10 + ',"power_w":' + (gpu + 100) + '}\\n', i);
          }
          if (i % 50 === 0) {
            put(path.join(dir, 'metrics.jsonl'), JSON.stringify({ ts, step_key: 'rollout/step', step: i / 50, metrics: { ['k/' + (i / 50 % 4)]: i } }) + '\\n', i);
            put(path.join(dir, 'phases', hour(ts) + '.jsonl'), '{"name":"train","t0":' + py(ts) + ',"t1":-1.0,"node":"10.0.0.1","gpus":[0],"rank":0,"role":"train"}\\n', i);
          }
          if (i % 50 === 49) {
            const t0 = ts - 49;
            put(path.join(dir, 'phases', hour(ts) + '.jsonl'), '{"name":"train","t0":' + py(t0) + ',"t1":' + py(ts) + ',"node":"10.0.0.1","gpus":[0],"rank":0,"role":"train"}\\n', i);
          }
          if (i % 20 === 0) pause(2);
        }
      `;
      const child = spawn(process.execPath, ['-e', writer], { stdio: ['ignore', 'inherit', 'inherit'] });
      let done = false;
      const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => { done = true; resolve(code); }));
      const store = TelemetryStore.open(d);
      let rounds = 0;
      const check = (): void => {
        const rows = gpuRows(store);
        const seen = new Set<string>();
        for (const [ts, lane, util, mem, power] of rows) {
          const gpu = Number(lane.split(':')[1]);
          assert.equal(lane.split(':')[0], '10.0.0.1');
          assert.equal(util, (ts * 7 + gpu) % 101, `torn row at ${ts}`);
          assert.equal(mem, (ts % 1000) * 10);
          assert.equal(power, gpu + 100);
          const k = `${ts}:${gpu}`;
          assert.ok(!seen.has(k), `duplicated row ${k}`);
          seen.add(k);
        }
        const steps = store.metricsRecords().map((r) => r.step);
        assert.deepEqual(steps, steps.map((_, i) => i), 'metrics in order, none torn or doubled');
        assert.deepEqual(store.warnings(), []);
      };
      while (!done) {
        store.follow();
        check();
        rounds++;
        await new Promise((r) => setTimeout(r, 3));
      }
      assert.equal(await exited, 0);
      store.follow();
      check();
      assert.ok(rounds > 3, `the store followed while the writer wrote (${rounds} rounds)`);
      const cold = TelemetryStore.open(d);
      assert.equal(gpuRows(store).length, 1200);
      assert.deepEqual(gpuRows(store), gpuRows(cold));
      assert.deepEqual(store.metricsRecords(), cold.metricsRecords());
      assert.deepEqual(store.phaseEvents(), cold.phaseEvents());
      assert.deepEqual(store.timeRange(), cold.timeRange());
      assert.deepEqual(store.timeRange(), [H14 - 300, H14 + 299]);
      assert.deepEqual(store.laneIndex(), cold.laneIndex());
      assert.deepEqual(store.metricKeys(), cold.metricKeys());
    } finally {
      rmSync(d, { recursive: true, force: true });
    }
  });
});

describe('engine_series read ahead for several windows at once', () => {
  for (const parseWorkers of [0, 1]) {
    test(`each hour is read once for the union of the metrics asked of it (${parseWorkers} parse workers)`, () => {
      const d = mkdtempSync(join(tmpdir(), 'rlsight-readahead-'));
      try {
        mkdirSync(join(d, 'engine_series'), { recursive: true });
        const hours = [['19700112_13', H13], ['19700112_14', H14], ['19700112_15', H15]] as const;
        for (const [key, base] of hours) {
          let eng = '';
          for (let t = 0; t < 10; t++) {
            for (const [metric, value] of [['sglang_num_running_reqs', t], ['sglang_token_usage', t / 10], ['sglang_num_requests_total', base + t]] as const) {
              eng += `{"ts":${pyFloat(base + t)},"addr":"http://10.0.0.1:15000","metric":"${metric}","labels":{},"value":${pyFloat(value)}}\n`;
            }
          }
          writeFileSync(join(d, 'engine_series', `${key}.jsonl`), eng);
        }
        const store = TelemetryStore.open(d, { parseWorkers, parallelFromBytes: 0 });
        const whole = TelemetryStore.open(d, { parseWorkers: 0 });
        try {
          if (parseWorkers) assert.equal(store.parseWorkersReady(), 1);
          store.engineSeriesReadAhead([
            { t0: null, t1: null, metrics: ['sglang_num_running_reqs'] },
            { t0: H15, t1: null, metrics: ['sglang_num_requests_total'] },
          ]);
          assert.deepEqual(store.partitions.engine_series.cachedKeys().sort(), [
            '19700112_13\u0000sglang_num_running_reqs',
            '19700112_14\u0000sglang_num_running_reqs',
            '19700112_15\u0000sglang_num_requests_total\nsglang_num_running_reqs',
          ]);
          const fills = store.partitions.engine_series.fills;
          const rows = (s: TelemetryStore, t0: number | null, metric: string): string[] =>
            s.engineSeriesBlocks(t0, null, [metric]).flatMap((b) =>
              Array.from({ length: b.length }, (_, i) => [b.ts[i], s.engineSeries.key(b.series[i]).metric, b.value[i]] as const)
                .filter(([, m]) => m === metric)
                .map((r) => r.join(' ')),
            );
          assert.deepEqual(rows(store, null, 'sglang_num_running_reqs'), rows(whole, null, 'sglang_num_running_reqs'));
          assert.equal(rows(store, null, 'sglang_num_running_reqs').length, 30);
          assert.deepEqual(rows(store, H15, 'sglang_num_requests_total'), rows(whole, H15, 'sglang_num_requests_total'));
          assert.equal(rows(store, H15, 'sglang_num_requests_total').length, 10);
          assert.equal(store.partitions.engine_series.fills, fills, 'the reads that follow parse nothing');
          // A metric nobody asked for is still read when asked.
          assert.equal(rows(store, null, 'sglang_token_usage').length, 30);
        } finally {
          store.close();
        }
      } finally {
        rmSync(d, { recursive: true, force: true });
      }
    });
  }
});
