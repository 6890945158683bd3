import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { DuckDBInstance } from '@duckdb/node-api';
import { encodeCsv } from './csv.ts';

test('NaN and ±infinity are spelled NaN, Infinity and -Infinity, read back as numbers (DuckDB; Spark and pandas take these too)', async () => {
  const csv = encodeCsv(['_step', 'loss'], [
    [0, 0.5],
    [1, Number.NaN],
    [2, Number.POSITIVE_INFINITY],
    [3, Number.NEGATIVE_INFINITY],
  ]);
  // Spark's CSV reader parses a double with Java's Double.parseDouble, which takes `Infinity` but not `inf`
  assert.equal(csv, '_step,loss\r\n0,0.5\r\n1,NaN\r\n2,Infinity\r\n3,-Infinity\r\n');
  const dir = mkdtempSync(join(tmpdir(), 'rlsight-csv-'));
  const db = await DuckDBInstance.create(':memory:');
  const con = await db.connect();
  try {
    const file = join(dir, 'm.csv');
    writeFileSync(file, csv);
    const read = await con.runAndReadAll(`SELECT typeof(loss) AS t, loss FROM read_csv('${file}') ORDER BY _step`);
    const rows = read.getRows();
    assert.deepEqual(rows.map((r) => r[0]), ['DOUBLE', 'DOUBLE', 'DOUBLE', 'DOUBLE']);
    const values = rows.map((r) => r[1] as number);
    assert.equal(values[0], 0.5);
    assert.ok(Number.isNaN(values[1]));
    assert.deepEqual(values.slice(2), [Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY]);
  } finally {
    con.closeSync();
    db.closeSync();
    rmSync(dir, { recursive: true, force: true });
  }
});
