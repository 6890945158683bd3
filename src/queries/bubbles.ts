// Pipeline bubbles: per rollout step, how long it took and what fraction of it training waited.
import type { MetricsRecord } from '../run/model.ts';
import type { Bubble } from '../wire/timeline.ts';

export type { Bubble };

const STEP_TIME = 'perf/step_time';
const WAIT_RATIO = 'perf/wait_time_ratio';

/** One bubble per `rollout/step` metrics record carrying `perf/step_time` or `perf/wait_time_ratio`, file order. */
export function bubbles(store: { metricsRecords(): readonly MetricsRecord[] }): Bubble[] {
  const out: Bubble[] = [];
  for (const r of store.metricsRecords()) {
    if (r.step_key !== 'rollout/step') continue;
    const st = r.metrics[STEP_TIME];
    const wr = r.metrics[WAIT_RATIO];
    if (st === undefined && wr === undefined) continue;
    out.push({ step: r.step, ts: r.ts, step_time: (st as number | undefined) ?? null, wait_ratio: (wr as number | undefined) ?? null });
  }
  return out;
}
