import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parquetMetadata, parquetReadObjects } from 'hyparquet';
import { encodeParquet } from './parquetWrite.ts';

test('a table of numbers, text, booleans and nulls reads back equal', async () => {
  const bytes = encodeParquet(['_step', 'loss', 'note', 'flag', 'mixed'], [
    [0, 1.5, 'x', true, 1],
    [1, null, null, null, 'two'],
    [2, -3e-7, 'y,"z"\nw', false, null],
  ]);
  const rows = await parquetReadObjects({ file: bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer });
  assert.deepEqual(rows, [
    { _step: 0, loss: 1.5, note: 'x', flag: true, mixed: '1' },
    { _step: 1, loss: null, note: null, flag: null, mixed: 'two' },
    { _step: 2, loss: -3e-7, note: 'y,"z"\nw', flag: false, mixed: null },
  ]);
});

test('columns declared INTEGER are INT32 (INT64 beyond its range) when every value is whole, DOUBLE otherwise', async () => {
  const bytes = encodeParquet(
    ['_step', 'big', 'half', 'loss'],
    [
      [0, 2 ** 40, 1, 1],
      [7, null, 1.5, 2],
    ],
    { _step: 'INTEGER', big: 'INTEGER', half: 'INTEGER' },
  );
  const file = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
  const types = Object.fromEntries(parquetMetadata(file).schema.slice(1).map((e) => [e.name, e.type]));
  // a column not declared INTEGER stays DOUBLE even when its values are whole
  assert.deepEqual(types, { _step: 'INT32', big: 'INT64', half: 'DOUBLE', loss: 'DOUBLE' });
  assert.deepEqual(await parquetReadObjects({ file }), [
    { _step: 0, big: 2n ** 40n, half: 1, loss: 1 },
    { _step: 7, big: null, half: 1.5, loss: 2 },
  ]);
});

/** Every page header of one column chunk: its page type and encoding (Parquet's enum numbers), read from the bytes. */
async function pageHeaders(file: ArrayBuffer, column: string): Promise<{ type: number; encoding: number }[]> {
  // hyparquet's own thrift reader, which its package exports do not name
  const thrift = (await import(new URL('thrift.js', import.meta.resolve('hyparquet')).href)) as {
    deserializeTCompactProtocol(reader: { view: DataView; offset: number }): Record<string, any>;
  };
  const chunk = parquetMetadata(file).row_groups[0].columns.find((c) => c.meta_data!.path_in_schema.join('.') === column)!.meta_data!;
  const pages: { type: number; encoding: number }[] = [];
  const start = Number(chunk.dictionary_page_offset ?? chunk.data_page_offset);
  for (let at = start; at < start + Number(chunk.total_compressed_size); ) {
    const reader = { view: new DataView(file), offset: at };
    const h = thrift.deserializeTCompactProtocol(reader);
    // field 8: DataPageHeaderV2 (its field 4 the encoding); field 5: DataPageHeader v1 (field 2); field 7: DictionaryPageHeader (field 2)
    const encoding = h.field_8?.field_4 ?? h.field_5?.field_2 ?? h.field_7?.field_2;
    pages.push({ type: h.field_1, encoding });
    at = reader.offset + h.field_3;
  }
  return pages;
}

test('booleans are PLAIN in every data page, which every Parquet reader takes (Spark before 3.3 refuses RLE ones)', async () => {
  // more than 16 values: hyparquet-writer's own choice for them is RLE
  const flags = Array.from({ length: 200 }, (_, i) => [i % 7 === 0 ? null : i % 3 === 0, i] as const);
  const bytes = encodeParquet(['flag', 'n'], flags.map((r) => [...r]));
  const file = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
  const DATA_PAGE_V2 = 3;
  const PLAIN = 0;
  const pages = await pageHeaders(file, 'flag');
  assert.ok(pages.length > 0);
  assert.deepEqual(pages, pages.map(() => ({ type: DATA_PAGE_V2, encoding: PLAIN })));
  assert.deepEqual((await parquetReadObjects({ file })).map((r) => r.flag), flags.map((r) => r[0]));
});

test('a declared type holds for a column null in every row; a value of another kind keeps its own', async () => {
  const declared = { flag: 'BOOLEAN', name: 'STRING', n: 'INTEGER', x: 'DOUBLE', odd: 'BOOLEAN' } as const;
  const bytes = encodeParquet(
    ['flag', 'name', 'n', 'x', 'odd', 'free'],
    [
      [null, null, null, null, 'yes', null],
      [null, null, null, null, null, null],
    ],
    declared,
  );
  const file = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
  const types = Object.fromEntries(parquetMetadata(file).schema.slice(1).map((e) => [e.name, e.type]));
  // text in a BOOLEAN column stays text; an undeclared all-null column is DOUBLE
  assert.deepEqual(types, { flag: 'BOOLEAN', name: 'BYTE_ARRAY', n: 'INT32', x: 'DOUBLE', odd: 'BYTE_ARRAY', free: 'DOUBLE' });
  assert.deepEqual((await parquetReadObjects({ file }))[0], { flag: null, name: null, n: null, x: null, odd: 'yes', free: null });
});
