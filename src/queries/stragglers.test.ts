import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { computeAdvisories } from './advisory.ts';
import { healthBoard } from './health.ts';
import { findStragglers, laneStartLags, type StragglerPhase } from './stragglers.ts';

/** `ranks` ranks over `steps` steps of 100 s; `lateBy(rank, step)` seconds of extra wait; `nodeOf` places ranks. */
function run(ranks: number, steps: number, lateBy: (rank: number, step: number) => number, nodeOf = (r: number) => `n${Math.floor(r / 4)}`): StragglerPhase[] {
  const out: StragglerPhase[] = [];
  for (let s = 0; s < steps; s++) {
    for (let r = 0; r < ranks; r++) {
      const leave = s * 100 + 50 + (r % 3) * 0.1 + lateBy(r, s);
      out.push({ name: 'train_wait', t0: s * 100, t1: leave, node: nodeOf(r), rank: r });
      out.push({ name: 'actor_train', t0: leave + 0.5, t1: leave + 40, node: nodeOf(r), rank: r });
    }
  }
  return out;
}

const advise = (events: StragglerPhase[]) => computeAdvisories({ args: {}, edge: 1e6, startTs: null, phases: events, engine: null, rollout: null, mfu: null, lowMfu: 0 });

test('a rank late in most steps is a straggler, quoted with its median lag over all its steps', () => {
  const events = run(8, 6, (r, s) => (r === 5 && s !== 2 ? 11 + s * 0.1 : 0));
  const { stragglers, skew } = findStragglers(events);
  assert.equal(stragglers.length, 1);
  assert.equal(skew, null);
  const [s] = stragglers;
  assert.deepEqual([s!.rank, s!.node, s!.verb, s!.phase, s!.lateSteps, s!.steps], [5, 'n1', 'leaves', 'train_wait', 5, 6]);
  // Its own 0.2 s offset against the peers' median 0.1 s: lags 11.1, 11.2, 0.1, 11.4, 11.5, 11.6; the median of six.
  assert.ok(Math.abs(s!.lag - 11.3) < 1e-9, `median lag ${s!.lag}`);
  const adv = advise(events);
  const straggler = adv.find((a) => a.lanes === 'rank:5')!;
  assert.match(straggler.message, /^rank 5 leaves train_wait 11\.\d s after the median rank \(its median lag over 6 steps\), an outlier against its peers' spread in 5 of them/);
  assert.ok(straggler.window && straggler.window.t1 > straggler.window.t0);
  // The lane label and the quick pick read the same number.
  const lane = laneStartLags(events.map((e) => ({ ...e, lanes: [`${e.node}:${e.rank % 4}`] }))).find((l) => l.node === 'n1' && l.gpu === 1)!;
  assert.equal(lane.score, s!.lag);
  assert.equal(lane.straggler, true);
});

test('late in a minority of steps, late by less than the floor, or without peers: no straggler', () => {
  assert.deepEqual(findStragglers(run(8, 6, (r, s) => (r === 5 && s < 3 ? 20 : 0))).stragglers, []);
  assert.deepEqual(findStragglers(run(8, 6, (r) => (r === 5 ? 1.5 : 0))).stragglers, []);
  assert.deepEqual(findStragglers(run(2, 6, (r) => (r === 1 ? 30 : 0))).stragglers, []);
  assert.deepEqual(findStragglers(run(8, 1, (r) => (r === 1 ? 30 : 0))).stragglers, [], 'one step is not "most steps"');
  // Events of an earlier attempt are not this attempt's.
  assert.deepEqual(findStragglers(run(8, 6, (r, s) => (r === 5 && s < 4 ? 20 : 0)), 350).stragglers, []);
});

test('an even ramp over 19 s is one skew finding in rank order, never warnings naming ranks', () => {
  const ranks = 96;
  const events = run(ranks, 8, (r) => (19 * r) / (ranks - 1));
  const { stragglers, skew } = findStragglers(events);
  assert.deepEqual(stragglers, []);
  assert.ok(skew);
  assert.equal(skew.order, 'rank');
  assert.deepEqual([skew.first, skew.last, skew.ranks, skew.steps, skew.skewedSteps], [0, 95, 96, 8, 8]);
  assert.ok(Math.abs(skew.spread - 19.2) < 0.11, `spread ${skew.spread}`);
  const adv = advise(events);
  assert.equal(adv.filter((a) => a.level === 'warning').length, 0, JSON.stringify(adv));
  const skews = adv.filter((a) => a.message.startsWith('skew'));
  assert.equal(skews.length, 1);
  assert.equal(skews[0]!.level, 'info');
  assert.match(skews[0]!.message, /spread over 19\.\d s .*in rank order \(rank 0 first, rank 95 last\).*one rank at a time/);
  assert.equal(laneStartLags(events.map((e) => ({ ...e, lanes: [`${e.node}:${e.rank % 4}`] }))).filter((l) => l.straggler).length, 0);
  // A reverse ramp says so.
  assert.equal(findStragglers(run(ranks, 4, (r) => (19 * (ranks - 1 - r)) / (ranks - 1))).skew?.order, 'reverse');
});

test('the health board scores a step by its outlier rank, and a ramp as no outlier', () => {
  const board = (events: StragglerPhase[]) => {
    const metrics = [0, 1, 2].map((s) => ({ ts: s * 100 + 99, step: s, step_key: 'rollout/step', metrics: { 'perf/step_time': 99 } }));
    return healthBoard({ metrics, phases: events.map((e) => ({ ...e, role: 'train' })), topology: [], steps: [0, 1, 2].map((step) => ({ step, summary: null, groups: null })), startTs: null } as never);
  };
  const late = board(run(8, 3, (r) => (r === 5 ? 12 : 0)));
  const cell = late.rows.find((r) => r.step === 1)!.cells.straggler;
  assert.ok(Math.abs(cell.value! - 12.1) < 1e-9, String(cell.value));
  assert.match(cell.detail, /^rank 5 entered this step 1\d\.\d s after the median rank/);
  const ramp = board(run(96, 3, (r) => (19 * r) / 95)).rows.find((r) => r.step === 1)!.cells.straggler;
  assert.equal(ramp.value, 0);
  assert.match(ramp.detail, /no rank is an outlier; the 96 ranks entered within 19\.\d s/);
});

/** Peers jittered by up to `jitter` s (deterministic per rank and step). */
const jittered = (seed: number, jitter: number) => (r: number, s: number) => (((r * 7919 + s * 104729 + seed) % 1000) / 1000) * jitter;

test('property: one or two late ranks among jittered peers are found, every step, on nodes of any size', () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 8, max: 64 }),
      fc.integer({ min: 2, max: 8 }),
      fc.double({ min: 0, max: 1.5, noNaN: true }),
      fc.double({ min: 6, max: 30, noNaN: true }),
      fc.uniqueArray(fc.nat(), { minLength: 1, maxLength: 2 }),
      fc.array(fc.integer({ min: 1, max: 8 }), { minLength: 1, maxLength: 6 }),
      fc.nat(1000),
      (ranks, steps, jitter, lateBy, picks, nodeSizes, seed) => {
        const late = new Set(picks.map((p) => p % ranks));
        // Nodes of different sizes, cycling through the drawn sizes.
        const nodeOf = (r: number) => {
          let n = 0;
          for (let left = r; ; n++) {
            const size = nodeSizes[n % nodeSizes.length]!;
            if (left < size) return `n${n}`;
            left -= size;
          }
        };
        const j = jittered(seed, jitter);
        const { stragglers, skew } = findStragglers(run(ranks, steps, (r, s) => j(r, s) + (late.has(r) ? lateBy : 0), nodeOf));
        assert.deepEqual(stragglers.map((s) => s.rank).sort((a, b) => a - b), [...late].sort((a, b) => a - b));
        for (const s of stragglers) {
          assert.equal(s.node, nodeOf(s.rank));
          assert.equal(s.lateSteps, steps);
          assert.ok(Math.abs(s.lag - lateBy) < jitter + 0.3, `lag ${s.lag} vs ${lateBy}`);
        }
        assert.equal(skew, null);
      },
    ),
    { numRuns: 150 },
  );
});

test('property: an even ramp of any length and span over 5 s is a skew and never a straggler', () => {
  fc.assert(
    fc.property(fc.integer({ min: 8, max: 128 }), fc.integer({ min: 2, max: 8 }), fc.double({ min: 5.5, max: 120, noNaN: true }), fc.boolean(), (ranks, steps, span, reverse) => {
      const { stragglers, skew } = findStragglers(run(ranks, steps, (r) => (span * (reverse ? ranks - 1 - r : r)) / (ranks - 1)));
      assert.deepEqual(stragglers, []);
      assert.ok(skew);
      assert.equal(skew.order, reverse ? 'reverse' : 'rank');
      assert.ok(Math.abs(skew.spread - span) < 0.3);
    }),
    { numRuns: 150 },
  );
});

test('property: a rank late in only one step is never a straggler', () => {
  fc.assert(
    fc.property(fc.integer({ min: 8, max: 64 }), fc.integer({ min: 2, max: 8 }), fc.nat(), fc.nat(), fc.double({ min: 3, max: 300, noNaN: true }), (ranks, steps, rank, step, lateBy) => {
      const found = findStragglers(run(ranks, steps, (r, s) => (r === rank % ranks && s === step % steps ? lateBy : 0)));
      // With two steps, one late step is half, not most.
      assert.deepEqual(found.stragglers, []);
    }),
    { numRuns: 150 },
  );
});
