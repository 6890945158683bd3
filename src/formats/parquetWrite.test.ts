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

test('columns named integral are INT32 (INT64 beyond its range) when every value is whole, DOUBLE otherwise', async () => {
  const bytes = encodeParquet(
    ['_step', 'big', 'half', 'loss'],
    [
      [0, 2 ** 40, 1, 1],
      [7, null, 1.5, 2],
    ],
    new Set(['_step', 'big', 'half']),
  );
  const file = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
  const types = Object.fromEntries(parquetMetadata(file).schema.slice(1).map((e) => [e.name, e.type]));
  // a column not named integral stays DOUBLE even when its values are whole
  assert.deepEqual(types, { _step: 'INT32', big: 'INT64', half: 'DOUBLE', loss: 'DOUBLE' });
  assert.deepEqual(await parquetReadObjects({ file }), [
    { _step: 0, big: 2n ** 40n, half: 1, loss: 1 },
    { _step: 7, big: null, half: 1.5, loss: 2 },
  ]);
});
