import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { TrajectoryEvent } from '../run/telemetry/records.ts';
import { assembleTrajectoryLane, assembleTrajectoryLanes } from './trajectoryLanes.ts';

function ev(ts: number, kind: string, turn = -1, weight_version = '', detail = '', sample_index = 0, group_index = 0): TrajectoryEvent {
  return { ts, kind, sample_index, group_index, turn, weight_version, detail };
}

test('pairs gen/tool spans by (kind, turn), drops the coarse gen span, collects versions', () => {
  const lane = assembleTrajectoryLane([
    ev(30, 'attempt_start', -1, '0'),
    ev(30.5, 'gen_start', -1, '0'),
    ev(31, 'gen_start', 1, '0'),
    ev(36, 'gen_end', 1, '0', '12'),
    ev(36, 'tool_start', 1, '0'),
    ev(39, 'tool_end', 1, '0', '1 calls'),
    ev(39, 'gen_start', 2, ''),
    ev(44, 'gen_end', 2, '1'),
    ev(45, 'attempt_end', -1, '1', 'completed'),
  ]);
  assert.deepEqual(lane, {
    sample_index: 0,
    group_index: 0,
    first_ts: 30,
    last_ts: 45,
    segments: [
      { kind: 'gen', t0: 31, t1: 36, turn: 1, weight_version: '0' },
      { kind: 'tool', t0: 36, t1: 39, turn: 1, weight_version: '0' },
      { kind: 'gen', t0: 39, t1: 44, turn: 2, weight_version: '1' },
    ],
    attempts: [{ t0: 30, t1: 45 }],
    status: 'completed',
    versions: [0, 1],
  });
});

test('attempt_end closes open spans and back-fills empty versions; unmatched ends and pending attempts stay open', () => {
  const lane = assembleTrajectoryLane([
    ev(5, 'tool_end', 3, '2'), // end without start
    ev(10, 'attempt_start'),
    ev(11, 'gen_start', -1, ''),
    ev(20, 'attempt_end', -1, '7', 'aborted'),
    ev(21, 'attempt_start', -1, 'x'),
    ev(22, 'gen_start', -1, '8'),
    ev(23, 'gen_start', -1, '8'), // repeated start: the older one stays open-ended
  ]);
  assert.deepEqual(lane.segments, [
    { kind: 'tool', t0: null, t1: 5, turn: 3, weight_version: '2' },
    { kind: 'gen', t0: 11, t1: 20, turn: -1, weight_version: '7' },
    { kind: 'gen', t0: 22, t1: null, turn: -1, weight_version: '8' },
    { kind: 'gen', t0: 23, t1: null, turn: -1, weight_version: '8' },
  ]);
  assert.deepEqual(lane.attempts, [
    { t0: 10, t1: 20 },
    { t0: 21, t1: null },
  ]);
  assert.equal(lane.status, 'aborted');
  assert.deepEqual(lane.versions, [2, 7, 8]);
  assert.equal(lane.first_ts, 5);
  assert.equal(lane.last_ts, 23);
});

test('stable ts sort keeps file order for same-ts events; lanes sorted by first_ts; sample filter', () => {
  const events = [
    ev(50, 'attempt_start', -1, '', '', 9, 4),
    ev(40, 'attempt_start', -1, '', '', 3, 1),
    ev(41, 'gen_start', 1, '', '', 3, 1),
    ev(42, 'gen_end', 1, '', '', 3, 1),
    ev(42, 'gen_start', 1, '', '', 3, 1), // same ts as the end: must come after it
    ev(43, 'gen_end', 1, '', '', 3, 1),
  ];
  const lanes = assembleTrajectoryLanes(events);
  assert.deepEqual(lanes.map((l) => l.sample_index), [3, 9]);
  assert.deepEqual(lanes[0].segments.map((s) => [s.t0, s.t1]), [
    [41, 42],
    [42, 43],
  ]);
  assert.equal(lanes[0].status, null);
  assert.deepEqual(assembleTrajectoryLanes(events, new Set([9])).map((l) => l.group_index), [4]);
  assert.deepEqual(assembleTrajectoryLanes(events, new Set([77])), []);
});

test('every trajectories golden is reproduced (sample set from the step summary or the one sample asked)', async () => {
  const { join } = await import('node:path');
  const { copyFixtureRun, diffJson, loadGoldens } = await import('../../test/support/fixtures.ts');
  const { TelemetryStore } = await import('../run/telemetry/store.ts');
  const { rolloutTrajectories } = await import('./trajectoryLanes.ts');
  const run = copyFixtureRun();
  try {
    const store = TelemetryStore.open(join(run.dir, 'dashboard'));
    const goldens = loadGoldens();
    const summaryIndices = (rid: number): number[] => {
      const s = goldens.find((g) => g.request === `/api/rollout/${rid}/summary` && g.status === 200);
      assert.ok(s, `summary golden of step ${rid}`);
      return s.body.rows.map((r: { sample_index: number }) => r.sample_index);
    };
    const cases = goldens.filter((g) => g.group === 'trajectories' && g.status === 200);
    assert.ok(cases.length >= 13);
    for (const g of cases) {
      const url = new URL(g.request, 'http://x');
      const rid = Number(/\/api\/rollout\/(\d+)\//.exec(url.pathname)![1]);
      const one = url.searchParams.get('sample_index');
      const answer = rolloutTrajectories(store, rid, one === null ? summaryIndices(rid) : [Number(one)]);
      const d = diffJson(answer, g.body);
      assert.equal(d, null, `${g.file} ${g.request}: ${d}`);
    }
  } finally {
    run.dispose();
  }
});

test('a step no record says the trainer took has its lanes, and no consume line at the data edge', async () => {
  const { join } = await import('node:path');
  const { readFileSync, writeFileSync } = await import('node:fs');
  const { copyFixtureRun } = await import('../../test/support/fixtures.ts');
  const { TelemetryStore } = await import('../run/telemetry/store.ts');
  const { rolloutTrajectories } = await import('./trajectoryLanes.ts');
  const run = copyFixtureRun();
  try {
    // step 2's record (its step time and wait ratio) left out of metrics.jsonl
    const metrics = join(run.dir, 'dashboard', 'metrics.jsonl');
    writeFileSync(metrics, readFileSync(metrics, 'utf8').split('\n').filter((l) => !l.includes('"step":2,')).join('\n'));
    const store = TelemetryStore.open(join(run.dir, 'dashboard'));
    const answer = rolloutTrajectories(store, 2, [64, 65]);
    assert.equal(answer.consume_ts, null);
    assert.deepEqual(answer.lanes.map((l) => l.sample_index), [64, 65]);
    // a step with its record keeps its consume line
    assert.equal(typeof rolloutTrajectories(store, 1, [32]).consume_ts, 'number');
  } finally {
    run.dispose();
  }
});
