import assert from 'node:assert/strict';
import { test } from 'node:test';
import { alignSeries, alignTokens } from './tokenAlignment.ts';

/** Stretches as `kind a_start-a_end b_start-b_end @column`, for hand-written expectations. */
const shape = (a: number[], b: number[], cap?: number) =>
  alignTokens(a, b, cap).stretches.map((s) => `${s.kind} ${s.a_start}-${s.a_end} ${s.b_start}-${s.b_end} @${s.column}`);

test('identical responses are one matched stretch', () => {
  const al = alignTokens([5, 6, 7], [5, 6, 7]);
  assert.deepEqual(shape([5, 6, 7], [5, 6, 7]), ['same 0-3 0-3 @0']);
  assert.deepEqual([al.method, al.fell_back, al.columns, al.matched, al.deleted, al.inserted], ['edit', false, 3, 3, 0, 0]);
  assert.deepEqual(alignTokens([], []).stretches, []);
});

test('an insertion in B keeps the tokens after it matched', () => {
  // A: 1 2 3 4 5   B: 1 2 9 9 3 4 5 — positions 2.. of A meet positions 4.. of B.
  assert.deepEqual(shape([1, 2, 3, 4, 5], [1, 2, 9, 9, 3, 4, 5]), ['same 0-2 0-2 @0', 'inserted 2-2 2-4 @2', 'same 2-5 4-7 @4']);
  const al = alignTokens([1, 2, 3, 4, 5], [1, 2, 9, 9, 3, 4, 5]);
  assert.deepEqual([al.matched, al.deleted, al.inserted, al.columns], [5, 0, 2, 7]);
});

test('a deletion from A, and a deletion and an insertion at both ends', () => {
  assert.deepEqual(shape([1, 2, 3, 4], [1, 4]), ['same 0-1 0-1 @0', 'deleted 1-3 1-1 @1', 'same 3-4 1-2 @3']);
  // A: 7 1 2 3   B: 1 2 3 8 — A's first token is gone, B has one more at the end.
  assert.deepEqual(shape([7, 1, 2, 3], [1, 2, 3, 8]), ['deleted 0-1 0-0 @0', 'same 1-4 0-3 @1', 'inserted 4-4 3-4 @4']);
  // One response extends the other.
  assert.deepEqual(shape([1, 2], [1, 2, 3]), ['same 0-2 0-2 @0', 'inserted 2-2 2-3 @2']);
  assert.deepEqual(shape([1, 2, 3], []), ['deleted 0-3 0-0 @0']);
});

test('a replaced token in the middle is a deletion and an insertion between matched stretches', () => {
  const s = shape([1, 2, 3, 4, 5], [1, 2, 8, 4, 5]);
  assert.equal(s[0], 'same 0-2 0-2 @0');
  assert.deepEqual(s.slice(1, 3), ['deleted 2-3 2-2 @2', 'inserted 3-3 2-3 @3'], 'A’s token first, then B’s');
  assert.equal(s[3], 'same 3-5 3-5 @4');
  const al = alignTokens([1, 2, 3, 4, 5], [1, 2, 8, 4, 5]);
  assert.deepEqual([al.matched, al.deleted, al.inserted, al.columns], [4, 1, 1, 6]);
});

test('fully different responses share nothing', () => {
  const al = alignTokens([1, 2, 3], [4, 5]);
  assert.equal(al.fell_back, false);
  assert.deepEqual([al.matched, al.deleted, al.inserted, al.columns], [0, 3, 2, 5]);
  assert.deepEqual(
    al.stretches.map((s) => s.kind).sort(),
    ['deleted', 'inserted'],
  );
});

test('the longest common subsequence is found when it is not at the ends', () => {
  // A: 1 2 3 4 5 6   B: 9 2 3 9 5 6 9 — a shortest script keeps 2 3 and 5 6 (4 matched; 2 deleted, 3 inserted).
  const al = alignTokens([1, 2, 3, 4, 5, 6], [9, 2, 3, 9, 5, 6, 9]);
  assert.deepEqual([al.matched, al.deleted, al.inserted, al.columns], [4, 2, 3, 9]);
  const same = al.stretches.filter((s) => s.kind === 'same').map((s) => `${s.a_start}-${s.a_end} ${s.b_start}-${s.b_end}`);
  assert.deepEqual(same, ['1-3 1-3', '4-6 4-6']);
});

test('past the edit cap the alignment falls back to the common prefix and suffix', () => {
  // Between the shared prefix (1 2) and suffix (9) the middles 3 4 5 6 / 7 5 6 8 keep 5 6 with 4 edits; a cap of 3 stops.
  const a = [1, 2, 3, 4, 5, 6, 9];
  const b = [1, 2, 7, 5, 6, 8, 9];
  const full = alignTokens(a, b, 4);
  assert.equal(full.fell_back, false);
  assert.equal(full.matched, 5);
  const capped = alignTokens(a, b, 3);
  assert.deepEqual([capped.method, capped.fell_back, capped.edit_cap], ['prefix_suffix', true, 3]);
  assert.deepEqual(shape(a, b, 3), ['same 0-2 0-2 @0', 'deleted 2-6 2-2 @2', 'inserted 6-6 2-6 @6', 'same 6-7 6-7 @10']);
  assert.deepEqual([capped.matched, capped.deleted, capped.inserted, capped.columns], [3, 4, 4, 11]);
});

test('two long unrelated responses stop at the cap; two long similar ones align exactly', () => {
  const n = 9000;
  const a = Array.from({ length: n }, (_, i) => (i * 7919) % 50021);
  const b = Array.from({ length: n }, (_, i) => 50021 + ((i * 104729) % 50021));
  const unrelated = alignTokens(a, b);
  assert.equal(unrelated.fell_back, true);
  assert.deepEqual([unrelated.matched, unrelated.deleted, unrelated.inserted], [0, n, n]);
  const edited = [...a.slice(0, 3000), 1, 2, 3, ...a.slice(3000, 6000), ...a.slice(6010)];
  const near = alignTokens(a, edited);
  assert.equal(near.fell_back, false);
  assert.deepEqual([near.matched, near.deleted, near.inserted], [n - 10, 10, 3]);
});

test('series are laid over the columns with gaps where a side has no token', () => {
  const al = alignTokens([1, 2, 3, 4, 5], [1, 2, 9, 9, 3, 4, 5]);
  const s = alignSeries(al, [0.1, 0.2, 0.3, 0.4, 0.5], [1, 2, 3, 4, 5, 6, 7]);
  assert.deepEqual(s.a, [0.1, 0.2, null, null, 0.3, 0.4, 0.5]);
  assert.deepEqual(s.b, [1, 2, 3, 4, 5, 6, 7]);
  const d = alignTokens([1, 2, 3, 4], [1, 4]);
  assert.deepEqual(alignSeries(d, ['a', 'b', 'c', 'd'], ['w', 'z']), { a: ['a', 'b', 'c', 'd'], b: ['w', null, null, 'z'] });
});
