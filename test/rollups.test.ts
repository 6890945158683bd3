import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { appendFileSync, mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fleet } from '../src/queries/fleet.ts';
import { heatmap } from '../src/queries/heatmap.ts';
import { outliers } from '../src/queries/outliers.ts';
import { TelemetryStore } from '../src/run/telemetry/store.ts';
import { LANE_CATALOG_FILE, laneCatalogJson } from '../src/formats/dashboard/index.ts';

const H = 997200; // 1970-01-12 13:00 UTC
const HOURS = ['19700112_13', '19700112_14', '19700112_15'];
const line = (ts: number, node: string, g: number, util: number): string =>
  `{"ts":${ts},"node":"${node}","gpu":${g},"util":${util},"mem_mb":${1000 + g * 10 + (util % 7)},"power_w":${150 + util}}\n`;

/** Three hours of 2 nodes × 4 GPUs sampled every 2 s; node B posts its samples a few seconds late (out of time order). */
function hourText(h: number, fromS = 0, toS = 3600, salt = 0): string {
  let out = '';
  let late = '';
  for (let s = fromS; s < toS; s += 2) {
    const ts = H + h * 3600 + s + 0.25;
    for (let g = 0; g < 4; g++) out += line(ts, '10.0.0.1', g, (s * 7 + g * 13 + h + salt) % 101);
    for (let g = 0; g < 4; g++) late += line(ts, '10.0.0.2', g, (s * 3 + g * 29 + h * 5) % 101);
    if (s % 12 === 10) {
      out += late;
      late = '';
    }
  }
  return out + late;
}

function makeRun(): { dir: string; cache: string; dispose(): void } {
  const root = mkdtempSync(join(tmpdir(), 'rlsight-rollup-'));
  const dir = join(root, 'run', 'dashboard');
  mkdirSync(join(dir, 'gpu_util'), { recursive: true });
  HOURS.forEach((k, h) => writeFileSync(join(dir, 'gpu_util', `${k}.jsonl`), hourText(h)));
  return { dir, cache: join(root, 'cache'), dispose: () => rmSync(root, { recursive: true, force: true }) };
}

const open = (dir: string, cacheDir?: string): TelemetryStore => TelemetryStore.open(dir, { cacheDir, parseWorkers: 0 });

/** Every whole-window answer the rollups serve, over windows that cut columns and hours. */
function answers(s: TelemetryStore): unknown {
  const [r0, r1] = s.timeRange()!;
  const windows: [number | null, number | null][] = [[null, null], [r0 + 1234.5, r1 - 777.25], [r0 + 3599, r0 + 3601 + 60]];
  return windows.map(([t0, t1]) => ({
    fleet: fleet(s, { t0, t1, xBuckets: 97 }),
    heat: ['util', 'mem_mb', 'power_w'].map((metric) => Buffer.from(heatmap(s, { metric, t0, t1, xBuckets: 113 }).values).toString('base64')),
    low: outliers(s, { criterion: 'lowest_util', t0, t1 }),
  }));
}

/** The same answers from raw rows only (a store whose hours have no rollups: buckets too narrow for cells are not used here, so read every row). */
function rawAnswers(dir: string): unknown {
  const s = open(dir);
  // an hour iterator without cells: the queries then read every row of every hour
  const hoursWithoutCells = function* (t0?: number | null, t1?: number | null) {
    for (const h of s.gpuUtilHours(t0, t1)) yield { ...h, cells: null };
  };
  return answers(Object.assign(Object.create(s), { gpuUtilHours: hoursWithoutCells }));
}

describe('gpu_util rollups', () => {
  test('answers from rollup cells equal answers from every raw row, with and without a cache directory', () => {
    const r = makeRun();
    try {
      const want = rawAnswers(r.dir);
      const memoryOnly = open(r.dir);
      assert.deepEqual(answers(memoryOnly), want);
      assert.equal(memoryOnly.gpuRollupStats().built, 3);
      const first = open(r.dir, r.cache);
      assert.deepEqual(answers(first), want);
      assert.ok(readdirSync(join(r.cache), { recursive: true }).some((p) => String(p).endsWith('.cells.rlc')));
      // a second process answers from the persisted rollups and the column slices alone
      const second = open(r.dir, r.cache);
      assert.deepEqual(answers(second), want);
      assert.equal(second.gpuRollupStats().built, 0);
      assert.equal(second.gpuRollupStats().loaded, 3);
      assert.equal(second.partitions.gpu_util.rowsParsed, 0);
    } finally {
      r.dispose();
    }
  });

  test('hours rolled up from rows are parsed on the parse threads too, with the same answers', () => {
    const r = makeRun();
    // with a lane catalog (as every recorded run has) no hour is read just to list the lanes
    const lanes = new Map(['10.0.0.1', '10.0.0.2'].flatMap((n) => [0, 1, 2, 3].map((g) => [`${n}:${g}`, { ranks: new Set<number>(), engineAddrs: new Set<string>(), roles: new Set(['train']) }] as const)));
    writeFileSync(join(r.dir, LANE_CATALOG_FILE), laneCatalogJson(lanes));
    const parallel = TelemetryStore.open(r.dir, { cacheDir: r.cache, parseWorkers: 1, parallelFromBytes: 0 });
    try {
      assert.equal(parallel.parseWorkersReady(), 1);
      assert.deepEqual(answers(parallel), rawAnswers(r.dir));
      assert.ok(parallel.partitions.gpu_util.workerFills > 0, 'a parse thread read hours of the whole-run pass');
    } finally {
      parallel.close();
      r.dispose();
    }
  });

  test('a grown hour extends its persisted rollup with the new rows only; a replaced one is rebuilt', () => {
    const r = makeRun();
    try {
      const newest = join(r.dir, 'gpu_util', `${HOURS[2]}.jsonl`);
      writeFileSync(newest, hourText(2, 0, 1800));
      const first = open(r.dir, r.cache);
      answers(first);
      appendFileSync(newest, hourText(2, 1800, 3600) + '{"ts":');
      const grown = open(r.dir, r.cache);
      const cache = (grown.partitions.gpu_util as unknown as { diskCache: { rollupRowsFolded: number; rollupWrites: number } }).diskCache;
      const got = answers(grown);
      // only the second half of the newest hour was folded in, and the answers are those of the whole file
      assert.equal(cache.rollupRowsFolded, (1800 / 2) * 8);
      assert.deepEqual(got, rawAnswers(r.dir));
      // a replaced file (new inode, other values) is rolled up again from its own rows
      const tmp = `${newest}.new`;
      writeFileSync(tmp, hourText(2, 0, 3600, 11));
      renameSync(tmp, newest);
      const replaced = open(r.dir, r.cache);
      const replacedCache = (replaced.partitions.gpu_util as unknown as { diskCache: { rollupRowsFolded: number } }).diskCache;
      assert.deepEqual(answers(replaced), rawAnswers(r.dir));
      assert.equal(replacedCache.rollupRowsFolded, 3600 / 2 * 8);
    } finally {
      r.dispose();
    }
  });

  test('a live store sees rows appended to a rolled-up hour (follow) in its next answer', () => {
    const r = makeRun();
    try {
      const newest = join(r.dir, 'gpu_util', `${HOURS[2]}.jsonl`);
      writeFileSync(newest, hourText(2, 0, 1200));
      const live = open(r.dir, r.cache);
      answers(live);
      appendFileSync(newest, hourText(2, 1200, 2400));
      live.follow();
      assert.deepEqual(answers(live), rawAnswers(r.dir));
    } finally {
      r.dispose();
    }
  });

  test('a damaged persisted rollup reads as absent and is rebuilt', () => {
    const r = makeRun();
    try {
      const want = answers(open(r.dir, r.cache));
      const files = readdirSync(r.cache, { recursive: true }).map(String).filter((p) => p.endsWith('.cells.rlc'));
      assert.equal(files.length, 3);
      for (const f of files) writeFileSync(join(r.cache, f), 'RLC1 not a frame');
      const again = open(r.dir, r.cache);
      assert.deepEqual(answers(again), want);
      assert.equal(again.gpuRollupStats().loaded, 0);
    } finally {
      r.dispose();
    }
  });
});

test('the background warm-up rolls up hours whose columns were persisted without a rollup', () => {
  const r = makeRun();
  try {
    const want = answers(open(r.dir, r.cache));
    const rollups = readdirSync(r.cache, { recursive: true }).map(String).filter((p) => p.endsWith('.cells.rlc'));
    assert.equal(rollups.length, 3);
    for (const f of rollups) rmSync(join(r.cache, f));
    const s = open(r.dir, r.cache);
    assert.equal(s.warmUpProgress()?.running, true);
    while (s.warmUpStep());
    assert.equal(readdirSync(r.cache, { recursive: true }).map(String).filter((p) => p.endsWith('.cells.rlc')).length, 3);
    const after = open(r.dir, r.cache);
    assert.deepEqual(answers(after), want);
    assert.deepEqual(after.gpuRollupStats(), { built: 0, loaded: 3 });
  } finally {
    r.dispose();
  }
});
