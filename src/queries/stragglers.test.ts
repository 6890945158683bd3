import assert from 'node:assert/strict';
import { test } from 'node:test';
import { computeAdvisories } from './advisory.ts';
import { findStragglers, laneStartLags, type StragglerPhase } from './stragglers.ts';

/** `ranks` ranks over `steps` steps of 100 s; `lateBy(rank, step)` seconds of extra wait. */
function run(ranks: number, steps: number, lateBy: (rank: number, step: number) => number): StragglerPhase[] {
  const out: StragglerPhase[] = [];
  for (let s = 0; s < steps; s++) {
    for (let r = 0; r < ranks; r++) {
      const leave = s * 100 + 50 + (r % 3) * 0.1 + lateBy(r, s);
      out.push({ name: 'train_wait', t0: s * 100, t1: leave, node: `n${Math.floor(r / 4)}`, rank: r });
      out.push({ name: 'actor_train', t0: s * 100 + 70, t1: s * 100 + 90, node: `n${Math.floor(r / 4)}`, rank: r });
    }
  }
  return out;
}

test('a rank late in most steps is a straggler, quoted with its median lag and step count', () => {
  const events = run(8, 6, (r, s) => (r === 5 && s !== 2 ? 11 + s * 0.1 : 0));
  const found = findStragglers(events);
  assert.equal(found.length, 1);
  const [s] = found;
  assert.deepEqual([s!.rank, s!.node, s!.verb, s!.phase, s!.lateSteps, s!.steps], [5, 'n1', 'leaves', 'train_wait', 5, 6]);
  assert.ok(Math.abs(s!.lag - 11.4) < 0.15, `median lag ${s!.lag}`);
  const adv = computeAdvisories({ args: {}, edge: 600, startTs: null, phases: events, engine: null, rollout: null, mfu: null, lowMfu: 0 });
  const straggler = adv.find((a) => a.lanes === 'rank:5')!;
  assert.match(straggler.message, /^rank 5 leaves train_wait 11\.\d s after the median of its peers in 5 of 6 steps/);
  assert.ok(straggler.window && straggler.window.t1 > straggler.window.t0);
});

test('late in a minority of steps, late by less than the threshold, or without peers: no straggler', () => {
  assert.deepEqual(findStragglers(run(8, 6, (r, s) => (r === 5 && s < 3 ? 20 : 0))), []);
  assert.deepEqual(findStragglers(run(8, 6, (r) => (r === 5 ? 1.5 : 0))), []);
  assert.deepEqual(findStragglers(run(2, 6, (r) => (r === 1 ? 30 : 0))), []);
  assert.deepEqual(findStragglers(run(8, 1, (r) => (r === 1 ? 30 : 0))), [], 'one step is not "most steps"');
  // Events of an earlier attempt are not this attempt's.
  assert.deepEqual(findStragglers(run(8, 6, (r, s) => (r === 5 && s < 4 ? 20 : 0)), 350), []);
});

test('lane start lags score every lane with train phases, the straggler highest', () => {
  const rows = run(8, 4, (r) => (r === 6 ? 9 : 0)).map((e) => ({ ...e, gpu: e.rank % 4 }));
  const scores = laneStartLags(rows).sort((a, b) => b.score - a.score);
  assert.equal(scores.length, 8);
  assert.deepEqual([scores[0]!.node, scores[0]!.gpu], ['n1', 2]);
  assert.ok(scores[0]!.score > 8.5 && scores[1]!.score < 1);
});
