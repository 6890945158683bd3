import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { TokenView } from '../../../src/wire/index.ts';
import { maskAt, peakWords, statAt, tokenWords } from './tokenWords.ts';

// positions 0-1 the prompt, 2-5 the response; position 4 loss-masked
const view = {
  rollout_id: 1,
  sample_index: 0,
  evaluation: false,
  total_len: 6,
  prompt_len: 2,
  start: 0,
  end: 6,
  response_offset: 0,
  token_ids: [10, 11, 12, 13, 14, 15],
  token_text: ['Q', ':', ' foo', '\n', 'bar', '!'],
  loss_mask: [1, 1, 0, 1],
  lp_diff: [0.01, -0.84, 0.2, 0],
  imp_ratio: [1, 0.5, 1.2, 1],
} as unknown as TokenView;

describe('token words', () => {
  it('reads a stat at an absolute position, none in the prompt', () => {
    assert.equal(statAt(view, 'lp_diff', 3), -0.84);
    assert.equal(statAt(view, 'lp_diff', 1), null);
  });
  it('reads the loss mask at an absolute position by the same rule, none in the prompt or past the view', () => {
    assert.equal(maskAt(view, 4), 0);
    assert.equal(maskAt(view, 5), 1);
    assert.equal(maskAt(view, 1), null);
    assert.equal(maskAt(view, 6), null);
    // a window past the prompt: its arrays start at the window's first position
    assert.equal(maskAt({ ...view, start: 3, loss_mask: [1, 0, 1] } as TokenView, 4), 0);
    assert.equal(maskAt({ ...view, loss_mask: null } as unknown as TokenView, 4), null);
  });
  it('says the position, the text and each stat, once each', () => {
    assert.equal(tokenWords(view, 3, ['lp_diff', 'imp_ratio']), 'position 3 "\\n": lp_diff -0.840, imp_ratio 0.500');
    assert.equal(tokenWords(view, 2, ['lp_diff', 'lp_diff']), 'position 2 " foo": lp_diff 0.010');
  });
  it('says a prompt token has no statistics and a masked one is not trained on', () => {
    assert.equal(tokenWords(view, 0, ['lp_diff']), 'position 0 "Q": prompt, no per-token statistics');
    assert.equal(tokenWords(view, 4, ['lp_diff']), 'position 4 "bar": lp_diff 0.200, loss-masked (not trained on)');
  });
  it('names the token ids when there is no text', () => {
    assert.equal(tokenWords({ ...view, token_text: null }, 5, ['lp_diff']), 'position 5 id 15: lp_diff 0');
  });
  it('says what the peak found', () => {
    assert.equal(peakWords(view, 'lp_diff', 3), 'peak lp_diff -0.840 at position 3 "\\n"');
    assert.equal(peakWords({ ...view, start: 0 }, 'lp_diff', null), 'no lp_diff value to find a peak in');
  });
});
