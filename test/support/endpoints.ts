// One request of every endpoint family of the API over the miles-demo run (train steps 0-2, eval 0,
// samples 0-31 / 32-63 / 64-95), for the concurrency, damage and fuzz suites.

/** Run-wide answers: they skip what is damaged and answer 200 with `warnings`. */
export const RUN_WIDE = [
  '/api/meta',
  '/api/metrics?keys=perf/actor_train_mfu,rollout/rewards_mean',
  '/api/metrics?keys=dump/reward_mean,dump/mean_entropy',
  '/api/advisory',
  '/api/rlsight/advisory',
  '/api/timeline/fleet?x_buckets=100',
];

/** The telemetry views. */
export const TIMELINE = [
  '/api/timeline/topology',
  '/api/timeline/phases',
  '/api/timeline/gpu?max_points=100',
  '/api/timeline/gpu_processes',
  '/api/timeline/heatmap?metric=util&x_buckets=100',
  '/api/timeline/heatmap?metric=phase&x_buckets=100',
  '/api/timeline/outliers?criterion=lowest_util',
  '/api/timeline/engine_series?metric=sglang_num_running_reqs&max_points=100',
  '/api/timeline/bubbles',
  '/api/rlsight/lanes?lanes=g:0-3',
];

/** Answers about one step or sample (one damaged file may make them 422). */
export function stepRequests(step: number, firstSample: number, evaluation = false): string[] {
  const q = evaluation ? '?eval=1' : '';
  const amp = evaluation ? '&eval=1' : '';
  return [
    `/api/rollout/${step}/summary${q}`,
    `/api/rollout/${step}/groups${q}`,
    // The demo run records conversations for train steps only.
    ...(evaluation
      ? []
      : [`/api/rollout/${step}/trajectories`, `/api/rollout/${step}/trajectories?sample_index=${firstSample}`, `/api/rollout/${step}/sample/${firstSample}/messages`]),
    `/api/rollout/${step}/sample/${firstSample}/tokens${q}`,
    `/api/rollout/${step}/sample/${firstSample + 1}/tokens?start=2&end=9${amp}`,
  ];
}

export const STEPS = [
  { step: 0, firstSample: 0, evaluation: false },
  { step: 1, firstSample: 32, evaluation: false },
  { step: 2, firstSample: 64, evaluation: false },
  { step: 0, firstSample: 0, evaluation: true },
];

/** Every family once: run-wide, timeline, each step's answers and the app itself. */
export function everyEndpoint(): string[] {
  return [...RUN_WIDE, ...TIMELINE, ...STEPS.flatMap((s) => stepRequests(s.step, s.firstSample, s.evaluation)), '/', '/index.html'];
}

/** A test's wait before an unanswered request counts as a hang. */
export const HANG_MS = 30_000;

/** One GET, its body parsed as JSON when it is JSON; a hang past `ms` or a refused connection is status 0. */
export async function askEndpoint(base: string, path: string, ms = HANG_MS): Promise<{ path: string; status: number; body: any }> {
  try {
    const res = await fetch(new URL(path, base), { signal: AbortSignal.timeout(ms) });
    const text = await res.text();
    let body: any = text;
    try {
      body = JSON.parse(text);
    } catch {}
    return { path, status: res.status, body };
  } catch {
    return { path, status: 0, body: null };
  }
}
