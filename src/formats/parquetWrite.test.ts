import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parquetReadObjects } from 'hyparquet';
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
