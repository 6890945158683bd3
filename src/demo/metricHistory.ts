// The metrics of the steps before the detailed ones: a run ~200 steps long has charts with shape
// (reward climbing, entropy falling, response length growing), while dumps and telemetry are
// written only for the last few steps, where the story is told.
import { SeededRandom } from './random.ts';
import { metricsLine } from '../formats/dashboard/encode.ts';

/** Seconds a history step takes (about what a detailed step takes). */
export const HISTORY_STEP_S = 255;
/** An eval every this many history steps. */
const HISTORY_EVAL_EVERY = 10;

const r6 = (x: number) => Math.round(x * 1e6) / 1e6;

/** How far along training is at rollout id `id`: 0 at the start, towards 1 later. */
export function trainingProgress(id: number): number {
  return 1 - Math.exp(-id / 60);
}

/** `train/entropy_loss` at rollout id `id` (the detailed steps continue the same curve). */
export function entropyLossAt(id: number, noise: number): number {
  return 0.12 + 0.3 * (1 - trainingProgress(id)) + noise;
}

/** `train/loss` at rollout id `id`. */
export function lossAt(id: number, noise: number): number {
  return -0.02 * trainingProgress(id) + noise;
}

/**
 * Metrics lines for rollout ids `0 .. firstStep-1`, the last one ending `HISTORY_STEP_S` before
 * `firstTs` (epoch seconds), in time order.
 */
export function historyMetricsLines(seed: number, firstStep: number, firstTs: number, world: number): string[] {
  const out: string[] = [];
  for (let id = 0; id < firstStep; id++) {
    const rng = SeededRandom.derive(seed, 'history', id);
    const end = firstTs - (firstStep - id) * HISTORY_STEP_S;
    const start = end - HISTORY_STEP_S + rng.uniform(0, 8);
    const p = trainingProgress(id);
    const reward = Math.min(0.95, 0.18 + 0.42 * p + rng.normal(0, 0.035));
    const length = 120 + 90 * p + rng.normal(0, 9);
    const rolloutTime = 150 + 0.35 * length + rng.normal(0, 6);
    const stepTime = rolloutTime + 95 + rng.normal(0, 3);
    const actorTime = 44 + 0.05 * length + rng.normal(0, 1.2);
    const mfu = 0.352 + 0.012 * rng.next();
    if (id % HISTORY_EVAL_EVERY === 0) {
      out.push(
        metricsLine(start + 40, 'eval/step', id, {
          'eval/math_word_problems': r6(Math.min(0.97, reward + 0.04 + rng.normal(0, 0.02))),
          'eval/math_word_problems-response_len/mean': r6(length * 0.9),
          'eval/math_word_problems-truncated_ratio': r6(Math.max(0, 0.02 + rng.normal(0, 0.01))),
          'eval/step': id,
        }),
      );
    }
    const rolloutEnd = start + rolloutTime;
    out.push(
      metricsLine(
        rolloutEnd,
        'rollout/step',
        id,
        {
          'rollout/rewards_mean': r6(reward),
          'rollout/raw_reward': r6(reward),
          'rollout/response_len/mean': r6(length),
          'rollout/response_len/max': rng.chance(0.2 + 0.6 * p) ? 1024 : Math.round(Math.min(1024, length * 4 + rng.uniform(0, 120))),
          'rollout/truncated_ratio': r6(Math.max(0, 0.03 + rng.normal(0, 0.01))),
          'rollout/zero_std_group_ratio': r6(Math.max(0, 0.1 + 0.2 * p + rng.normal(0, 0.04))),
          'rollout/tool_calls_mean': r6(1.05 + 0.4 * p + rng.normal(0, 0.05)),
          'rollout/aborted_samples': Math.round(rng.uniform(3, 10)),
          'rollout/step': id,
        },
        new Set(['rollout/response_len/max', 'rollout/aborted_samples']),
      ),
    );
    out.push(
      metricsLine(rolloutEnd + 60 + actorTime, 'train/step', id, {
        'train/loss': r6(lossAt(id, rng.normal(0, 0.02))),
        'train/pg_loss': r6(rng.normal(0, 0.03)),
        'train/entropy_loss': r6(entropyLossAt(id, rng.normal(0, 0.01))),
        'train/pg_clipfrac': r6(0.0021 + 0.0009 * rng.next()),
        'train/ppo_kl': r6(Math.abs(rng.normal(0.0004, 0.0002))),
        'train/train_rollout_logprob_abs_diff': r6(0.0061 + 0.002 * rng.next()),
        'train/grad_norm': r6(0.21 + 0.05 * rng.next()),
        'train/lr-pg': 1e-6,
        'train/step': id,
      }),
    );
    out.push(
      metricsLine(start + stepTime, 'rollout/step', id, {
        'perf/step_time': r6(stepTime),
        'perf/rollout_time': r6(rolloutTime),
        'perf/train_time': r6(stepTime - rolloutTime),
        'perf/actor_train_time': r6(actorTime),
        'perf/log_probs_time': r6(8 + rng.normal(0, 0.2)),
        'perf/ref_log_probs_time': r6(24 + rng.normal(0, 0.6)),
        'perf/update_weights_time': r6(8.2 + rng.normal(0, 0.4)),
        'perf/wait_time_ratio': r6(rolloutTime / stepTime),
        'perf/actor_train_tflops': r6(mfu * 989),
        'perf/actor_train_mfu': r6(mfu),
        'perf/mfu_peak_tflops': 989.0,
        'perf/tokens_per_gpu_per_sec': r6((128 * (length + 300) * 16) / stepTime / world),
        'rollout/step': id,
      }),
    );
  }
  return out;
}
