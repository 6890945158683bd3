import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Meta } from '../src/wire/index.ts';
import { holdingsText, noDumpsText, noTimelineText, noTracesText, runFacts } from './runFacts.ts';

function meta(over: Partial<Meta> & { has_timeline?: boolean } = {}): Meta {
  const { has_timeline = false, ...rest } = over;
  return {
    mode: 'static',
    run_name: null,
    start_ts: null,
    wandb_url: null,
    data_buffer_length: null,
    time_range: has_timeline ? [0, 10] : null,
    rollout_ids: { train: [], eval: [] },
    metric_keys: [],
    engine_metric_keys: [],
    step_keys: [],
    capabilities: { has_metrics: true, has_tokenizer: false, has_timeline, has_engine_series: false, max_window_s: 14400, use_utilization_overview: false },
    ...rest,
  };
}

// A run `rlsight collect --tensorboard` recorded: logged metrics on tensorboard/step, its collector stopped.
const tbOnly = meta({ metric_keys: ['train/loss', 'rollout/raw_reward'], step_keys: ['tensorboard/step'], recorder: 'stopped' });
// A miles run with dumps and telemetry.
const miles = meta({ has_timeline: true, rollout_ids: { train: [194, 195, 196], eval: [] }, metric_keys: ['rollout/rewards_mean', 'perf/step_time'], step_keys: ['rollout/step'] });

test('a metrics-only run recorded by the collector: what it holds, and why it has no timeline, dumps or traces', () => {
  const f = runFacts(tbOnly, 'miles');
  assert.equal(holdingsText(f), 'It holds only logged metrics (2 keys, read from a TensorBoard logdir): no rollout dumps, request traces or compute telemetry.');
  assert.match(noTimelineText(f), /^It was recorded by rlsight collect, but no phases or GPU samples reached the collector \(/);
  assert.doesNotMatch(noTimelineText(f), /without the collector|yet/);
  assert.equal(noDumpsText(f, 'Rollouts'), 'Rollouts reads rollout dumps, and this run holds none: no samples reached its collector (a trainer sends them with client.samples(step, samples)).');
  assert.equal(noTracesText(f), 'This run holds no per-request traces: they come from slime rollout dumps (each sample’s trace of spans and events).');
});

test('"yet" only for a run that may still grow: followed, and no collector said it stopped', () => {
  assert.equal(runFacts({ ...tbOnly, mode: 'follow' }, 'miles').mayGrow, false, 'its collector stopped');
  const live = runFacts({ ...tbOnly, mode: 'follow', recorder: 'running' }, 'miles');
  assert.equal(live.mayGrow, true);
  assert.equal(noDumpsText(live, 'Rollouts'), 'Rollouts reads rollout dumps, and this run holds none yet: they appear here as the job writes them.');
  assert.match(noTimelineText(live), /reached the collector yet/);
  assert.equal(runFacts({ ...tbOnly, recorder: 'running' }, 'miles').mayGrow, false, 'not followed: nothing new is read');
  assert.equal(holdingsText(runFacts(meta({ mode: 'follow' }), null)), 'It holds no data yet: no rollout dumps, logged metrics or telemetry.');
  assert.equal(holdingsText(runFacts(meta(), null)), 'It holds no data: no rollout dumps, logged metrics or telemetry.');
});

test('a run without the collector, and a miles run asked for traces', () => {
  const offline = runFacts(meta({ rollout_ids: { train: [0, 1], eval: [0] }, metric_keys: ['dump/reward_mean'] }), 'miles');
  assert.equal(noTimelineText(offline), 'It was recorded without the collector, so there is no phase or GPU telemetry to draw.');
  assert.equal(holdingsText(offline), 'It holds only rollout dumps (2 train steps, 1 eval step): no request traces or compute telemetry.');
  assert.equal(noDumpsText(runFacts(meta({ metric_keys: ['a'] }), 'miles'), 'Health'), 'Health reads rollout dumps, and this run holds none: no rollout dumps were written for it.');
  const m = runFacts(miles, 'miles');
  assert.equal(noTracesText(m), 'This run holds no per-request traces: they come from slime rollout dumps (each sample’s trace of spans and events), and this is a miles run.');
  assert.equal(holdingsText(m), 'It holds rollout dumps (3 train steps), compute telemetry and metrics (2 keys), but no request traces.');
  assert.equal(runFacts({ ...miles, traces: true }, 'slime').traces, true);
});
