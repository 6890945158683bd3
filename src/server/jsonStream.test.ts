import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { jsonBody, jsonByteLength, jsonPieces, toJsonText } from './json.ts';
import { tooBigToLoad } from '../queries/perfetto.ts';

const number = fc.oneof(fc.double(), fc.integer(), fc.constantFrom(NaN, Infinity, -Infinity, -0, 1e21, 5e-324));
const leaf = fc.oneof(number, fc.string(), fc.boolean(), fc.constant(null), fc.constant(undefined), fc.constant(() => 1));
const typed = fc.oneof(
  fc.array(number, { maxLength: 9000 }).map((xs) => Float64Array.from(xs)),
  fc.array(fc.integer({ min: 0, max: 255 }), { maxLength: 9000 }).map((xs) => Uint8Array.from(xs)),
  fc.array(fc.integer({ min: 0, max: 2 ** 32 - 1 }), { maxLength: 9000 }).map((xs) => Uint32Array.from(xs)),
  fc.array(fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }), { maxLength: 100 }).map((xs) => Int32Array.from(xs)),
  fc.array(number, { maxLength: 100 }).map((xs) => Float32Array.from(xs)),
  fc.array(fc.bigInt({ min: -(2n ** 60n), max: 2n ** 60n }), { maxLength: 50 }).map((xs) => BigInt64Array.from(xs)),
);
const small = fc.dictionary(fc.string({ maxLength: 3 }), leaf, { maxKeys: 3 });
const long = fc.array(fc.oneof(leaf, small, typed.map((t) => t.subarray(0, 3))), { minLength: 1000, maxLength: 1100 });
const value = fc.letrec((tie) => ({
  node: fc.oneof({ depthSize: 'small', maxDepth: 3 }, leaf, typed, long, tie('array'), tie('object')),
  array: fc.array(tie('node'), { maxLength: 3 }),
  object: fc.dictionary(fc.string({ maxLength: 5 }), tie('node'), { maxKeys: 4 }),
})).node;

test('property: the streamed JSON of an answer is byte for byte the JSON written at once', () => {
  fc.assert(
    fc.property(value, (v) => {
      assert.equal([...jsonPieces(v)].join(''), toJsonText(v));
    }),
    { numRuns: 150 },
  );
});

test('a large answer streams in chunks that decode to the same text', async () => {
  const lanes: Record<string, unknown> = {};
  for (let l = 0; l < 64; l++) lanes[`10.0.0.${l}:0`] = { ts: Float64Array.from({ length: 3600 }, (_, i) => 1e9 + i + 0.25), util: new Float64Array(3600).fill(l), mem_mb: new Float64Array(3600), power_w: new Float64Array(3600).fill(NaN) };
  const answer = { lanes };
  const body = jsonBody(answer);
  assert.ok(body instanceof ReadableStream);
  const text = await new Response(body).text();
  assert.equal(text, toJsonText(answer));
  assert.equal(typeof jsonBody({ small: [1, 2, 3] }), 'string');
});

test('a long array of light elements with heavy ones among them goes out in slices, byte for byte', () => {
  const xs: unknown[] = Array.from({ length: 20_000 }, (_, i) => (i % 7 === 0 ? { i, s: `x${i}` } : i % 11 === 0 ? undefined : i % 13 === 0 ? 10n ** 18n : i / 3));
  for (const at of [0, 1, 8191, 8192, 8193, 12_000, 19_999]) xs[at] = Float64Array.from([at, NaN, -0]);
  const pieces = [...jsonPieces(xs)];
  assert.equal(pieces.join(''), toJsonText(xs));
  assert.ok(pieces.length < 60, `${pieces.length} pieces`);
});

test('a body is measured chunk by chunk, to its exact byte length or just past a bound', () => {
  const value = { traceEvents: Array.from({ length: 50_000 }, (_, i) => ({ name: `é span ${i}`, ts: i * 1.5, args: { attr: 'x'.repeat(i % 40) } })) };
  const whole = Buffer.byteLength(toJsonText(value));
  assert.equal(jsonByteLength(value), whole);
  const bounded = jsonByteLength(value, 100_000);
  assert.ok(bounded > 100_000 && bounded < whole, `${bounded} of ${whole}`);
  assert.equal(tooBigToLoad(whole, 't0/t1'), null);
  assert.equal(tooBigToLoad(600e6, 't0/t1'), 'the export would be 600.00 MB, above the ~500 MB Perfetto loads; give a narrower t0/t1 window');
});
