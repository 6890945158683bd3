import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { appendFileSync, mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TelemetryStore } from './store.ts';
import { nodeIo } from './io.ts';
import { PartitionCache } from './partitionCache.ts';
import { ParsePool } from './parsePool.ts';
import { WarmUp } from './warmUp.ts';
import type { PartitionReader } from './partitionReader.ts';
import type { PartitionedStream } from './records.ts';
import { foreground } from '../foreground.ts';

const H = 997200; // 1970-01-12 13:00 UTC
const gpu = (ts: number, g: number, util: number): string => `{"ts":${ts}.0,"node":"10.0.0.1","gpu":${g},"util":${util},"mem_mb":${1000 + g},"power_w":${200 + util}}\n`;
const engine = (ts: number, addr: string, metric: string, v: number): string => `{"ts":${ts}.0,"addr":"${addr}","metric":"${metric}","labels":{"dp_rank":"0"},"value":${v}}\n`;
const phase = (t0: number, t1: number, g: number): string => `{"name":"actor_train","t0":${t0}.0,"t1":${t1}.0,"node":"10.0.0.1","gpus":[${g}],"rank":${g},"role":"train"}\n`;

function rowsOf(store: TelemetryStore): unknown {
  const gpuRows = store.gpuUtilBlocks().flatMap((b) => Array.from({ length: b.length }, (_, i) => [b.ts[i], store.lanes.key(b.lane[i]), b.util[i], b.memMb(i), b.powerW(i)]));
  const engineRows = store.engineSeriesBlocks().flatMap((b) => Array.from({ length: b.length }, (_, i) => [b.ts[i], store.engineSeries.key(b.series[i]).metric, store.engineSeries.key(b.series[i]).labelsJson, b.value[i]]));
  return { gpuRows, engineRows, phases: store.phaseEvents(), warnings: store.warnings().map((w) => `${w.file}:${w.line}`) };
}

function run(): { dir: string; cache: string; dispose(): void } {
  const root = mkdtempSync(join(tmpdir(), 'rlsight-pcache-'));
  const dir = join(root, 'run', 'dashboard');
  for (const s of ['gpu_util', 'engine_series', 'phases']) mkdirSync(join(dir, s), { recursive: true });
  let g = '';
  let e = '';
  for (let t = 0; t < 50; t++) {
    for (let k = 0; k < 4; k++) g += gpu(H + t, k, (t * 7 + k) % 101);
    e += engine(H + 2 * t, 'http://a:1', 'sglang_num_running_reqs', t) + engine(H + 2 * t, 'http://a:1', 'sglang_token_usage', t / 100);
  }
  writeFileSync(join(dir, 'gpu_util', '19700112_13.jsonl'), g + 'not json\n');
  writeFileSync(join(dir, 'engine_series', '19700112_13.jsonl'), e);
  writeFileSync(join(dir, 'phases', '19700112_13.jsonl'), phase(H, H + 10, 0) + phase(H + 3, H + 30, 1));
  return { dir, cache: join(root, 'cache'), dispose: () => rmSync(root, { recursive: true, force: true }) };
}

const open = (dir: string, cacheDir?: string): TelemetryStore => TelemetryStore.open(dir, { cacheDir, parseWorkers: 0 });
const reads = (s: TelemetryStore): number => s.partitions.gpu_util.rowsParsed + s.partitions.engine_series.rowsParsed + s.partitions.phases.rowsParsed;
const cacheHits = (s: TelemetryStore): number => s.partitions.gpu_util.cacheFills + s.partitions.engine_series.cacheFills + s.partitions.phases.cacheFills;

describe('the partition cache', () => {
  test('a second process reads the persisted columns, parses nothing and answers the same (warnings included)', () => {
    const r = run();
    try {
      const plain = rowsOf(open(r.dir));
      const first = open(r.dir, r.cache);
      assert.deepEqual(rowsOf(first), plain);
      assert.equal(cacheHits(first), 0);
      assert.ok(readdirSync(r.cache, { recursive: true }).some((p) => String(p).endsWith('.rlc')));
      const second = open(r.dir, r.cache);
      assert.deepEqual(rowsOf(second), plain);
      assert.equal(cacheHits(second), 3);
      assert.equal(reads(second), 0);
    } finally {
      r.dispose();
    }
  });

  test("a fleet answer's hours are read first on the streams it needs (GPU samples and phases), ahead of their engine series", () => {
    const r = run();
    try {
      // a second hour of each stream
      let g = '';
      let e = '';
      for (let t = 0; t < 50; t++) {
        for (let k = 0; k < 4; k++) g += gpu(H + 3600 + t, k, 50);
        e += engine(H + 3600 + 2 * t, 'http://a:1', 'sglang_num_running_reqs', t);
      }
      writeFileSync(join(r.dir, 'gpu_util', '19700112_14.jsonl'), g);
      writeFileSync(join(r.dir, 'engine_series', '19700112_14.jsonl'), e);
      writeFileSync(join(r.dir, 'phases', '19700112_14.jsonl'), phase(H + 3600, H + 3610, 0));
      const store = TelemetryStore.open(r.dir, { cacheDir: r.cache, parseWorkers: 0, partialFromBytes: 0 });
      const fleet = ['gpu_util', 'phases'] as const;
      assert.deepEqual(store.foldedView(null, null, [...fleet])?.coverage.hours_done, 0);
      // one file a step: the two hours' GPU samples and phases first, then the engine series
      for (let i = 0; i < 4; i++) store.warmUpStep();
      assert.equal(store.foldedView(null, null, [...fleet]), null, "the fleet's hours are all read");
      assert.equal(store.warmUpProgress()?.running, true, 'the engine series are still to read');
      while (store.warmUpStep());
      assert.equal(store.warmUpProgress()?.running, false);
    } finally {
      r.dispose();
    }
  });

  test('the parse threads boot ahead of the first read while hours remain to parse, not over a filled cache', async () => {
    const r = run();
    const stores: TelemetryStore[] = [];
    try {
      const opts = { cacheDir: r.cache, parseWorkers: 1, parallelFromBytes: 0 };
      const cold = TelemetryStore.open(r.dir, opts);
      stores.push(cold);
      while (cold.warmUpStep()) await new Promise((resolve) => setTimeout(resolve, 5));
      const empty = TelemetryStore.open(r.dir, { ...opts, cacheDir: join(r.cache, 'other') });
      const filled = TelemetryStore.open(r.dir, opts);
      stores.push(empty, filled);
      assert.equal(filled.warmUpProgress()?.running, false);
      // at the latest a second after opening (sooner once a first request is answered)
      await new Promise((resolve) => setTimeout(resolve, 1200));
      assert.equal(empty.parseThreadsStarted, true, 'hours to parse: booted without a read');
      assert.equal(filled.parseThreadsStarted, false, 'nothing to parse: no thread spent');
    } finally {
      for (const s of stores) s.close();
      r.dispose();
    }
  });

  test('the parse threads never boot ahead while a request is being answered, nor for a warm-up with nothing handed out', async () => {
    const r = run();
    const store = TelemetryStore.open(r.dir, { cacheDir: r.cache, parseWorkers: 1, parallelFromBytes: 0 });
    // a request asked at once, still being answered past the latest ahead-of-need boot
    const answered = foreground.begin();
    try {
      // the warm-up, deferring to it, takes in what its threads finished: none were handed anything
      store.warmUpCollect();
      assert.equal(store.parseThreadsStarted, false, 'collecting nothing boots no thread');
      await new Promise((resolve) => setTimeout(resolve, 1200));
      assert.equal(store.parseThreadsStarted, false, 'the request keeps the cores');
      answered();
      await new Promise((resolve) => setImmediate(resolve));
      assert.equal(store.parseThreadsStarted, false, 'not in the moment after it: the next request may be on its way');
      await new Promise((resolve) => setTimeout(resolve, 300));
      assert.equal(store.parseThreadsStarted, true, 'booted once none has been asked for a while');
    } finally {
      answered();
      store.close();
      r.dispose();
    }
  });

  test("a request's read that finds every thread held by a paused warm-up parse has it go on, not wait out its pause", async () => {
    const r = run();
    const store = TelemetryStore.open(r.dir, { cacheDir: r.cache, parseWorkers: 1, parallelFromBytes: 0 });
    const answering = foreground.begin();
    try {
      assert.equal(store.parseWorkersReady(), 1);
      // the warm-up hands the only thread a parse, which pauses at once: a request is in flight
      assert.equal(store.warmUpStep(1), true);
      // as the served warm-up does while requests are answered: what its threads finished is taken in
      const collecting = setInterval(() => store.warmUpCollect(), 20);
      const started = performance.now();
      await store.readOnThreads('gpu_util', null, null, ['10.0.0.1:0']).finally(() => clearInterval(collecting));
      const ms = performance.now() - started;
      // a paused parse goes on after 5 s at the latest; the read waited for none of that
      assert.ok(ms < 2_500, `the read waited ${Math.round(ms)} ms for the thread`);
      assert.ok(store.partitions.gpu_util.workerPieces > 0, 'read on the thread');
    } finally {
      answering();
      store.close();
      r.dispose();
    }
  });

  test('the warm-up runs a second parse beside the first only while the process has room for it', () => {
    const r = run();
    const pool = new ParsePool(2);
    try {
      assert.equal(pool.waitReady(), 2);
      const store = TelemetryStore.open(r.dir, { parseWorkers: 0 });
      const readers = store.partitions as unknown as Record<PartitionedStream, PartitionReader<any>>;
      for (const [resident, busy] of [
        [64 * 2 ** 20, 2],
        [600 * 2 ** 20, 1],
      ]) {
        const warm = new WarmUp(readers, new PartitionCache(join(r.cache, String(resident)), r.dir), nodeIo, () => pool, () => {}, () => false, () => resident);
        assert.equal(warm.step(), true);
        // a thread holds its job until the warm-up collects it
        assert.equal(pool.idle() < 0 ? 2 : 1, busy, `${resident / 2 ** 20} MiB resident`);
        while (warm.step()) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 5);
        assert.equal(warm.progress().running, false, 'and it still finishes');
      }
    } finally {
      pool.close();
      r.dispose();
    }
  });

  test('engine metrics are read from the persisted metric groups as slices, in file order', () => {
    const r = run();
    try {
      rowsOf(open(r.dir, r.cache));
      const viewRows = (s: TelemetryStore, metrics: string[]): unknown[] =>
        s.engineSeriesBlocks(null, null, metrics).flatMap((b) => Array.from({ length: b.length }, (_, i) => [b.ts[i], s.engineSeries.key(b.series[i]).metric, b.value[i]]).filter((x) => metrics.includes(x[1] as string)));
      for (const metrics of [['sglang_token_usage'], ['sglang_num_running_reqs', 'sglang_token_usage'], ['absent']]) {
        const cached = open(r.dir, r.cache);
        assert.deepEqual(viewRows(cached, metrics), viewRows(open(r.dir), metrics));
        assert.equal(cached.partitions.engine_series.cacheFills, 1);
        assert.equal(cached.partitions.engine_series.rowsParsed, 0);
      }
    } finally {
      r.dispose();
    }
  });

  test('a partition that grew is extended from the persisted offset, and the extension is persisted', () => {
    const r = run();
    try {
      rowsOf(open(r.dir, r.cache));
      appendFileSync(join(r.dir, 'gpu_util', '19700112_13.jsonl'), gpu(H + 60, 0, 42) + gpu(H + 60, 1, 43) + '{"ts":' /* a torn line stays unread */);
      appendFileSync(join(r.dir, 'engine_series', '19700112_13.jsonl'), engine(H + 200, 'http://a:1', 'sglang_num_running_reqs', 9));
      const grown = open(r.dir, r.cache);
      const answer = rowsOf(grown);
      assert.deepEqual(answer, rowsOf(open(r.dir)));
      assert.equal(cacheHits(grown), 3);
      // only the appended rows were parsed
      assert.equal(grown.partitions.gpu_util.rowsParsed, 2);
      assert.equal(grown.partitions.engine_series.rowsParsed, 1);
      const third = open(r.dir, r.cache);
      assert.deepEqual(rowsOf(third), answer);
      assert.equal(reads(third), 0);
    } finally {
      r.dispose();
    }
  });

  test('a replaced or shortened partition is parsed again, never served from the old columns', () => {
    const r = run();
    try {
      rowsOf(open(r.dir, r.cache));
      // replaced: same size, new inode, other values
      const path = join(r.dir, 'gpu_util', '19700112_13.jsonl');
      let text = '';
      for (let t = 0; t < 50; t++) for (let k = 0; k < 4; k++) text += gpu(H + t, k, (t * 7 + k + 1) % 101);
      writeFileSync(path + '.new', text + 'not json\n');
      renameSync(path + '.new', path);
      const replaced = open(r.dir, r.cache);
      assert.deepEqual(rowsOf(replaced), rowsOf(open(r.dir)));
      assert.equal(replaced.partitions.gpu_util.cacheFills, 0);
      assert.equal(replaced.partitions.gpu_util.rowsParsed, 200);
      // shortened in place
      writeFileSync(join(r.dir, 'phases', '19700112_13.jsonl'), phase(H, H + 10, 0));
      const shorter = open(r.dir, r.cache);
      assert.deepEqual(shorter.phaseEvents().length, 1);
      assert.equal(shorter.partitions.phases.cacheFills, 0);
      // and the rebuilt caches serve the next process
      assert.equal(cacheHits(open(r.dir, r.cache)), 0);
      const next = open(r.dir, r.cache);
      rowsOf(next);
      assert.equal(cacheHits(next), 3);
    } finally {
      r.dispose();
    }
  });

  test('a damaged cache file is ignored', () => {
    const r = run();
    try {
      const want = rowsOf(open(r.dir, r.cache));
      for (const p of readdirSync(r.cache, { recursive: true })) if (String(p).endsWith('.rlc')) writeFileSync(join(r.cache, String(p)), 'RLC1garbage');
      const s = open(r.dir, r.cache);
      assert.deepEqual(rowsOf(s), want);
      assert.equal(cacheHits(s), 0);
    } finally {
      r.dispose();
    }
  });
});

describe('the background warm-up', () => {
  for (const parseWorkers of [0, 1]) {
    test(`persists every hour newest first, reporting progress (${parseWorkers} parse workers)`, () => {
      const r = run();
      try {
        // a second hour, so there is an order
        const H2 = H + 3600;
        writeFileSync(join(r.dir, 'gpu_util', '19700112_14.jsonl'), gpu(H2, 0, 5) + gpu(H2, 1, 6));
        const store = TelemetryStore.open(r.dir, { cacheDir: r.cache, parseWorkers, parallelFromBytes: 0 });
        store.parseWorkersReady();
        assert.deepEqual(store.warmUpProgress(), { hoursDone: 0, hoursTotal: 2, running: true });
        for (let i = 0; i < 10_000 && store.warmUpStep(); i++) {
          if (parseWorkers > 0) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 5);
        }
        assert.deepEqual(store.warmUpProgress(), { hoursDone: 2, hoursTotal: 2, running: false });
        // nothing stayed resident on the worker path; everything is persisted
        if (parseWorkers > 0) assert.equal(store.partitions.gpu_util.cachedKeys().length, 0);
        const next = open(r.dir, r.cache);
        assert.deepEqual(rowsOf(next), rowsOf(open(r.dir)));
        assert.equal(reads(next), 0);
        assert.equal(cacheHits(next), 4);
        store.close();
      } finally {
        r.dispose();
      }
    });
  }
});
