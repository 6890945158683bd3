import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  type AdvisoryInputs,
  type EngineInputs,
  type EngineSeriesData,
  type RawPhase,
  advisoryEngineGauges,
  computeAdvisories,
  counterDelta,
  engineLanes,
  fmtDuration,
  mfuSummary,
  mfuWindow,
  rankLanes,
  rolloutStepWindow,
} from './advisory.ts';
import type { MetricsRecord } from '../run/telemetry/records.ts';
import { summarizeSeries } from './engineSummary.ts';
import { pyFixed, pyG, pyPercent, pyRepr, pyStrRepr } from '../formats/pythonFormat.ts';

const series = (value: number[], opts: { addr?: string; labels?: Record<string, string>; ts?: number[] } = {}): EngineSeriesData => ({
  addr: opts.addr ?? 'http://e0:1',
  labels: opts.labels ?? {},
  ts: opts.ts ?? value.map((_, i) => 1000 + i),
  value,
});

type Gauge = 'running' | 'tokenUsage' | 'cacheHitRate' | 'runningPerDpRank';

/** Engine inputs with the gauges given as whole series (summarised as the advisory reads them). */
function engine(over: Partial<Omit<EngineInputs, Gauge>> & Partial<Record<Gauge, EngineSeriesData[]>> = {}): EngineInputs {
  const gauge = (k: Gauge) => summarizeSeries(over[k] ?? []);
  return { requestsTotal: [], abortsTotal: [], ...over, running: gauge('running'), tokenUsage: gauge('tokenUsage'), cacheHitRate: gauge('cacheHitRate'), runningPerDpRank: gauge('runningPerDpRank') };
}

function inputs(over: Partial<AdvisoryInputs> = {}): AdvisoryInputs {
  return { args: {}, edge: null, startTs: null, phases: [], engine: null, rollout: null, mfu: null, lowMfu: 0.15, ...over };
}

const messages = (i: AdvisoryInputs): string[] => computeAdvisories(i).map((a) => `${a.level}: ${a.message}`);

describe('python string repr', () => {
  test('quotes as repr(str) does: quote choice and escapes', () => {
    assert.equal(pyStrRepr('nope'), "'nope'");
    assert.equal(pyStrRepr("it's"), '"it\'s"');
    assert.equal(pyStrRepr(`a'b"c`), `'a\\'b"c'`);
    assert.equal(pyStrRepr('a\tb\nc\\'), "'a\\tb\\nc\\\\'");
  });
});

describe('python number formats', () => {
  test('repr, fixed (half to even), percent, g', () => {
    assert.equal(pyRepr(1000130), '1000130.0');
    assert.equal(pyRepr(0.30000000000000004), '0.30000000000000004');
    assert.equal(pyRepr(1e16), '1e+16');
    assert.equal(pyRepr(1.5e-5), '1.5e-05');
    assert.equal(pyFixed(14400.5, 0), '14400');
    assert.equal(pyFixed(14401.5, 0), '14402');
    assert.equal(pyFixed(0.125, 2), '0.12');
    assert.equal(pyFixed(2.675, 2), '2.67'); // binary value is below the tie
    assert.equal(pyPercent(0.4, 0), '40%');
    assert.equal(pyPercent(0.1, 1), '10.0%');
    assert.equal(pyG(989), '989');
    assert.equal(pyG(0.85), '0.85');
    assert.equal(pyG(1e6), '1e+06');
    assert.equal(pyG(123456789), '1.23457e+08');
    assert.equal(fmtDuration(7200), '2.0h');
    assert.equal(fmtDuration(150), '2min');
    assert.equal(fmtDuration(45.5), '46s');
  });
});

describe('tuning tier (engine series)', () => {
  const running = (v: number) => [series([v])];
  test('no engine series, no mfu -> nothing', () => {
    assert.deepEqual(computeAdvisories(inputs()), []);
  });
  test('low concurrency flagged (B2)', () => {
    const out = computeAdvisories(inputs({ args: { sglang_max_running_requests: 100 }, engine: engine({ running: running(20) }) }));
    assert.equal(out.length, 1);
    assert.equal(out[0].level, 'info');
    assert.equal(
      out[0].message,
      'Peak concurrency (20) stayed under 30% of --sglang-max-running-requests (100); consider lowering it',
    );
  });
  test('colocate suffix on B2', () => {
    const out = messages(inputs({ args: { sglang_max_running_requests: 100, colocate: true }, engine: engine({ running: running(20) }) }));
    assert.match(out[0], /to free memory for training \(colocate\)$/);
  });
  test('high concurrency not flagged', () => {
    assert.deepEqual(messages(inputs({ args: { sglang_max_running_requests: 100 }, engine: engine({ running: running(80) }) })), []);
  });
  test('low cache hit flagged when not colocate (B3), quiet when colocate', () => {
    const e = engine({ cacheHitRate: [series([0.02])] });
    assert.deepEqual(messages(inputs({ args: { colocate: false, sglang_mem_fraction_static: 0.7 }, engine: e })), [
      'info: Prefix cache hit rate is low (2.0%); consider raising --sglang-mem-fraction-static (currently 0.7) for a bigger KV cache',
    ]);
    assert.deepEqual(messages(inputs({ args: { colocate: true }, engine: e })), []);
  });
  test('high token usage is a warning (A4)', () => {
    assert.deepEqual(messages(inputs({ engine: engine({ tokenUsage: [series([0.99])] }) })), [
      'warning: KV cache usage is consistently high (99.0%) — likely a throughput bottleneck; consider more GPUs or a smaller rollout batch',
    ]);
  });
  test('healthy run has no advisories', () => {
    const e = engine({ running: running(80), cacheHitRate: [series([0.6])], tokenUsage: [series([0.5])] });
    assert.deepEqual(messages(inputs({ args: { sglang_max_running_requests: 100 }, engine: e })), []);
  });
  test('the window decides B2: inputs are the windowed series', () => {
    const args = { sglang_max_running_requests: 100 };
    assert.equal(messages(inputs({ args, engine: engine({ running: [series([80, 10])] }) })).length, 0);
    assert.equal(messages(inputs({ args, engine: engine({ running: [series([10])] }) })).length, 1);
  });
  test('dp imbalance names the knob that applies (B4)', () => {
    const perDp = ['11', '0.5', '0', '1'].map((v, i) => series([Number(v)], { labels: { dp_rank: String(i) } }));
    const e = engine({ runningPerDpRank: perDp });
    const base = 'warning: http://e0:1: dp ranks imbalanced (mean running reqs dp0=11.0, dp1=0.5, dp2=0.0, dp3=1.0) — requests pile onto few ranks while others idle; ';
    assert.deepEqual(messages(inputs({ args: { use_miles_router: true }, engine: e })), [
      `${base}the miles router routes per engine; --sglang-load-balance-method decides the rank`,
    ]);
    assert.deepEqual(messages(inputs({ args: {}, engine: e })), [
      `${base}the router sees one worker per engine; --router-dp-aware makes it route per rank`,
    ]);
    assert.deepEqual(
      messages(inputs({ args: { router_dp_aware: true, router_policy: 'cache_aware', sglang_router_policy: 'manual', router_assignment_mode: 'sticky' }, engine: e })),
      [`${base}manual routing pins each key to a rank via --router-assignment-mode (sticky); min_load spreads by load`],
    );
    assert.deepEqual(messages(inputs({ args: { router_dp_aware: true, router_policy: 'cache_aware' }, engine: e })), [
      `${base}--router-policy (cache_aware) picks the rank`,
    ]);
  });
  test('dp balanced, or an idle engine, is not flagged', () => {
    const mk = (vals: number[]) => engine({ runningPerDpRank: vals.map((v, i) => series([v], { labels: { dp_rank: String(i) } })) });
    assert.deepEqual(messages(inputs({ engine: mk([5, 4, 6, 5]) })), []);
    assert.deepEqual(messages(inputs({ engine: mk([0.5, 0, 0, 0]) })), []);
  });
});

describe('alarm tier', () => {
  const closed = (name: string, t0: number, d: number, rank = 0): RawPhase => ({ name, t0, t1: t0 + d, node: 'n', rank });
  const open = (name: string, t0: number, rank = 0): RawPhase => ({ name, t0, t1: -1, node: 'n', rank });
  const baseline = [closed('train_wait', 0, 10), closed('train_wait', 100, 12), closed('train_wait', 200, 14)];

  test('a stalled open phase is critical and suppresses tuning', () => {
    const out = messages(
      inputs({
        edge: 5000,
        startTs: 0,
        phases: [...baseline, open('train_wait', 300)],
        args: { sglang_max_running_requests: 100 },
        engine: engine({ running: [series([5])] }),
      }),
    );
    assert.deepEqual(out, [
      "critical: Phase 'train_wait' has been open for 1.3h on 1 rank(s) — 392x its median duration (12s); the pipeline is stalled, not slow (training is starved of rollout data — check the data buffer and engine health)",
    ]);
  });
  test('an open marker with a closed twin is not a stall', () => {
    assert.deepEqual(messages(inputs({ edge: 5000, startTs: 0, phases: [...baseline, open('train_wait', 200)] })), []);
  });
  test("the previous attempt's open marker is not a stall", () => {
    const phases = [...baseline.map((p) => ({ ...p, t0: p.t0 + 1000, t1: p.t1 + 1000 })), open('train_wait', 10)];
    assert.deepEqual(messages(inputs({ edge: 5000, startTs: 500, phases })), []);
    assert.equal(messages(inputs({ edge: 5000, startTs: null, phases })).length, 1);
  });
  test('a forever-open phase without a baseline is no claim', () => {
    assert.deepEqual(messages(inputs({ edge: 50000, startTs: 0, phases: [closed('rollout', 0, 5), open('rollout', 10)] })), []);
  });
  test('a zero median duration does not crash', () => {
    const zero = [closed('x', 0, 0), closed('x', 1, 0), closed('x', 2, 0), open('x', 3)];
    assert.deepEqual(messages(inputs({ edge: 4000, startTs: 0, phases: zero })), [
      "critical: Phase 'x' has been open for 1.1h on 1 rank(s) — its median duration is 0s; the pipeline is stalled, not slow",
    ]);
  });

  const counters = (req: number[], ab: number[], ts?: number[]) =>
    engine({ requestsTotal: [series(req, { ts })], abortsTotal: [series(ab, { ts })], running: [series([5])] });
  test('an abort storm is a warning and suppresses tuning', () => {
    const out = messages(inputs({ args: { n_samples_per_prompt: 8, sglang_max_running_requests: 100 }, engine: counters([0, 500], [0, 200]) }));
    assert.deepEqual(out, [
      'warning: 40% of engine requests were aborted client-side in the last 30min (200/500; 40% over the run) — request timeouts are poisoning samples; one aborted sample discards its whole 8-sample group, and backfill resubmission amplifies the engine load',
    ]);
  });
  test('an abort storm survives an engine restart (reset-safe deltas)', () => {
    const out = messages(inputs({ engine: counters([0, 1000, 0, 500], [0, 600, 0, 300]) }));
    assert.equal(out.length, 1);
    assert.match(out[0], /^warning: 60% .*\(900\/1500; 60% over the run\)/);
    assert.equal(counterDelta([series([0, 1000, 0, 500])]), 1500);
  });
  test('a cleared abort storm stops alarming and tuning comes back', () => {
    const ts = [0, 100, 5000, 6000];
    const out = messages(inputs({ args: { sglang_max_running_requests: 100 }, engine: counters([0, 1000, 1000, 2000], [0, 900, 900, 910], ts) }));
    assert.equal(out.length, 1);
    assert.match(out[0], /^info: Peak concurrency/);
  });
  test('the run-wide ratio comes from runCounters when the recent series are a window', () => {
    const e = counters([0, 500], [0, 200]);
    e.runCounters = () => ({ requests: [series([0, 2000, 2500])], aborts: [series([0, 0, 200])] });
    assert.match(messages(inputs({ engine: e }))[0], /\(200\/500; 8% over the run\)/);
  });
  test('a low-volume window is not an abort storm', () => {
    assert.deepEqual(messages(inputs({ engine: counters([0, 6], [0, 1]) })), []);
  });
  test('KV-bound concurrency names the real bottleneck (A3)', () => {
    const e = engine({ tokenUsage: [series([0.97])], running: [series([10])] });
    assert.deepEqual(messages(inputs({ args: { sglang_max_running_requests: 100, sglang_mem_fraction_static: 0.8 }, engine: e })), [
      'warning: KV cache usage is pegged at 97% while peak concurrency (10) stays far below --sglang-max-running-requests (100): concurrency is KV-pool-bound, not cap-bound; raise --sglang-mem-fraction-static (currently 0.8) — do NOT lower the request cap',
    ]);
  });

  const rollout = (rewards: (number | null)[], zero: boolean[], truncated: boolean[] = [], alignment: boolean[] = []) => ({
    rolloutId: 3,
    groups: rewards.map((r, i) => ({ reward_mean: r, zero_std: r === null ? null : zero[i] })),
    summary: truncated.map((t, i) => ({ truncated: t, alignment_failed: alignment[i] ?? false })),
  });
  test('zero-std groups are a warning (A5), all-zero rewards note systematic failure', () => {
    assert.deepEqual(messages(inputs({ rollout: rollout([0.5, 1, 0.25, 0], [true, true, false, false]) })), [
      'warning: 2/4 groups in rollout 3 have zero reward std — those groups contribute zero policy gradient',
    ]);
    assert.deepEqual(messages(inputs({ rollout: rollout([0, 0], [true, true]) })), [
      'warning: 2/2 groups in rollout 3 have zero reward std — those groups contribute zero policy gradient; every reward is 0, pointing at systematic failure (timeouts/truncation), not task difficulty',
    ]);
  });
  test('null rewards are missing data, not zero std', () => {
    assert.deepEqual(messages(inputs({ rollout: rollout([null, null], [true, true]) })), []);
  });
  test('truncation warning cites the per-turn cap (A6)', () => {
    const r = rollout([], [], [true, true, false, false, false, false, false, false]);
    assert.deepEqual(messages(inputs({ args: { rollout_max_response_len: 8192 }, rollout: r })), [
      'warning: 25% of samples in rollout 3 are truncated — check --rollout-max-response-len (8192): in multi-turn agentic runs the per-turn cap is usually the binding limit, not the context length',
    ]);
  });
  test('CP alignment failure is an info alarm (A7)', () => {
    const r = rollout([], [], [false, false], [true, false]);
    const out = computeAdvisories(inputs({ rollout: r, mfu: { latest: 0.01, mean: 0.01, steps: 5, peak: 989 } }));
    assert.equal(out.length, 1);
    assert.equal(out[0].level, 'info');
    assert.match(out[0].message, /^per-token columns are blank for 1 samples in rollout 3/);
  });
});

describe('MFU (B1)', () => {
  const run = (mfu: number[], lowMfu = 0.15, peak = [989]) => messages(inputs({ mfu: mfuSummary(mfu, peak), lowMfu }));
  test('sustained low MFU is a warning', () => {
    const out = run([0.1, 0.1, 0.1, 0.1]);
    assert.equal(out.length, 1);
    assert.equal(
      out[0],
      "warning: Model FLOPs utilization averaged 10.0% of the device's 989 TFLOP/s over 3 train steps — the training step is computing slowly, not waiting: this ratio counts actor train time only, so rollout stalls cannot depress it. Usual causes are activation recompute, a parallel split that leaves ranks idle, and small or ragged micro-batches",
    );
  });
  test('healthy MFU is quiet; threshold configurable; zero disables', () => {
    assert.deepEqual(run([0.3, 0.35, 0.4, 0.375]), []);
    assert.deepEqual(run([0.175, 0.175, 0.175, 0.175]), []);
    assert.equal(run([0.175, 0.175, 0.175, 0.175], 0.25).length, 1);
    assert.deepEqual(run([0.1, 0.1, 0.1, 0.1], 0), []);
  });
  test('first step excluded; too few steady steps; no metric', () => {
    assert.deepEqual(run([0.0, 0.35, 0.35, 0.35, 0.35]), []);
    assert.deepEqual(run([0.1, 0.1, 0.1]), []);
    assert.equal(mfuSummary([], [989]), null);
    assert.deepEqual(mfuSummary([0.3, 0.3], [989]), { latest: 0.3, mean: 0.3, steps: 1, peak: 989 });
  });
  test('MFU without a peak value does not crash', () => {
    const s = mfuSummary([0.1, 0.1, 0.1, 0.1], []);
    assert.equal(s?.peak, null);
    assert.match(messages(inputs({ mfu: s }))[0], /of the device's peak over 3 train steps/);
  });
});

describe('what each advisory concerns (window, lanes)', () => {
  const where = (i: AdvisoryInputs) => computeAdvisories(i).map((a) => ({ window: a.window, lanes: a.lanes }));
  const closed = (name: string, t0: number, d: number, rank = 0, node = 'n'): RawPhase => ({ name, t0, t1: t0 + d, node, rank });
  const open = (name: string, t0: number, rank = 0, node = 'n'): RawPhase => ({ name, t0, t1: -1, node, rank });
  const baseline = [closed('train_wait', 0, 10), closed('train_wait', 100, 12), closed('train_wait', 200, 14)];
  const step = (stepNo: number, ts: number, metrics: Record<string, number> = {}): MetricsRecord => ({ ts, step_key: 'rollout/step', step: stepNo, metrics });

  test('lane terms: ranks as ranges, engines whole and sorted', () => {
    assert.equal(rankLanes([7, 1, 2, 3, 2, 9, 10]), 'rank:1-3,rank:7,rank:9-10');
    assert.equal(rankLanes([-1]), null);
    assert.equal(engineLanes(['http://b:2', 'http://a:1', 'http://b:2']), 'engine:http://a:1,engine:http://b:2');
    assert.equal(engineLanes([]), null);
  });
  test('a stall: from the oldest open marker to the edge, on the ranks still inside the phase', () => {
    const phases = [...baseline, open('train_wait', 300, 4), open('train_wait', 900, 5), open('train_wait', 950, 9), closed('train_wait', 950, 3, 9)];
    assert.deepEqual(where(inputs({ edge: 5000, startTs: 0, phases })), [{ window: { t0: 300, t1: 5000 }, lanes: 'rank:4-5' }]);
    // Ranks unknown (negative): the nodes instead.
    const byNode = [...baseline, open('train_wait', 300, -1, 'b'), open('train_wait', 400, -1, 'a')];
    assert.deepEqual(where(inputs({ edge: 5000, startTs: 0, phases: byNode })), [{ window: { t0: 300, t1: 5000 }, lanes: 'node:a,node:b' }]);
  });
  test('an abort storm: the 30 min before the newest scrape, on the engines that aborted', () => {
    const ts = [0, 3000, 3600];
    const e = engine({
      requestsTotal: [series([0, 500, 1000], { ts, addr: 'http://a:1' }), series([0, 500, 1000], { ts, addr: 'http://b:1' })],
      abortsTotal: [series([0, 0, 300], { ts, addr: 'http://a:1' }), series([0, 0, 0], { ts, addr: 'http://b:1' })],
    });
    assert.deepEqual(where(inputs({ engine: e })), [{ window: { t0: 1800, t1: 3600 }, lanes: 'engine:http://a:1' }]);
    // Every reporting engine aborting is the whole fleet: no lane selection.
    e.abortsTotal[1] = series([0, 0, 300], { ts, addr: 'http://b:1' });
    assert.deepEqual(where(inputs({ engine: e })), [{ window: { t0: 1800, t1: 3600 }, lanes: null }]);
  });
  test('KV rules and tuning advice: the span their series cover in the query window', () => {
    const tokenUsage = [series([0.99, 0.98], { ts: [100, 400] }), series([0.97], { ts: [250] })];
    assert.deepEqual(where(inputs({ engine: engine({ tokenUsage }) })), [{ window: { t0: 100, t1: 400 }, lanes: null }]);
    const args = { sglang_max_running_requests: 100 };
    const kvBound = engine({ tokenUsage, running: [series([10], { ts: [150] })] });
    assert.deepEqual(where(inputs({ args, engine: kvBound })), [{ window: { t0: 100, t1: 400 }, lanes: null }]);
    const tuning = engine({ running: [series([10, 12], { ts: [10, 20] })], cacheHitRate: [series([0.01], { ts: [30] })] });
    assert.deepEqual(where(inputs({ args, engine: tuning })), [
      { window: { t0: 10, t1: 20 }, lanes: null },
      { window: { t0: 30, t1: 30 }, lanes: null },
    ]);
  });
  test('dp imbalance: that engine, over the span of its per-rank series', () => {
    const perDp = [
      series([11, 11], { addr: 'http://a:1', labels: { dp_rank: '0' }, ts: [500, 560] }),
      series([0, 0], { addr: 'http://a:1', labels: { dp_rank: '1' }, ts: [505, 565] }),
      series([5], { addr: 'http://b:1', labels: { dp_rank: '0' }, ts: [100] }),
      series([5], { addr: 'http://b:1', labels: { dp_rank: '1' }, ts: [100] }),
    ];
    assert.deepEqual(where(inputs({ engine: engine({ runningPerDpRank: perDp }) })), [{ window: { t0: 500, t1: 565 }, lanes: 'engine:http://a:1' }]);
  });
  test("zero-std, truncation and alignment rules: the newest rollout step's span", () => {
    const r = {
      rolloutId: 3,
      groups: [{ reward_mean: 0, zero_std: true }],
      summary: [{ truncated: true, alignment_failed: true }],
    };
    const records = [step(1, 1000, { 'perf/step_time': 90 }), step(2, 1100), step(3, 1250, { 'perf/step_time': 120 }), step(4, 1400)];
    const stepSpan = { window: { t0: 1130, t1: 1250 }, lanes: null };
    assert.deepEqual(where(inputs({ rollout: r, metricsRecords: records })), [stepSpan, stepSpan, stepSpan]);
    // Without a step time the step starts at the previous record; unlogged, it runs to the edge; unknown, null.
    assert.deepEqual(rolloutStepWindow([step(2, 1100), step(3, 1250)], 3, 2000), { t0: 1100, t1: 1250 });
    assert.deepEqual(rolloutStepWindow([step(2, 1100)], 3, 2000), { t0: 1100, t1: 2000 });
    assert.equal(rolloutStepWindow([], 3, 2000), null);
    assert.equal(rolloutStepWindow([{ ...step(3, 1250), step_key: 'train/step' }], 3, null), null);
    assert.deepEqual(where(inputs({ rollout: r })), [
      { window: null, lanes: null },
      { window: null, lanes: null },
      { window: null, lanes: null },
    ]);
  });
  test('low MFU: the train GPUs, from the end of the warm-up step to the newest step', () => {
    const records = [step(0, 100, { 'perf/actor_train_mfu': 0.3 }), step(1, 200, { 'perf/actor_train_mfu': 0.1 }), step(2, 300), step(3, 450, { 'perf/actor_train_mfu': 0.1 })];
    assert.deepEqual(mfuWindow(records), { t0: 100, t1: 450 });
    const mfu = mfuSummary([0.3, 0.1, 0.1, 0.1], [989]);
    assert.deepEqual(where(inputs({ mfu, metricsRecords: records })), [{ window: { t0: 100, t1: 450 }, lanes: 'role:train' }]);
    assert.equal(mfuWindow([step(0, 100, { 'perf/actor_train_mfu': 0.3 })]), null);
  });
  test('the cache hit rate is read only where its rule can fire (not colocated)', () => {
    assert.deepEqual(advisoryEngineGauges({ colocate: true }), ['sglang_num_running_reqs', 'sglang_token_usage']);
    assert.deepEqual(advisoryEngineGauges({}), ['sglang_num_running_reqs', 'sglang_token_usage', 'sglang_cache_hit_rate']);
  });
});
