import assert from 'node:assert/strict';
import { test } from 'node:test';
import { crc32c, decodeScalarEvent, encodeEventFile, maskedCrc32c, readTfRecord } from './tfevents.ts';

test('CRC-32C matches the standard check value', () => {
  assert.equal(crc32c(new TextEncoder().encode('123456789')), 0xe3069283);
  assert.equal(crc32c(new Uint8Array(32)), 0x8a9136aa);
});

test('a masked CRC differs from the plain one and is deterministic', () => {
  const b = new TextEncoder().encode('rlsight');
  assert.notEqual(maskedCrc32c(b), crc32c(b));
  assert.equal(maskedCrc32c(b), maskedCrc32c(Uint8Array.from(b)));
});

test('the event file starts with the version record', () => {
  const bytes = encodeEventFile([], 1700000000.5);
  const len = Number(new DataView(bytes.buffer).getBigUint64(0, true));
  assert.equal(bytes.length, 12 + len + 4);
  assert.ok(new TextDecoder().decode(bytes.subarray(12, 12 + len)).includes('brain.Event:2'));
});

test('the event file holds each scalar at full precision, as a DT_DOUBLE tensor of the scalars plugin', () => {
  const bytes = encodeEventFile([{ step: 50, wallTime: 1700000100.5, scalars: { 'tokens/total': 123456789, 'time/epoch': 1700000100.5, tiny: 0.1 } }], 1700000000);
  const version = readTfRecord(bytes, 0);
  assert.ok('data' in version);
  const r = readTfRecord(bytes, version.next);
  assert.ok('data' in r);
  assert.equal(r.next, bytes.length);
  // read as a file whose tags no earlier value named the plugin of: each value carries its metadata
  assert.deepEqual(decodeScalarEvent(r.data, new Map()), {
    wallTime: 1700000100.5,
    step: 50,
    scalars: [
      { tag: 'tokens/total', value: 123456789 },
      { tag: 'time/epoch', value: 1700000100.5 },
      { tag: 'tiny', value: 0.1 },
    ],
  });
});
