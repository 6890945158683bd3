import assert from 'node:assert/strict';
import { test } from 'node:test';
import { crc32c, encodeEventFile, maskedCrc32c } from './tfevents.ts';

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
