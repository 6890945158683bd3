// The parquet reader over the miles-demo token mirrors: values, and one-row reads touching one row group.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { diffJson, fixturePath, readFixtureJson } from '../../test/support/fixtures.ts';
import { gzipSync } from 'node:zlib';
import { parquetWriteBuffer } from 'hyparquet-writer';
import { ParquetError, ParquetFile } from './parquet.ts';

const MIRRORS = ['rollout_0', 'rollout_1', 'rollout_2', 'rollout_eval_0'];

/** hyparquet gives undefined for a null list; the rendering has null. */
function normalize(rows: Record<string, unknown>[]): unknown {
  return rows.map((r) => Object.fromEntries(Object.entries(r).map(([k, v]) => [k, v === undefined ? null : Array.isArray(v) || ArrayBuffer.isView(v) ? Array.from(v as ArrayLike<unknown>) : v])));
}

describe('ParquetFile', () => {
  for (const m of MIRRORS) {
    it(`decodes dashboard_columns/${m}.parquet as the reference does`, async () => {
      const decoded = readFixtureJson('miles-demo', 'decoded', 'dashboard_columns', `${m}.parquet.json`);
      const file = await ParquetFile.open(fixturePath('miles-demo', 'run', 'dashboard_columns', `${m}.parquet`), `${m}.parquet`);
      try {
        assert.equal(file.numRows, decoded.parquet.num_rows);
        assert.deepEqual(file.rowGroups.map((g) => g.rowEnd - g.rowStart), decoded.parquet.row_group_rows);
        const rows = await file.readRows(0, file.numRows);
        assert.equal(diffJson(normalize(rows), decoded.rows), null);
      } finally {
        await file.close();
      }
    });
  }

  it('finds and reads one row without touching the other row groups', async () => {
    const file = await ParquetFile.open(fixturePath('miles-demo', 'run', 'dashboard_columns', 'rollout_1.parquet'), 'rollout_1.parquet');
    try {
      const target = 32 + 13; // row 13 lies in row group 1 (8 rows per group)
      const rows = await file.findRows('sample_index', target);
      assert.deepEqual(rows, [13]);
      const [row] = await file.readRows(13, 14);
      assert.equal(row.sample_index, target);
      const group = file.metadata.row_groups[1];
      const lo = Math.min(...group.columns.map((c) => Number(c.meta_data!.dictionary_page_offset ?? c.meta_data!.data_page_offset)));
      const hi = Math.max(...group.columns.map((c) => Number(c.meta_data!.data_page_offset) + Number(c.meta_data!.total_compressed_size)));
      assert.ok(file.rangesRead.length > 0);
      for (const [s, e] of file.rangesRead) assert.ok(s >= lo && e <= hi, `read [${s}, ${e}) outside row group 1 [${lo}, ${hi})`);
      assert.deepEqual(await file.findRows('sample_index', 999), []);
    } finally {
      await file.close();
    }
  });

  it('reads columns in a codec hyparquet lacks (gzip here) through the extra decoders it loads for them', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rlsight-pq-'));
    try {
      const ids = Array.from({ length: 300 }, (_, i) => (i * 7919) % 1000);
      const buffer = parquetWriteBuffer({
        columnData: [
          { name: 'sample_index', data: Int32Array.from(ids, (_, i) => i), type: 'INT32' },
          { name: 'id', data: Int32Array.from(ids), type: 'INT32', codec: 'GZIP' },
        ],
        compressors: { GZIP: (bytes: Uint8Array) => new Uint8Array(gzipSync(bytes)) },
      });
      writeFileSync(join(dir, 'gzip.parquet'), new Uint8Array(buffer));
      const file = await ParquetFile.open(join(dir, 'gzip.parquet'), 'gzip.parquet');
      try {
        const rows = await file.readRows(0, file.numRows);
        assert.deepEqual(rows.map((r) => r.id), ids);
      } finally {
        await file.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('names the file when it is not parquet', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rlsight-pq-'));
    try {
      writeFileSync(join(dir, 'bad.parquet'), 'not parquet at all');
      await assert.rejects(ParquetFile.open(join(dir, 'bad.parquet'), 'bad.parquet'), (e: unknown) => e instanceof ParquetError && /bad\.parquet/.test((e as Error).message));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
