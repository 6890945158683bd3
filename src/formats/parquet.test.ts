// The parquet reader over the miles-demo token mirrors: values, and one-row reads touching one row group.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { diffJson, fixturePath, readFixtureJson } from '../../test/support/fixtures.ts';
import { gzipSync } from 'node:zlib';
import { parquetMetadata, parquetMetadataAsync, parquetReadObjects } from 'hyparquet';
import { parquetWriteBuffer } from 'hyparquet-writer';
import { DuckDBInstance } from '@duckdb/node-api';
import { ParquetError, ParquetFile } from './parquet.ts';
import { zstdCompressor } from './zstd.ts';

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

  it('reads a zstd file (what polars writes) through zstd\'s decoder alone, and a file of another foreign codec through every codec\'s', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rlsight-pq-'));
    try {
      const zstd = await zstdCompressor();
      const ids = Array.from({ length: 300 }, (_, i) => (i * 7919) % 1000);
      const tokens = ids.map((id) => Array.from({ length: id % 13 }, (_, k) => id * 100 + k));
      const write = (name: string, codecs: string[]) => {
        const buffer = parquetWriteBuffer({
          columnData: [
            { name: 'sample_index', data: Int32Array.from(ids, (_, i) => i), type: 'INT32', codec: codecs[0] },
            { name: 'tokens', data: tokens, codec: codecs[1] },
          ] as Parameters<typeof parquetWriteBuffer>[0]['columnData'],
          compressors: { ZSTD: zstd, GZIP: (bytes: Uint8Array) => new Uint8Array(gzipSync(bytes)) },
          rowGroupSize: 64,
        });
        writeFileSync(join(dir, name), new Uint8Array(buffer));
        return join(dir, name);
      };
      for (const [name, codecs, decoders] of [
        ['zstd.parquet', ['ZSTD', 'ZSTD'], 'zstd'],
        ['mixed.parquet', ['ZSTD', 'GZIP'], 'all'],
        ['snappy.parquet', ['SNAPPY', 'UNCOMPRESSED'], 'none'],
      ] as const) {
        const file = await ParquetFile.open(write(name, [...codecs]), name);
        try {
          assert.equal(file.extraDecoders, decoders, name);
          const rows = await file.readRows(0, file.numRows);
          assert.deepEqual(rows.map((r) => r.sample_index), ids.map((_, i) => i), name);
          assert.deepEqual(rows.map((r) => r.tokens), tokens, name);
        } finally {
          await file.close();
        }
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('decodes row groups one at a time into what hyparquet makes of the whole footer, and reads and finds rows alike', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rlsight-pq-'));
    try {
      // 40 row groups of 7 rows (more than 15: the row group list's count is a varint of its own), shuffled
      // sample indices with statistics, 64-bit and list columns, and a key-value entry after the row groups.
      const n = 280;
      // Each group holds 7 consecutive indices (so its statistics exclude the others), groups out of order.
      const samples = Array.from({ length: n }, (_, i) => 7 * ((Math.floor(i / 7) * 13) % 40) + ((i * 3) % 7));
      const schema = [
        { name: 'root', num_children: 4 },
        { name: 'sample_index', type: 'INT32', repetition_type: 'OPTIONAL' },
        { name: 'big', type: 'INT64', repetition_type: 'OPTIONAL' },
        { name: 'tokens', repetition_type: 'OPTIONAL', converted_type: 'LIST', num_children: 1 },
        { name: 'list', repetition_type: 'REPEATED', num_children: 1 },
        { name: 'element', type: 'INT32', repetition_type: 'OPTIONAL' },
        { name: 'label', type: 'BYTE_ARRAY', repetition_type: 'OPTIONAL', converted_type: 'UTF8' },
      ];
      const buffer = parquetWriteBuffer({
        columnData: [
          { name: 'sample_index', data: samples },
          { name: 'big', data: samples.map((s) => BigInt(s) * 3_000_000_000n) },
          { name: 'tokens', data: samples.map((s) => Array.from({ length: s % 9 }, (_, k) => s * 10 + k)) },
          { name: 'label', data: samples.map((s) => `s${s}`) },
        ],
        schema: schema as unknown as Parameters<typeof parquetWriteBuffer>[0]['schema'],
        rowGroupSize: 7,
        kvMetadata: [{ key: 'writer', value: 'test' }],
      });
      const path = join(dir, 'groups.parquet');
      writeFileSync(path, new Uint8Array(buffer));
      const whole = await parquetMetadataAsync(new Uint8Array(buffer).buffer);
      const file = await ParquetFile.open(path, 'groups.parquet');
      try {
        assert.equal(file.rowGroups.length, 40);
        assert.equal(file.numRows, n);
        assert.deepEqual(file.columnNames, ['sample_index', 'big', 'tokens', 'label']);
        const all = await parquetReadObjects({ file: new Uint8Array(buffer).buffer, metadata: whole });
        // Ranges within a group, across groups, at the ends, past the end and empty.
        for (const [a, b] of [[0, 1], [13, 14], [5, 30], [0, n], [270, 290], [300, 310], [9, 9]]) {
          assert.deepEqual(await file.readRows(a, b), all.slice(a, b), `rows [${a}, ${b})`);
        }
        for (const s of [0, 1, 96, 279, 280, -1]) {
          const expected = samples.flatMap((x, i) => (x === s ? [i] : []));
          assert.deepEqual(await file.findRows('sample_index', s), expected, `sample ${s}`);
        }
        // Statistics skip groups: finding one sample reads one group's column.
        file.rangesRead.length = 0;
        await file.findRows('sample_index', 96);
        assert.equal(file.rangesRead.length, 1);
        const { metadata_length: _a, ...lazy } = file.metadata;
        const { metadata_length: _b, ...reference } = whole;
        assert.deepEqual(lazy, reference);

        // A later open given the layout found here reads and finds the same, without walking the footer:
        // it trusts the layout as given (statistics altered in it are believed).
        const kept = file.keptLayout();
        const again = await ParquetFile.open(path, 'groups.parquet', { keptLayout: kept });
        try {
          assert.deepEqual(await again.readRows(5, 30), all.slice(5, 30));
          assert.deepEqual(await again.findRows('sample_index', 96), await file.findRows('sample_index', 96));
          const { metadata_length: _c, ...fromKept } = again.metadata;
          assert.deepEqual(fromKept, reference);
        } finally {
          await again.close();
        }
        const altered = JSON.parse(kept);
        for (const g of altered.groups) g[3][0][2] = g[3][0][3] = Buffer.from(Int32Array.of(-5).buffer).toString('hex');
        const believing = await ParquetFile.open(path, 'groups.parquet', { keptLayout: JSON.stringify(altered) });
        try {
          assert.deepEqual(await believing.findRows('sample_index', 96), []);
        } finally {
          await believing.close();
        }
        // A layout that is not one for this footer is not used: the footer is walked.
        for (const other of ['{', JSON.stringify({ ...JSON.parse(kept), length: 3 }), JSON.stringify({ ...JSON.parse(kept), groups: JSON.parse(kept).groups.slice(1) })]) {
          const walked = await ParquetFile.open(path, 'groups.parquet', { keptLayout: other });
          try {
            assert.deepEqual(await walked.findRows('sample_index', 96), await file.findRows('sample_index', 96));
            assert.equal(walked.rowGroups.length, 40);
          } finally {
            await walked.close();
          }
        }
      } finally {
        await file.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('reads one row, and finds rows, as the row group decode does, from files of real writers (pages skipped, values counted past)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rlsight-pq-'));
    try {
      const paths = MIRRORS.map((m) => fixturePath('miles-demo', 'run', 'dashboard_columns', `${m}.parquet`));
      // DuckDB: v1 pages of a few hundred values (a long list spans pages), dictionaries and plain values,
      // null lists, empty lists, null elements, 64-bit and double columns, uncompressed and snappy.
      const db = await DuckDBInstance.create(':memory:');
      const con = await db.connect();
      try {
        await con.run(`CREATE TABLE t AS SELECT i::INTEGER AS sample_index,
            CASE WHEN i % 11 = 5 THEN NULL ELSE (i * 3)::BIGINT END AS big,
            (i / 7.0)::DOUBLE AS x,
            CASE WHEN i % 13 = 4 THEN NULL WHEN i % 13 = 6 THEN []::INTEGER[]
                 ELSE list_transform(range((i * 37) % 900), k -> CASE WHEN (k + i) % 17 = 0 THEN NULL ELSE ((k * i) % 50)::INTEGER END) END AS tokens,
            CASE WHEN i % 5 = 2 THEN NULL ELSE list_transform(range(i % 300), k -> (k / 3.0)::FLOAT) END AS rollout_log_probs
          FROM range(5000) r(i)`);
        for (const [codec, version] of [['uncompressed', 'V1'], ['snappy', 'V1'], ['zstd', 'V2']]) {
          const path = join(dir, `duckdb-${codec}-${version}.parquet`);
          await con.run(`COPY t TO '${path}' (FORMAT parquet, COMPRESSION ${codec}, ROW_GROUP_SIZE 2048, PARQUET_VERSION ${version})`);
          paths.push(path);
        }
      } finally {
        con.closeSync();
        db.closeSync();
      }
      // hyparquet-writer: v2 pages naming their rows, several pages per column chunk.
      const n = 120;
      const buffer = parquetWriteBuffer({
        columnData: [
          { name: 'sample_index', data: Array.from({ length: n }, (_, i) => (i % 9 === 3 ? null : i)) },
          { name: 'tokens', data: Array.from({ length: n }, (_, i) => (i % 10 === 7 ? null : Array.from({ length: (i * 29) % 70 }, (_, k) => (k % 6 === 1 ? null : k * i)))) },
        ],
        schema: [
          { name: 'root', num_children: 2 },
          { name: 'sample_index', type: 'INT32', repetition_type: 'OPTIONAL' },
          { name: 'tokens', repetition_type: 'OPTIONAL', converted_type: 'LIST', num_children: 1 },
          { name: 'list', repetition_type: 'REPEATED', num_children: 1 },
          { name: 'element', type: 'INT32', repetition_type: 'OPTIONAL' },
        ] as unknown as Parameters<typeof parquetWriteBuffer>[0]['schema'],
        rowGroupSize: 50,
        pageSize: 256,
      });
      paths.push(join(dir, 'v2.parquet'));
      writeFileSync(paths.at(-1)!, new Uint8Array(buffer));
      for (const path of paths) {
        const file = await ParquetFile.open(path);
        try {
          const all = await file.readRows(0, file.numRows);
          // a row read here is read from its pages, never by decoding its row group (but for DuckDB's v2
          // encodings, delta and byte stream split, which are left to that)
          const wholeDecode = file.readRows.bind(file);
          let decodedWhole = 0;
          file.readRows = (a, b, c) => (decodedWhole++, wholeDecode(a, b, c));
          // every row of a small file, every few of a large one and the ends of each row group
          const rows = new Set(Array.from({ length: file.numRows }, (_, r) => r).filter((r) => file.numRows < 500 || r % 23 === 0));
          for (const g of file.rowGroups) rows.add(g.rowStart).add(g.rowEnd - 1);
          for (const r of rows) assert.deepEqual(await file.readRow(r), all[r], `row ${r} of ${path}`);
          const columns = file.columnNames.slice(-2);
          const picked = (row: Record<string, unknown>) => Object.fromEntries(columns.map((c) => [c, row[c]]));
          assert.deepEqual(await file.readRow(file.numRows - 1, columns), picked(all.at(-1)!));
          // a search reads the column from its pages too
          for (const s of [0, 3, 4, 47, 119, 4999, 5000]) {
            const expected = all.flatMap((row, i) => (row.sample_index !== null && row.sample_index !== undefined && Number(row.sample_index) === s ? [i] : []));
            assert.deepEqual(await file.findRows('sample_index', s), expected, `sample ${s} in ${path}`);
          }
          if (path.endsWith('-V2.parquet')) assert.ok(decodedWhole > 0);
          else assert.equal(decodedWhole, 0, path);
        } finally {
          await file.close();
        }
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses at open a footer whose damage the whole decode refuses, and opens one it decodes', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rlsight-pq-'));
    try {
      const good = readFileSync(fixturePath('miles-demo', 'run', 'dashboard_columns', 'rollout_1.parquet'));
      const length = good.readUInt32LE(good.length - 8);
      let refused = 0;
      // Damage at places all over the footer: whatever hyparquet refuses to decode whole is refused at open.
      for (let at = good.length - 8 - length; at < good.length - 8; at += Math.max(1, Math.floor(length / 97))) {
        const bad = Buffer.from(good);
        for (let i = 0; i < 12 && at + i < good.length - 8; i++) bad[at + i] ^= 0xff;
        let wholeFails = false;
        try {
          parquetMetadata(new Uint8Array(bad).buffer);
        } catch {
          wholeFails = true;
        }
        writeFileSync(join(dir, 'bad.parquet'), bad);
        if (!wholeFails) {
          // Damage the decode survives (a changed number) opens as before.
          await (await ParquetFile.open(join(dir, 'bad.parquet'), 'bad.parquet')).close();
          continue;
        }
        refused++;
        await assert.rejects(ParquetFile.open(join(dir, 'bad.parquet'), 'bad.parquet'), ParquetError, `damage at ${at}`);
      }
      assert.ok(refused > 50, `${refused} damaged footers`);
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
