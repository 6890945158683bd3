import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { cpResponseRanges } from './cpSplit.ts';

// Worked by hand from miles' get_logits_and_tokens_offset_with_cp, not from the code under test: the response
// token at position p (prompt ≤ p < total) is predicted by the logit at p − 1, so a rank holds response
// index i = (logit position) − (prompt − 1) for the logit positions inside its chunks.
describe('CP zigzag split', () => {
  it('12 tokens (prompt 2, response 10), cp 2: chunks of 3, rank 0 holds chunks 0 and 3, rank 1 chunks 1 and 2', () => {
    // Logit window [1, 11). Chunk 0 = [0,3) → logits [1,3) → response [0,2); chunk 3 = [9,12) → [9,11) → [8,10).
    assert.deepEqual(cpResponseRanges(12, 10, 2, 0), [[0, 2], [8, 10]]);
    // Chunk 1 = [3,6) → response [2,5); chunk 2 = [6,9) → response [5,8).
    assert.deepEqual(cpResponseRanges(12, 10, 2, 1), [[2, 5], [5, 8]]);
  });

  it('the same sample padded to 16: chunks of 4, the padding past the logits held by no one', () => {
    // Chunk 0 = [0,4) → logits [1,4) → [0,3); chunk 3 = [12,16) lies past the window: nothing.
    assert.deepEqual(cpResponseRanges(12, 10, 2, 0, 16), [[0, 3]]);
    // Chunk 1 = [4,8) → [3,7); chunk 2 = [8,12) → logits [8,11) → [7,10).
    assert.deepEqual(cpResponseRanges(12, 10, 2, 1, 16), [[3, 7], [7, 10]]);
  });

  it('a short response inside one rank: 10 tokens (prompt 4, response 6), cp 2 — rank 0 holds nothing', () => {
    // Chunks of 3; logit window [3, 9): chunk 0 = [0,3) and chunk 3 = [9,12) miss it; chunks 1 and 2 are rank 1's.
    assert.deepEqual(cpResponseRanges(10, 6, 2, 0), []);
    assert.deepEqual(cpResponseRanges(10, 6, 2, 1), [[0, 3], [3, 6]]);
  });

  it('cp 4 over 16 tokens (prompt 1, response 15): chunks of 2, rank r holds chunks r and 7 − r', () => {
    // Logit window [0, 15): rank 0 → [0,2) and [14,15); rank 1 → [2,4) and [12,14); rank 2 → [4,6), [10,12); rank 3 → [6,8), [8,10).
    assert.deepEqual(cpResponseRanges(16, 15, 4, 0), [[0, 2], [14, 15]]);
    assert.deepEqual(cpResponseRanges(16, 15, 4, 1), [[2, 4], [12, 14]]);
    assert.deepEqual(cpResponseRanges(16, 15, 4, 2), [[4, 6], [10, 12]]);
    assert.deepEqual(cpResponseRanges(16, 15, 4, 3), [[6, 8], [8, 10]]);
  });

  it('the slices of all ranks cover every response position exactly once', () => {
    for (const [total, response, cp] of [[100, 60, 2], [37, 30, 2], [250, 10, 4], [9, 8, 2], [64, 63, 4]]) {
      const seen = new Array(response).fill(0);
      for (let r = 0; r < cp; r++) for (const [lo, hi] of cpResponseRanges(total, response, cp, r)) for (let i = lo; i < hi; i++) seen[i]++;
      assert.ok(seen.every((n) => n === 1), `total ${total} response ${response} cp ${cp}: ${seen}`);
    }
  });
});
