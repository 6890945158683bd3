// The telemetry Parquet export read back by our own reader (hyparquet) and by DuckDB: equal rows and values.
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { DuckDBInstance } from '@duckdb/node-api';
import { parquetMetadata, parquetReadObjects } from 'hyparquet';
import { compressors } from 'hyparquet-compressors';
import { copyFixtureRun, type RunCopy } from '../../test/support/fixtures.ts';
import { TelemetryStore } from '../run/telemetry/store.ts';
import { writeTelemetryParquet } from './exportTelemetry.ts';

describe('rlsight export telemetry --format parquet', () => {
  let copy: RunCopy;
  let out: string;
  let written: Record<string, { files: number; rows: number }>;
  let store: TelemetryStore;
  before(async () => {
    copy = copyFixtureRun();
    out = mkdtempSync(join(tmpdir(), 'rlsight-telemetry-parquet-'));
    written = await writeTelemetryParquet(join(copy.dir, 'dashboard'), out);
    store = TelemetryStore.open(join(copy.dir, 'dashboard'), { parseWorkers: 0 });
  });
  after(() => {
    copy.dispose();
    rmSync(out, { recursive: true, force: true });
  });

  const gpuRows = () =>
    store.gpuUtilBlocks().flatMap((b) => Array.from({ length: b.length }, (_, i) => ({ ts: b.ts[i], node: store.lanes.node(b.lane[i]), gpu: store.lanes.gpu(b.lane[i]), util: b.util[i], mem_mb: b.memMb(i), power_w: b.powerW(i) })));

  test('writes Hive partitions, zstd-compressed, that hyparquet reads back row for row', async () => {
    const streams = readdirSync(out).sort();
    assert.ok(streams.includes('stream=gpu_util') && streams.includes('stream=engine_series') && streams.includes('stream=phases'), streams.join(','));
    const hours = readdirSync(join(out, 'stream=gpu_util'));
    assert.ok(hours.every((h) => /^hour=\d{8}_\d{2}$/.test(h)), hours.join(','));
    const file = join(out, 'stream=gpu_util', hours[0], 'part-0.parquet');
    const bytes = readFileSync(file);
    const buf = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength);
    const meta = parquetMetadata(buf);
    assert.ok(meta.row_groups[0].columns.every((c) => c.meta_data?.codec === 'ZSTD'));
    const rows = (await parquetReadObjects({ file: buf, compressors })) as Record<string, unknown>[];
    // that hour's rows, in file order
    const f = store.partitions.gpu_util.files().find((x) => `hour=${x.key}` === hours[0])!;
    const b = store.partitions.gpu_util.block(f);
    const want = Array.from({ length: b.length }, (_, i) => ({ ts: b.ts[i], node: store.lanes.node(b.lane[i]), gpu: store.lanes.gpu(b.lane[i]), util: b.util[i], mem_mb: b.memMb(i), power_w: b.powerW(i) }));
    assert.ok(want.length > 0);
    assert.deepEqual(rows.map((r) => ({ ...r })), want);
    assert.equal(written.gpu_util.rows, gpuRows().length);
    const phases = store.phaseEvents();
    assert.equal(written.phases.rows, phases.length);
  });

  test('DuckDB reads the same counts and values through hive partitioning', async () => {
    const db = await DuckDBInstance.create(':memory:');
    const con = await db.connect();
    try {
      const q = async (sql: string) => (await con.runAndReadAll(sql)).getRowObjectsJS();
      const glob = (s: string) => `read_parquet('${join(out, `stream=${s}`, '*', '*.parquet')}', hive_partitioning = true)`;
      const want = gpuRows();
      const [g] = await q(`SELECT count(*)::INTEGER AS n, sum(util)::DOUBLE AS util, sum(mem_mb)::DOUBLE AS mem, min(ts) AS t0, max(ts) AS t1, count(DISTINCT hour)::INTEGER AS hours FROM ${glob('gpu_util')}`);
      assert.equal(g.n, want.length);
      assert.equal(g.util, want.reduce((a, r) => a + r.util, 0));
      assert.equal(g.mem, want.reduce((a, r) => a + r.mem_mb, 0));
      assert.equal(g.t0, Math.min(...want.map((r) => r.ts)));
      assert.equal(g.t1, Math.max(...want.map((r) => r.ts)));
      assert.equal(g.hours, store.partitions.gpu_util.files().filter((f) => f.size > 0).length);
      const first = await q(`SELECT ts, node, gpu, util, mem_mb, power_w FROM ${glob('gpu_util')} ORDER BY ts, node, gpu LIMIT 5`);
      const sorted = [...want].sort((a, b) => a.ts - b.ts || (a.node < b.node ? -1 : a.node > b.node ? 1 : a.gpu - b.gpu)).slice(0, 5);
      assert.deepEqual(first, sorted);
      const engineRows = store.engineSeriesBlocks().reduce((a, b) => a + b.length, 0);
      const [e] = await q(`SELECT count(*)::INTEGER AS n, count(DISTINCT metric)::INTEGER AS metrics FROM ${glob('engine_series')}`);
      assert.equal(e.n, engineRows);
      assert.equal(e.metrics, store.engineMetricsPresent().length);
      const [p] = await q(`SELECT count(*)::INTEGER AS n FROM ${glob('phases')}`);
      assert.equal(p.n, store.phaseEvents().length);
      const [m] = await q(`SELECT count(*)::INTEGER AS n FROM ${glob('metrics')}`);
      assert.equal(m.n, store.metricsRecords().length);
    } finally {
      con.closeSync();
      db.closeSync();
    }
  });
});
