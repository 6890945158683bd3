import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { TableRow } from '../wire/index.ts';
import { bestAndWorst, distribution, initialPrompt, firstDivergence, flippedGroups, metricPairs, movedSamples, outcomeOf, stepDiff, type DiffSide } from './stepDiff.ts';

/** A side from `[sample, group, prompt, reward, length]` rows. */
function side(step: number, rows: [number, number, string, number, number][]): DiffSide {
  return {
    ref: { run: 'r', step, evaluation: false },
    rows: rows.map(([i, g, , reward, len]): TableRow => ({ sample_index: i, group_index: g, raw_reward: reward, response_length: len, truncated: false })),
    prompts: new Map(rows.map(([i, , p]) => [i, p])),
    metrics: new Map(),
  };
}

// Step 3: four prompts of two samples each. Step 4: the same prompts in other groups and sample ids, plus one new.
const A = side(3, [
  [0, 0, 'p-solve', 0, 100],
  [1, 0, 'p-solve', 0, 120], // failed → solved
  [2, 1, 'p-break', 1, 90],
  [3, 1, 'p-break', 1, 95], // solved → mixed
  [4, 2, 'p-same', 1, 50],
  [5, 2, 'p-same', 0, 60], // mixed → mixed (no flip)
  [6, 3, 'p-gone', 1, 70],
  [7, 3, 'p-gone', 1, 70], // absent in step 4
]);
const B = side(4, [
  [10, 7, 'p-break', 1, 200],
  [11, 7, 'p-break', 0, 400],
  [12, 5, 'p-solve', 1, 110],
  [13, 5, 'p-solve', 1, 130],
  [14, 6, 'p-same', 0, 55],
  [15, 6, 'p-same', 1, 65],
  [16, 8, 'p-new', 0, 10],
  [17, 8, 'p-new', 0, 10],
]);

test('outcomes: all rewards above 0 solve, none fail, else mixed', () => {
  assert.equal(outcomeOf([1, 0.5]), 'solved');
  assert.equal(outcomeOf([0, -1]), 'failed');
  assert.equal(outcomeOf([1, 0]), 'mixed');
});

test('flipped groups are matched by prompt, whatever their group index or sample ids', () => {
  const { flipped, matched } = flippedGroups(A, B);
  assert.equal(matched, 3, 'p-solve, p-break, p-same are on both sides; p-gone and p-new are not');
  assert.deepEqual(
    flipped.map((f) => [f.prompt, f.a.outcome, f.b.outcome, f.a.group_index, f.b.group_index]),
    [
      ['p-solve', 'failed', 'solved', 0, 5],
      ['p-break', 'solved', 'mixed', 1, 7],
    ],
  );
  const brk = flipped[1];
  assert.deepEqual([brk.a.reward_mean, brk.b.reward_mean, brk.b.best_sample, brk.b.worst_sample], [1, 0.5, 10, 11]);
});

test('moved samples pair by prompt and position, largest reward change first, then length', () => {
  const moved = movedSamples(A, B);
  // Hand-paired: p-solve (0,12) (1,13), p-break (2,10) (3,11), p-same (4,14) (5,15); p-gone and p-new have no partner.
  assert.deepEqual(
    moved.map((m) => [m.a.sample_index, m.b.sample_index, m.delta_reward, m.delta_length]),
    [
      [3, 11, -1, 305],
      [0, 12, 1, 10],
      [1, 13, 1, 10],
      [4, 14, -1, 5],
      [5, 15, 1, 5],
      [2, 10, 0, 110],
    ],
  );
});

test('moved samples pair by sample index when both runs hold the same samples', () => {
  const a = side(2, [
    [0, 0, 'q', 0, 10],
    [1, 0, 'q', 1, 10],
  ]);
  const b = side(2, [
    [1, 0, 'q', 1, 10],
    [0, 0, 'q', 1, 30],
  ]);
  const moved = movedSamples(a, b);
  assert.deepEqual(moved.map((m) => [m.a.sample_index, m.b.sample_index, m.delta_reward]), [
    [0, 0, 1],
    [1, 1, 0],
  ]);
});

test('distributions share bins; integer data bins on integers; deltas are b − a', () => {
  const d = distribution('response_length', 'response length', [1, 2, 2, 3], [3, 3, 4]);
  assert.deepEqual(d.edges, [0.5, 1.5, 2.5, 3.5, 4.5]);
  assert.equal(d.integral, true);
  assert.deepEqual(d.counts_a, [1, 2, 1, 0]);
  assert.deepEqual(d.counts_b, [0, 0, 2, 1]);
  assert.equal(d.delta_mean, 10 / 3 - 2);
  const f = distribution('x', 'x', [0.1, 0.2], [0.3]);
  assert.equal(f.edges.length, 25);
  assert.equal(f.integral, false);
  assert.equal(f.counts_a.reduce((a, b) => a + b, 0), 2);
  assert.equal(f.counts_b[23], 1, 'the maximum falls in the last bin');
  assert.deepEqual(distribution('x', 'x', [], []).counts_a, [0]);
});

test('metric pairs list every key of either side', () => {
  assert.deepEqual(metricPairs(new Map([['a', 1], ['b', 2]]), new Map([['b', 5], ['c', 1]])), [
    { key: 'a', a: 1, b: null, delta: null },
    { key: 'b', a: 2, b: 5, delta: 3 },
    { key: 'c', a: null, b: 1, delta: null },
  ]);
});

test('the whole diff carries both refs and every distribution', () => {
  const d = stepDiff(A, B);
  assert.deepEqual([d.a.step, d.b.step], [3, 4]);
  assert.deepEqual(d.distributions.map((x) => x.metric), ['reward', 'response_length', 'mean_abs_lp_diff', 'mean_entropy', 'truncated', 'staleness']);
  assert.equal(d.distributions[0].a.mean, 5 / 8);
  assert.equal(d.distributions[2].a.n, 0, 'no lp diff without train data');
});

test('first divergence and a group’s best and worst', () => {
  assert.equal(firstDivergence('abcd', 'abxd'), 2);
  assert.equal(firstDivergence('abc', 'abcdef'), 3);
  assert.equal(firstDivergence([1, 2], [1, 2]), null);
  assert.deepEqual(bestAndWorst(B.rows, 7), [10, 11]);
  assert.throws(() => bestAndWorst(B.rows, 99), /group 99 has no samples/);
});

test('a multi-turn prompt is matched by the turns before its first assistant turn', () => {
  assert.equal(initialPrompt('system: be brief\nuser: add 2 and 3\nassistant: 5\ntool: ok'), 'system: be brief\nuser: add 2 and 3');
  assert.equal(initialPrompt('user: add 2 and 3'), 'user: add 2 and 3');
  assert.equal(initialPrompt('plain text prompt'), 'plain text prompt');
});

test('staleness counted in rollout steps on one side and weight updates on the other gets no change, and says why', () => {
  const stale = (s: DiffSide, values: number[], from?: 'newest_version'): DiffSide => ({
    ...s,
    rows: s.rows.map((r, i) => ({ ...r, staleness: values[i % values.length]! })),
    ...(from ? { stalenessFrom: from } : {}),
  });
  const staleness = (a: DiffSide, b: DiffSide) => stepDiff(a, b).distributions.find((x) => x.metric === 'staleness')!;
  // both in rollout steps (two miles steps), or both in weight updates (two slime steps): the change is given
  const same = staleness(stale(A, [0]), stale(B, [1]));
  assert.equal(same.delta_mean, 1);
  assert.equal(same.note, undefined);
  assert.equal(staleness(stale(A, [0], 'newest_version'), stale(B, [1], 'newest_version')).delta_mean, 1);
  // a miles step against a slime step: both means are shown, no change between them
  const across = staleness(stale(A, [0]), stale(B, [0, 1], 'newest_version'));
  assert.deepEqual([across.a.mean, across.b.mean, across.delta_mean], [0, 0.5, null]);
  assert.equal(across.note, "not comparable: A counts rollout steps behind, B counts weight updates behind its step's newest version");
  assert.match(staleness(stale(A, [1], 'newest_version'), stale(B, [0])).note!, /^not comparable: A counts weight updates .*, B counts rollout steps behind$/);
  // the other distributions keep their changes
  assert.equal(stepDiff(stale(A, [0]), stale(B, [0, 1], 'newest_version')).distributions.find((x) => x.metric === 'reward')!.delta_mean, 4 / 8 - 5 / 8);
});
