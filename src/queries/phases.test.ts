import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { appendFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { diffJson, fixtureTelemetry, loadGoldens } from '../../test/support/fixtures.ts';
import { TelemetryStore } from '../run/telemetry/store.ts';
import { resolveLanes } from './lanes.ts';
import { phasesByLane } from './phases.ts';
import { outliers } from './outliers.ts';

function query(request: string): URLSearchParams {
  return new URL(request, 'http://x').searchParams;
}

function num(v: string | null): number | undefined {
  return v === null ? undefined : Number(v);
}

describe('phasesByLane on the demo run', () => {
  const fixture = fixtureTelemetry();

  const goldens = loadGoldens().filter((g) => g.request.startsWith('/api/timeline/phases'));

  test('has the phase goldens to check', () => {
    assert.ok(goldens.filter((g) => g.status === 200).length >= 36);
  });

  for (const g of goldens.filter((x) => x.status === 200)) {
    test(`${g.file} ${g.request}`, () => {
      const p = query(g.request);
      const lanes = resolveLanes(p.get('lanes'), fixture.store.laneIndex());
      const phases = phasesByLane(fixture.store, { t0: num(p.get('t0')), t1: num(p.get('t1')), lanes });
      assert.equal(diffJson({ phases }, g.body), null);
    });
  }

});

describe('phasesByLane semantics', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'rlsight-phases-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  const line = (o: object): string => JSON.stringify(o) + '\n';
  const ev = (name: string, t0: number, t1: number, gpu: number, extra: object = {}) =>
    line({ name, t0, t1, node: '10.0.0.1', gpus: [gpu], rank: gpu, role: 'train', ...extra });

  test('an open marker is clipped to the data edge; its closed twin wins', () => {
    const d = join(dir, 'open');
    mkdirSync(join(d, 'phases'), { recursive: true });
    mkdirSync(join(d, 'gpu_util'), { recursive: true });
    // 1970-01-12 13:00 UTC = 997200
    writeFileSync(join(d, 'phases', '19700112_13.jsonl'), ev('warmup', 997210, -1, 0) + ev('warmup', 997210, 997240, 0) + ev('rollout', 997300, -1, 0));
    writeFileSync(join(d, 'gpu_util', '19700112_15.jsonl'), line({ ts: 1004700, node: '10.0.0.1', gpu: 0, util: 1, mem_mb: 1, power_w: 1 }));
    const store = TelemetryStore.open(d);
    assert.deepEqual(store.timeRange(), [997210, 1004700]);
    const rows = phasesByLane(store);
    assert.deepEqual(
      rows.map((r) => [r.name, r.t0, r.t1]),
      [
        ['warmup', 997210, 997240],
        ['rollout', 997300, 1004700],
      ],
    );
    // found two hours after its start hour, by a window that only covers the edge
    assert.deepEqual(phasesByLane(store, { t0: 1004000, t1: 1004500 }).map((r) => r.name), ['rollout']);
  });

  test('open markers sharing a start are each matched to their own closed twin, across hours', () => {
    const d = join(dir, 'shared-start');
    mkdirSync(join(d, 'phases'), { recursive: true });
    // eight ranks open 'rollout' at one stamp; ranks 0-5 close it the next hour, 6 and 7 never do
    let opens = '';
    let closes = '';
    for (let g = 0; g < 8; g++) opens += ev('rollout', 997210.25, -1, g);
    for (let g = 0; g < 6; g++) closes += ev('rollout', 997210.25, 1000900, g);
    // a different name at the same stamp is no twin of theirs
    closes += ev('warmup', 997210.25, 1000901, 7);
    writeFileSync(join(d, 'phases', '19700112_13.jsonl'), opens);
    writeFileSync(join(d, 'phases', '19700112_14.jsonl'), closes);
    const store = TelemetryStore.open(d);
    const rows = phasesByLane(store).map((r) => [r.name, r.gpu, r.t1]);
    assert.deepEqual(rows, [
      ...[0, 1, 2, 3, 4, 5].map((g) => ['rollout', g, 1000900]),
      ['rollout', 6, 1000901],
      ['rollout', 7, 1000901],
      ['warmup', 7, 1000901],
    ]);
  });

  test('an open marker a killed trainer left ends where its rank next starts a phase on its GPU, marked unfinished', () => {
    const d = join(dir, 'killed');
    mkdirSync(join(d, 'phases'), { recursive: true });
    mkdirSync(join(d, 'gpu_util'), { recursive: true });
    const T = 1000000;
    writeFileSync(
      join(d, 'phases', '19700112_13.jsonl'),
      // rank 0 is killed in update_weights; its restarted process opens train_wait 12 s later
      ev('actor_train', T, T + 20, 0) +
        ev('update_weights', T + 28, -1, 0) +
        // another rank's phase on the same GPU is not rank 0 moving on
        line({ name: 'other', t0: T + 30, t1: T + 31, node: '10.0.0.1', gpus: [0], rank: 5, role: 'train' }) +
        ev('train_wait', T + 40, -1, 0) +
        ev('train_wait', T + 40, T + 41, 0) +
        ev('actor_train', T + 41, T + 80, 0) +
        // rank 1 is still in update_weights at the data's end: it may still be running
        ev('update_weights', T + 28, -1, 1),
    );
    writeFileSync(join(d, 'gpu_util', '19700112_13.jsonl'), line({ ts: T + 259, node: '10.0.0.1', gpu: 0, util: 1, mem_mb: 1, power_w: 1 }));
    const store = TelemetryStore.open(d);
    const rows = phasesByLane(store).map((r) => [r.gpu, r.name, r.t0 - T, r.t1 - T, r.unfinished ? 'unfinished' : r.open ? 'open' : 'closed']);
    assert.deepEqual(rows, [
      [0, 'actor_train', 0, 20, 'closed'],
      [0, 'update_weights', 28, 40, 'unfinished'],
      [0, 'other', 30, 31, 'closed'],
      [0, 'train_wait', 40, 41, 'closed'],
      [0, 'actor_train', 41, 80, 'closed'],
      [1, 'update_weights', 28, 259, 'open'],
    ]);
    // a window holding its start but not the phase that ended it answers it ended the same
    const early = phasesByLane(store, { t0: T + 25, t1: T + 35, lanes: new Set(['10.0.0.1:0']) }).find((r) => r.name === 'update_weights');
    assert.deepEqual([early?.t1, early?.unfinished], [T + 40, true]);
    assert.deepEqual(phasesByLane(store, { t0: T + 45, t1: T + 50, lanes: new Set(['10.0.0.1:0']) }).map((r) => r.name), ['actor_train'], 'not drawn past its end');
    // nor ranked among the slowest: it never closed, so it has no duration
    assert.deepEqual(outliers(store, { criterion: 'slowest_phase:update_weights' }).outliers.map((o) => [o.gpu, o.score]), [[1, 231]]);
  });

  test('a lone trainer killed inside a phase, with nothing written after it: the phase is open at the data edge, not lost', () => {
    const d = join(dir, 'killed-alone');
    mkdirSync(join(d, 'phases'), { recursive: true });
    const T = 1000000;
    writeFileSync(join(d, 'phases', '19700112_13.jsonl'), ev('actor_train', T, T + 20, 0) + ev('update_weights', T + 28, -1, 0));
    const store = TelemetryStore.open(d);
    const rows = phasesByLane(store).map((r) => [r.name, r.t0 - T, r.t1 - T, r.open ?? false, r.unfinished ?? false]);
    assert.deepEqual(rows, [
      ['actor_train', 0, 20, false, false],
      ['update_weights', 28, 28, true, false],
    ]);
    // a window holding its start holds it
    assert.deepEqual(phasesByLane(store, { t0: T + 25, t1: T + 30 }).map((r) => [r.name, r.open]), [['update_weights', true]]);
  });

  test("a rollout manager's open marker ends where the manager's next phase starts, on every engine lane", () => {
    const d = join(dir, 'killed-manager');
    mkdirSync(join(d, 'phases'), { recursive: true });
    const T = 1000000;
    writeFileSync(
      join(d, 'topology.jsonl'),
      line({ ts: T, engines: [{ addr: 'http://10.0.0.7:30000', worker_type: 'regular', engine_rank: 0, gpus: [['10.0.0.7', 0], ['10.0.0.7', 1]], gpu_uuids: [null, null] }] }),
    );
    const rm = (t0: number, t1: number): string => line({ name: 'rollout', t0, t1, node: '10.0.0.2', gpus: [], rank: -1, role: 'rollout_manager' });
    writeFileSync(join(d, 'phases', '19700112_13.jsonl'), rm(T + 10, -1) + rm(T + 100, -1) + rm(T + 100, T + 150) + rm(T + 200, -1));
    writeFileSync(join(d, 'metrics.jsonl'), line({ ts: T + 300, step_key: null, step: null, metrics: {} }));
    const rows = phasesByLane(TelemetryStore.open(d)).map((r) => [r.gpu, r.t0 - T, r.t1 - T, r.unfinished ?? false]);
    assert.deepEqual(rows, [
      [0, 10, 100, true],
      [0, 100, 150, false],
      [0, 200, 300, false],
      [1, 10, 100, true],
      [1, 100, 150, false],
      [1, 200, 300, false],
    ]);
  });

  test('phases are found by the hour they end in (4 h forward slack)', () => {
    const d = join(dir, 'straddle');
    mkdirSync(join(d, 'phases'), { recursive: true });
    writeFileSync(join(d, 'phases', '19700112_14.jsonl'), ev('actor_train', 1000700, 1001000, 1));
    const store = TelemetryStore.open(d);
    assert.equal(store.partitions.phases.cachedKeys().length, 0, 'opening parses no partition');
    assert.deepEqual(phasesByLane(store, { t0: 1000710, t1: 1000720 }).map((r) => r.name), ['actor_train']);
    assert.deepEqual(phasesByLane(store, { t0: 1001000, t1: 1001100 }), []);
  });

  test('the initialize band appears only when the window covers the run start', () => {
    const d = join(dir, 'init');
    mkdirSync(join(d, 'phases'), { recursive: true });
    writeFileSync(join(d, 'meta.json'), JSON.stringify({ run_name: 'r', start_ts: 1000000, args: {}, schema_version: 1 }, null, 1));
    writeFileSync(join(d, 'phases', '19700112_13.jsonl'), ev('actor_train', 1000050, 1000060, 0) + ev('actor_train', 1000000, 1000010, 1));
    const store = TelemetryStore.open(d);
    const all = phasesByLane(store);
    assert.deepEqual(
      all.map((r) => [r.name, r.gpu, r.t0, r.t1, r.role, r.rank]),
      [
        ['initialize', 0, 1000000, 1000050, 'derived', -1],
        ['actor_train', 0, 1000050, 1000060, 'train', 0],
        ['actor_train', 1, 1000000, 1000010, 'train', 1],
      ],
    );
    assert.equal(phasesByLane(store, { t0: 1000001 }).filter((r) => r.name === 'initialize').length, 0);
    assert.deepEqual(phasesByLane(store, { lanes: new Set(['10.0.0.1:1']) }).map((r) => r.gpu), [1]);
  });

  test('rollout-manager phases on GPU-less (external) engines fall back to the lanes of the engine host', () => {
    const d = join(dir, 'external');
    mkdirSync(join(d, 'phases'), { recursive: true });
    mkdirSync(join(d, 'gpu_util'), { recursive: true });
    writeFileSync(
      join(d, 'topology.jsonl'),
      line({ ts: 1000000, engines: [{ addr: 'http://10.0.0.7:30000', worker_type: 'external', engine_rank: -1, gpus: [], gpu_uuids: [] }] }),
    );
    writeFileSync(
      join(d, 'gpu_util', '19700112_13.jsonl'),
      [1, 0].map((gpu) => line({ ts: 1000001, node: '10.0.0.7', gpu, util: 5, mem_mb: 5, power_w: 5 })).join('') +
        line({ ts: 1000001, node: '10.0.0.8', gpu: 0, util: 5, mem_mb: 5, power_w: 5 }),
    );
    writeFileSync(join(d, 'phases', '19700112_13.jsonl'), line({ name: 'rollout', t0: 999990, t1: 1000020, node: '10.0.0.2', gpus: [], rank: -1, role: 'rollout_manager' }));
    const store = TelemetryStore.open(d);
    assert.deepEqual(
      phasesByLane(store).map((r) => [r.node, r.gpu, r.t0, r.t1, r.role]),
      [
        ['10.0.0.7', 0, 1000000, 1000020, 'rollout_manager'],
        ['10.0.0.7', 1, 1000000, 1000020, 'rollout_manager'],
      ],
    );
  });

  test('a rollout-manager phase is dropped without topology', () => {
    const d = join(dir, 'notopo');
    mkdirSync(join(d, 'phases'), { recursive: true });
    writeFileSync(join(d, 'phases', '19700112_13.jsonl'), line({ name: 'rollout', t0: 1000000, t1: 1000020, node: 'x', gpus: [], rank: -1, role: 'rollout_manager' }));
    assert.deepEqual(phasesByLane(TelemetryStore.open(d)), []);
  });

  test('events appended after open show up after follow()', () => {
    const d = join(dir, 'follow');
    mkdirSync(join(d, 'phases'), { recursive: true });
    const f = join(d, 'phases', '19700112_13.jsonl');
    writeFileSync(f, ev('a', 1000000, 1000001, 0));
    const store = TelemetryStore.open(d);
    assert.equal(phasesByLane(store).length, 1);
    appendFileSync(f, ev('b', 1000002, 1000003, 0));
    assert.equal(phasesByLane(store).length, 1, 'no new data before follow');
    store.follow();
    assert.deepEqual(phasesByLane(store).map((r) => r.name), ['a', 'b']);
  });
});
