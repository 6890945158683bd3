// The Sample view holds a sample's tokens whole: windows cut from it are the server's own answers, chunks join into it, and
// its peak and per-pixel overview cover every token.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { tokenView } from '../src/queries/tokens.ts';
import type { SampleTokenRecord } from '../src/run/model.ts';
import { joinTokens, maskedRuns, overviewColumns, peakOf, sliceTokens, windowAround } from '../web/views/sample/tokenSlice.ts';

// 30 prompt tokens and 70 response tokens, a loss-masked stretch (response 20–29) and one large lp_diff at response 55
const PROMPT = 30;
const RESP = 70;
const f32 = (n: number, f: (i: number) => number) => Float32Array.from({ length: n }, (_, i) => f(i));
const rollout = f32(RESP, (i) => -0.5 - (i % 7) * 0.05);
const record: SampleTokenRecord = {
  rolloutId: 3,
  sampleIndex: 0,
  evaluation: false,
  totalLength: PROMPT + RESP,
  responseLength: RESP,
  tokens: Int32Array.from({ length: PROMPT + RESP }, (_, i) => 100 + i),
  rolloutLogProbs: null,
  train: {
    lossMask: f32(RESP, (i) => (i >= 20 && i < 30 ? 0 : 1)),
    logProbs: f32(RESP, (i) => rollout[i]! + (i === 55 ? 2 : i >= 40 ? 0.1 * ((i % 3) - 1) : 0)),
    rolloutLogProbs: rollout,
    refLogProbs: null,
    entropy: f32(RESP, (i) => (i % 5) * 0.2),
    refEntropy: null,
    advantages: f32(RESP, () => -0.5),
    returns: null,
  },
  decodeToken: (id) => `t${id}`,
};
const whole = tokenView(record);

test("a window cut from the whole sample is the server's answer for that window", () => {
  for (const [s, e] of [
    [0, 100],
    [0, 10],
    [0, 30],
    [10, 40],
    [30, 31],
    [29, 64],
    [45, 100],
    [64, 256],
    [99, 100],
  ] as const)
    assert.deepEqual(sliceTokens(whole, s, e), tokenView(record, { start: s, end: e }), `window [${s}, ${e})`);
});

test('consecutive ranges joined are the whole sample', () => {
  for (const cut of [1, 30, 31, 64, 99])
    assert.deepEqual(joinTokens(tokenView(record, { start: 0, end: cut }), tokenView(record, { start: cut })), whole, `cut at ${cut}`);
  assert.throws(() => joinTokens(tokenView(record, { start: 0, end: 10 }), tokenView(record, { start: 12 })), /do not meet/);
});

test('the peak is searched over every token given, by the colour scale magnitude', () => {
  assert.equal(peakOf(whole, 'lp_diff', Math.abs), PROMPT + 55);
  // a window before it finds its own
  const early = peakOf(tokenView(record, { start: 0, end: PROMPT + 50 }), 'lp_diff', Math.abs)!;
  assert.ok(early >= PROMPT + 40 && early < PROMPT + 50, String(early));
  assert.equal(peakOf(tokenView(record, { start: 0, end: PROMPT }), 'lp_diff', Math.abs), null, 'the prompt has no values');
});

test('the overview keeps a lone spike among many tokens per pixel, and marks the loss-masked columns', () => {
  const response = { ...whole, start: PROMPT };
  const { cols, masked } = overviewColumns(response, 'lp_diff', Math.abs, 7); // 10 tokens a column
  assert.equal(cols.length, 7);
  assert.deepEqual(masked, [false, false, true, false, false, false, false]);
  assert.equal(cols[2], null, 'a masked column has no value');
  assert.ok(Math.abs(cols[5]!.max - 2) < 1e-6 && Math.abs(cols[5]!.loudest - 2) < 1e-6, JSON.stringify(cols[5]));
  assert.deepEqual([cols[0]!.min, cols[0]!.max], [0, 0], 'no drift before response token 40');
  assert.deepEqual(maskedRuns(whole), [[PROMPT + 20, PROMPT + 30]]);
});

test('a window moved to a token holds it a third of the way in, inside the sample', () => {
  assert.equal(windowAround(500, 300, 9000), 400);
  assert.equal(windowAround(10, 300, 9000), 0);
  assert.equal(windowAround(8990, 300, 9000), 8700);
  assert.equal(windowAround(5, 300, 100), 0);
});
