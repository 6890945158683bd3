import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { RunCatalog } from '../queries/runAnswers.ts';
import { EventFeed, diffCatalog, emptyCatalog, startFollow } from './events.ts';

const catalog = (over: Partial<RunCatalog> = {}): RunCatalog => ({ ...emptyCatalog(), ...over });

test('diffCatalog announces only what was added or moved', () => {
  const before = catalog({
    steps: [0, 1],
    rollout_ids: { train: [0, 1], eval: [0] },
    metric_keys: ['a'],
    engine_metric_keys: ['e'],
    lanes: ['n:0'],
    time_range: [0, 10],
  });
  assert.deepEqual(diffCatalog(before, before), []);
  const after = catalog({
    steps: [0, 1, 2],
    rollout_ids: { train: [0, 1, 2], eval: [0] },
    metric_keys: ['a', 'b'],
    engine_metric_keys: ['e'],
    lanes: ['n:0', 'n:1'],
    time_range: [0, 12],
  });
  assert.deepEqual(diffCatalog(before, after), [
    { event: 'steps', data: { steps: [2] } },
    { event: 'rollout', data: { train: [2], eval: [] } },
    { event: 'keys', data: { metric_keys: ['b'], engine_metric_keys: [] } },
    { event: 'lanes', data: { lanes: ['n:1'] } },
    { event: 'edge', data: { time_range: [0, 12] } },
  ]);
  assert.deepEqual(diffCatalog(emptyCatalog(), catalog({ time_range: [1, 2] })), [{ event: 'edge', data: { time_range: [1, 2] } }]);
});

test('the follower advances, diffs and publishes; a failing tick does not stop it', async () => {
  let current = catalog({ steps: [0] });
  let advances = 0;
  let fail = false;
  const feed = new EventFeed();
  const seen: string[] = [];
  const unsubscribe = feed.subscribe((e) => seen.push(e.event));
  const follower = startFollow({
    advance: () => {
      advances++;
      if (fail) throw new Error('corrupt');
    },
    catalog: async () => current,
    feed,
    timer: false,
  });
  assert.deepEqual(await follower.tick(), []);
  current = catalog({ steps: [0, 1] });
  fail = true;
  await assert.rejects(follower.tick(), /corrupt/);
  fail = false;
  assert.deepEqual((await follower.tick()).map((e) => e.event), ['steps']);
  assert.deepEqual(seen, ['steps']);
  assert.equal(advances, 3);
  unsubscribe();
  assert.equal(feed.clients, 0);
  follower.stop();
});
