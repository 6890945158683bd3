import { test } from 'node:test';
import assert from 'node:assert/strict';
import { approxBytes, approxListBytes, ByteBudgetLru } from './byteBudget.ts';

test('a typed array weighs its buffer, counted once however often it is referenced', () => {
  const a = new Float64Array(1000);
  const one = approxBytes({ a });
  assert.ok(one >= 8000 && one < 8200, String(one));
  const twice = approxBytes({ a, b: a, c: a.subarray(10) });
  assert.ok(twice - one < 200, `${twice} vs ${one}`);
  assert.ok(approxBytes(['x'.repeat(5000)]) > 5000);
});

test('the least recently used values are dropped past the byte budget or the count; one heavier than the budget is not kept', () => {
  const lru = new ByteBudgetLru<string, number>(10, (n) => n);
  lru.set('a', 4);
  lru.set('b', 4);
  lru.get('a');
  lru.set('c', 4); // 12 > 10: b, the least recently used, goes
  assert.deepEqual([lru.get('a'), lru.get('b'), lru.get('c')], [4, undefined, 4]);
  assert.equal(lru.bytes, 8);
  lru.set('huge', 11);
  assert.equal(lru.get('huge'), undefined);
  assert.equal(lru.bytes, 8);
  const counted = new ByteBudgetLru<string, number>(100, (n) => n, 2);
  for (const k of ['x', 'y', 'z']) counted.set(k, 1);
  assert.deepEqual([counted.size, counted.get('x')], [2, undefined]);
});

test('a long list of like records is weighed from a sample of them, close to weighing them all; a short one exactly', () => {
  const record = (i: number) => ({ index: i, status: 'completed', reward: i / 7, response: 'y'.repeat(100 + (i % 50) * 20), tags: [i, i + 1] });
  const short = Array.from({ length: 200 }, (_, i) => record(i));
  assert.equal(approxListBytes(short), approxBytes(short));
  const long = Array.from({ length: 4096 }, (_, i) => record(i));
  const all = approxBytes(long);
  const sampled = approxListBytes(long);
  assert.ok(Math.abs(sampled - all) / all < 0.05, `${sampled} against ${all}`);
  // one long record in every group of eight (one sample of each prompt, say) weighs in as it should
  const mixed = long.map((r, i) => (i % 8 === 5 ? { ...r, response: 'z'.repeat(20_000) } : r));
  const exact = approxBytes(mixed);
  assert.ok(Math.abs(approxListBytes(mixed) - exact) / exact < 0.2, `${approxListBytes(mixed)} against ${exact}`);
});
