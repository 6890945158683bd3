import assert from 'node:assert/strict';
import { test } from 'node:test';
import { unitOf } from './catalog.ts';

test('y-axis units follow the key', () => {
  assert.deepEqual(unitOf('perf/step_time'), { unit: 's', scale: 1 });
  assert.deepEqual(unitOf('perf/actor_train_mfu'), { unit: '%', scale: 100 });
  assert.deepEqual(unitOf('rollout/gpu_mem_mb'), { unit: 'MiB', scale: 1 });
  assert.deepEqual(unitOf('sglang_gen_throughput'), { unit: 'tokens/s', scale: 1 });
  assert.deepEqual(unitOf('sglang_aborted_requests_per_s'), { unit: 'per s', scale: 1 });
  assert.deepEqual(unitOf('sglang_generation_tokens_per_s'), { unit: 'tokens/s', scale: 1 });
  assert.deepEqual(unitOf('sglang_e2e_latency_mean_s'), { unit: 's', scale: 1 });
  assert.equal(unitOf('perf/wait_time_ratio'), null);
  assert.equal(unitOf('rollout/raw_reward'), null);
  // a count per sample is no rate
  assert.equal(unitOf('rollout/avg_cached_tokens_per_sample'), null);
  assert.equal(unitOf('eval/avg_cached_tokens_per_sample'), null);
  assert.deepEqual(unitOf('perf/tokens_per_sec'), { unit: 'tokens/s', scale: 1 });
});

