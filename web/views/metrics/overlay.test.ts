import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { RunListing } from '../../../src/wire/index.ts';
import { drawnRuns, planX, type SeriesX } from './overlay.ts';

const run = (id: string) => ({ id, name: id }) as RunListing;
const all = ['healthy', 'collapse', 'slime-trace'].map(run);
const ids = (rs: readonly RunListing[]) => rs.map((r) => r.id);

describe('drawnRuns', () => {
  it('the header’s run is drawn even when the ticked runs do not hold it, first', () => {
    assert.deepEqual(ids(drawnRuns(all, [all[0]!, all[1]!], 'slime-trace')), ['slime-trace', 'healthy', 'collapse']);
  });
  it('ticked runs that hold the header’s run are drawn as they are', () => {
    assert.deepEqual(ids(drawnRuns(all, [all[1]!, all[0]!], 'collapse')), ['collapse', 'healthy']);
    assert.deepEqual(ids(drawnRuns(all, [all[0]!], null)), ['healthy']);
    // a header run the server does not list (an unknown run= is said elsewhere) adds nothing
    assert.deepEqual(ids(drawnRuns(all, [all[0]!], 'nope')), ['healthy']);
  });
});

const series = (run: string | null, axis: string, points: number, timed: number): SeriesX => ({ run, axis, points, timed });

describe('planX', () => {
  it('a time axis draws only the runs whose points carry a time, and names the others with why', () => {
    const plan = planX('rel', 'rollout/response_len/max', [series('healthy', 'rollout/step', 200, 200), series('slime-trace', 'rollout/step', 2, 0)]);
    assert.equal(plan.onTime, true);
    assert.deepEqual(plan.drawn, [0]);
    assert.equal(plan.xLabel, 'time since start (s)');
    assert.deepEqual(plan.leftOut, [{ run: 'slime-trace', why: 'its points are counted on rollout/step and carry no time' }]);
    assert.equal(plan.note, undefined);
    const wall = planX('time', 'dump/reward_mean', [series('healthy', 'rollout/step', 3, 3), series('slime-trace', 'rollout/step', 2, 0), series('empty', 'rollout/step', 0, 0)]);
    assert.deepEqual(wall.drawn, [0, 2], 'a run with no points has nothing to misplace');
    assert.equal(wall.xLabel, 'time (UTC)');
    assert.deepEqual(wall.leftOut, [{ run: 'slime-trace', why: 'dump/* aggregates are computed per step and carry no time' }]);
  });

  it('with no timed series the chart stays on its steps and says so (one run as before)', () => {
    const one = planX('time', 'rollout/x', [series(null, 'rollout/step', 5, 0)]);
    assert.deepEqual([one.onTime, one.drawn, one.xLabel, one.note], [false, [0], 'rollout/step', 'on rollout/step: this key has no time per point']);
    const dump = planX('rel', 'dump/reward_mean', [series('a', 'rollout/step', 5, 0), series('b', 'rollout/step', 2, 0)]);
    assert.deepEqual([dump.onTime, dump.drawn, dump.note], [false, [0, 1], 'on rollout/step: dump/* aggregates are computed per step and carry no time']);
    assert.deepEqual(dump.leftOut, []);
    // nothing recorded at all: the chosen time axis, nothing to say
    const none = planX('time', 'rollout/x', [series(null, 'rollout/step', 0, 0)]);
    assert.deepEqual([none.onTime, none.note], [true, undefined]);
  });

  it('runs on different step keys: the axis names each key with its runs, each series its own key', () => {
    const plan = planX('step', 'rollout/raw_reward', [series('healthy', 'rollout/step', 200, 200), series('slime-trace', 'rollout/step', 2, 0), series('tbrun', 'tensorboard/step', 40, 40)]);
    assert.deepEqual(plan.drawn, [0, 1, 2]);
    assert.equal(plan.xLabel, 'rollout/step (healthy, slime-trace) · tensorboard/step (tbrun)');
    assert.deepEqual(plan.ownAxis, ['rollout/step', 'rollout/step', 'tensorboard/step']);
    assert.equal(plan.note, 'the runs count different steps (rollout/step, tensorboard/step), lined up by number');
    // one step key: named plainly, no note
    const same = planX('step', 'rollout/raw_reward', [series('healthy', 'rollout/step', 200, 200), series('collapse', 'rollout/step', 200, 200)]);
    assert.deepEqual([same.xLabel, same.ownAxis, same.note], ['rollout/step', [undefined, undefined], undefined]);
  });
});
