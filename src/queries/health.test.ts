import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { MetricsRecord, TopologySnapshot } from '../run/telemetry/records.ts';
import { failures, healthBoard, healthSignals, parseSignalList, type HealthInputs, type HealthPhase, type HealthSignal, type HealthStep } from './health.ts';
import type { TableRow } from './rollouts.ts';

/** A healthy sample; `patch` makes it sick in one way. */
function sample(i: number, group: number, patch: Partial<TableRow> = {}): TableRow {
  return {
    sample_index: i,
    group_index: group,
    raw_reward: i % 2,
    response_length: 100,
    truncated: false,
    mixed_version: false,
    staleness: 0,
    mean_abs_lp_diff: 0.01,
    mean_imp_ratio: 1.0,
    ...patch,
  };
}

function groupsOf(rows: readonly TableRow[]): TableRow[] {
  const by = new Map<number, number[]>();
  for (const r of rows) by.set(r.group_index as number, [...(by.get(r.group_index as number) ?? []), r.raw_reward as number]);
  return [...by].map(([g, rs]) => ({ group_index: g, zero_std: rs.every((x) => x === rs[0]) }));
}

/** Four steps of 8 samples in 4 groups (rewards alternate, so no group is zero-std); `sick` alters step 2. */
function run(sick: (s: TableRow) => TableRow = (s) => s, extra: Partial<HealthInputs> = {}): HealthInputs {
  const steps: HealthStep[] = [0, 1, 2, 3].map((step) => {
    const rows = Array.from({ length: 8 }, (_, k) => sample(step * 8 + k, k >> 1)).map((s) => (step === 2 ? sick(s) : s));
    return { step, summary: rows, groups: groupsOf(rows) };
  });
  const metrics: MetricsRecord[] = [0, 1, 2, 3].map((step) => ({ ts: 1000 + 100 * (step + 1), step_key: 'rollout/step', step, metrics: { 'perf/step_time': 100 } }));
  return { steps, metrics, topology: [], phases: [], startTs: 1000, ...extra };
}

function levels(inputs: HealthInputs, signal: HealthSignal): string[] {
  return healthBoard(inputs).rows.map((r) => r.cells[signal].level);
}

const fired = (inputs: HealthInputs, signal: HealthSignal): number[] =>
  healthBoard(inputs).fired.filter((f) => f.signal === signal).map((f) => f.step);

test('a healthy run fires nothing', () => {
  const answer = healthBoard(run());
  assert.deepEqual(answer.fired, []);
  assert.equal(answer.rows.length, 4);
});

test('zero_std fires when a step’s groups stop varying', () => {
  assert.deepEqual(fired(run((s) => ({ ...s, raw_reward: 1 })), 'zero_std'), [2]);
  assert.deepEqual(fired(run(), 'zero_std'), []);
});

test('lp_drift fires on a step whose log-probs drift, pointing at the worst sample', () => {
  const inputs = run((s) => ({ ...s, mean_abs_lp_diff: s.sample_index === 19 ? 0.9 : 0.05 }));
  assert.deepEqual(fired(inputs, 'lp_drift'), [2]);
  assert.deepEqual(healthBoard(inputs).rows[2].cells.lp_drift.evidence, { view: 'sample', step: 2, sample_index: 19, color: 'lp_diff' });
  assert.deepEqual(fired(run(), 'lp_drift'), []);
});

test('imp_ratio fires on importance-ratio outliers', () => {
  assert.deepEqual(fired(run((s) => (s.sample_index === 17 ? { ...s, mean_imp_ratio: 3.5 } : s)), 'imp_ratio'), [2]);
  assert.deepEqual(fired(run((s) => ({ ...s, mean_imp_ratio: 1.1 })), 'imp_ratio'), []);
});

test('truncation fires when many samples hit the length limit', () => {
  assert.deepEqual(fired(run((s) => ({ ...s, truncated: (s.sample_index as number) % 2 === 0 })), 'truncation'), [2]);
  assert.deepEqual(fired(run((s) => ({ ...s, truncated: s.sample_index === 16 })), 'truncation'), []);
});

test('mixed_version and staleness fire on off-policy samples', () => {
  assert.deepEqual(fired(run((s) => ({ ...s, mixed_version: true })), 'mixed_version'), [2]);
  assert.deepEqual(fired(run((s) => ({ ...s, staleness: s.sample_index === 20 ? 3 : 0 })), 'staleness'), [2]);
  assert.deepEqual(levels(run((s) => ({ ...s, staleness: 1 })), 'staleness'), ['ok', 'ok', 'ok', 'ok']);
});

test('reward_jump and length_jump fire on the step that jumps and the one after', () => {
  assert.deepEqual(fired(run((s) => ({ ...s, raw_reward: ((s.sample_index as number) % 2) * 0.1 })), 'reward_jump'), [2, 3]);
  assert.deepEqual(fired(run((s) => ({ ...s, response_length: 300 })), 'length_jump'), [2, 3]);
  assert.deepEqual(fired(run((s) => ({ ...s, response_length: 110 })), 'length_jump'), []);
  // The first step has nothing to jump from.
  assert.equal(healthBoard(run()).rows[0].cells.reward_jump.level, 'none');
});

test('a run dumped from a later step on: its first dumped step jumps from the step before as both were logged', () => {
  const late = run();
  late.steps = late.steps.filter((s) => 'step' in s && s.step >= 2);
  late.metrics = late.metrics.map((m) => ({ ...m, metrics: { ...m.metrics, 'rollout/rewards_mean': m.step === 2 ? 0.9 : 0.5, 'rollout/response_len/mean': m.step === 2 ? 100 : 200 } }));
  const first = healthBoard(late).rows[0];
  assert.equal(first.step, 2);
  assert.equal(first.cells.reward_jump.value, 0.9 - 0.5);
  assert.equal(first.cells.reward_jump.level, 'fire');
  assert.equal(first.cells.reward_jump.detail, 'logged mean reward 0.500 → 0.900 (step 1 was not dumped)');
  assert.deepEqual(first.cells.reward_jump.evidence, { view: 'metrics', keys: ['rollout/rewards_mean'] });
  assert.equal(first.cells.length_jump.value, 0.5);
  assert.equal(first.cells.length_jump.detail, 'logged mean response length 200 → 100 (step 1 was not dumped)');
  // the next dumped step compares with this one, as before
  assert.match(healthBoard(late).rows[1].cells.reward_jump.detail!, /^mean reward /);
  // nothing logged before the first dumped step: nothing to jump from
  assert.equal(healthBoard(run()).rows[0].cells.reward_jump.detail, 'first step');
});

test('a damaged step: its jumps compare what the run logged at both steps, never a dumped mean with a logged one', () => {
  const damaged = (logged: number[]): HealthInputs => {
    const inputs = run();
    inputs.steps = inputs.steps.map((s) => ('step' in s && s.step === 2 ? { step: 2, summary: null, groups: null, damaged: 'rollout_data/2.pt: truncated archive' } : s));
    inputs.steps = inputs.steps.map((s) => ('summary' in s && s.step === 3 && s.summary ? { ...s, summary: s.summary.map((r: TableRow) => ({ ...r, response_length: 130 })) } : s));
    // the logged means differ from the dumped ones (100 at every dumped step): a mix of the two would be a jump
    const means: Record<number, [number, number]> = { 1: [0.3, 80], 2: [0.35, 90], 3: [0.5, 100] };
    inputs.metrics = inputs.metrics.map((m) => (m.step !== null && logged.includes(m.step) ? { ...m, metrics: { ...m.metrics, 'rollout/rewards_mean': means[m.step]![0], 'rollout/response_len/mean': means[m.step]![1] } } : m));
    return inputs;
  };
  // every step around the damaged one logged its means: both jumps are between logged values
  const rows = healthBoard(damaged([1, 2, 3])).rows;
  assert.equal(rows[2].cells.length_jump.detail, "logged mean response length 80 → 90 (step 2's dump gives none)");
  assert.equal(rows[2].cells.length_jump.value, 10 / 80);
  assert.deepEqual(rows[2].cells.length_jump.evidence, { view: 'metrics', keys: ['rollout/response_len/mean'] });
  assert.equal(rows[2].cells.reward_jump.detail, "logged mean reward 0.300 → 0.350 (step 2's dump gives none)");
  assert.equal(rows[3].cells.length_jump.detail, "logged mean response length 90 → 100 (step 2's dump gives none)");
  assert.equal(rows[3].cells.reward_jump.detail, "logged mean reward 0.350 → 0.500 (step 2's dump gives none)");
  assert.deepEqual(rows[3].cells.reward_jump.evidence, { view: 'metrics', keys: ['rollout/rewards_mean'] });
  // the dumped steps still compare their dumps
  assert.equal(rows[1].cells.length_jump.detail, 'mean response length 100 → 100');
  // only the damaged step logged its means: nothing on the other side to compare them with
  const alone = healthBoard(damaged([2])).rows;
  assert.equal(alone[2].cells.reward_jump.detail, 'step 2 has no mean reward: not measured across it');
  assert.equal(alone[3].cells.length_jump.detail, 'step 2 has no mean response length: not measured across it');
  assert.equal(alone[3].cells.length_jump.level, 'none');
  // nothing logged at all: the damaged step has no means, and step 3 is not measured across it (not a jump from step 1)
  const bare = healthBoard(damaged([])).rows;
  assert.equal(bare[2].cells.reward_jump.detail, 'no mean reward');
  assert.equal(bare[3].cells.length_jump.detail, 'step 2 has no mean response length: not measured across it');
  assert.equal(bare[3].cells.reward_jump.detail, 'step 2 has no mean reward: not measured across it');
});

test('step_time fires on a step far slower than the median', () => {
  const slow = run();
  slow.metrics = slow.metrics.map((m) => (m.step === 1 ? { ...m, metrics: { 'perf/step_time': 260 } } : m));
  assert.deepEqual(fired(slow, 'step_time'), [1]);
  assert.deepEqual(fired(run(), 'step_time'), []);
});

test('engine_restart fires in the step whose window holds the new address', () => {
  const engine = (addr: string) => ({ addr, worker_type: 'regular', engine_rank: 0, gpus: [['n', 0]] as [string, number][], gpu_uuids: [null] });
  const topology: TopologySnapshot[] = [
    { ts: 1000, engines: [engine('http://n:1'), { ...engine('http://n:2'), engine_rank: 1, gpus: [['n', 1]] }] },
    // While the first engine is down the second is listed at rank 0: positions shift, nothing restarted.
    { ts: 1250, engines: [{ ...engine('http://n:2'), gpus: [['n', 1]] }] },
    { ts: 1260, engines: [engine('http://n:3'), { ...engine('http://n:2'), engine_rank: 1, gpus: [['n', 1]] }] },
  ];
  assert.deepEqual(fired(run(undefined, { topology }), 'engine_restart'), [2]);
  assert.deepEqual(fired(run(undefined, { topology: topology.slice(0, 1) }), 'engine_restart'), []);
  assert.equal(levels(run(), 'engine_restart')[0], 'none');
});

test('straggler fires when one rank starts the step long after the others', () => {
  const phases = (late: number): HealthPhase[] =>
    [0, 1, 2, 3].flatMap((rank) => [
      { name: 'train_wait', t0: 1290, t1: 1350 + (rank === 3 ? late : 0), rank, role: 'train' },
      { name: 'actor_train', t0: 1360 + late, t1: 1390, rank, role: 'train' },
    ]);
  const late = run(undefined, { phases: phases(20) });
  assert.deepEqual(fired(late, 'straggler'), [3]);
  assert.deepEqual(healthBoard(late).rows[3].cells.straggler.evidence, { view: 'timeline', t0: 1300, t1: 1400, lanes: 'rank:3' });
  assert.deepEqual(fired(run(undefined, { phases: phases(1) }), 'straggler'), []);
});

test('an unreadable step shows no data rather than a false alarm', () => {
  const inputs = run();
  inputs.steps = inputs.steps.map((s) => (s.step === 1 ? { ...s, summary: null, groups: null } : s));
  const row = healthBoard(inputs).rows[1];
  assert.equal(row.cells.lp_drift.level, 'none');
  assert.equal(row.cells.zero_std.level, 'none');
});

test('thresholds come from a config; bad configs and signal lists are errors naming the key', () => {
  const signals = healthSignals({ lp_drift: { warn: 0.001, fire: 0.005 } });
  assert.deepEqual(fired({ ...run(), signals }, 'lp_drift'), [0, 1, 2, 3]);
  assert.throws(() => healthSignals({ nope: { fire: 1 } }), /unknown signal 'nope'/);
  assert.throws(() => healthSignals({ lp_drift: { fire: 'x' } }), /lp_drift.fire' must be a finite number/);
  assert.throws(() => healthSignals({ lp_drift: { warn: 2, fire: 1 } }), /warn 2 is above fire 1/);
  assert.throws(() => healthSignals([1]), /expected a JSON object/);
  assert.deepEqual(parseSignalList('lp_drift, zero_std'), ['lp_drift', 'zero_std']);
  assert.throws(() => parseSignalList('lp_drift,bogus'), /unknown signal 'bogus'/);
  assert.throws(() => parseSignalList(','), /expected a comma-separated list/);
});

test('failures lists only the gated signals, with step and reason', () => {
  const answer = healthBoard(run((s) => ({ ...s, raw_reward: 1, truncated: true })));
  assert.deepEqual(failures(answer, ['lp_drift']), []);
  const lines = failures(answer, ['zero_std', 'truncation']);
  assert.equal(lines.length, 2);
  assert.match(lines[0], /^step 2: zero_std 1 >= 0.5 \(4\/4 groups have zero reward std\)$/);
});
