// slime's per-step metrics over every dump of a run, and `/api/metrics` series of them (x = rollout id).
import type { MetricsRecord, SlimeDump } from '../run/model.ts';
import type { MetricSeries, MetricsAnswer } from '../wire/metrics.ts';
import { evalDatasets, evalMetrics, rolloutStepMetrics, type RolloutMetricsOptions } from './slimePerf.ts';

export interface StepMetricsInputs extends RolloutMetricsOptions {
  /** Per train rollout id: the seconds slime measured around it, when the user knows them. */
  rolloutTimes?: ReadonlyMap<number, number>;
  /** Names of the eval datasets, in dump order. */
  evalDatasetNames?: readonly string[];
}

/** Every step's slime metrics: train dumps keyed by rollout id, eval dumps too (their `eval/` keys). */
export function slimeStepMetrics(train: readonly SlimeDump[], evals: readonly SlimeDump[], inputs: StepMetricsInputs = {}): Array<{ rolloutId: number; evaluation: boolean; metrics: Record<string, number> }> {
  const out: Array<{ rolloutId: number; evaluation: boolean; metrics: Record<string, number> }> = [];
  for (const d of train) {
    const metrics = rolloutStepMetrics(d.samples, { ...inputs, rolloutTime: inputs.rolloutTimes?.get(d.rolloutId) ?? inputs.rolloutTime });
    out.push({ rolloutId: d.rolloutId, evaluation: false, metrics });
  }
  for (const d of evals) out.push({ rolloutId: d.rolloutId, evaluation: true, metrics: evalMetrics(evalDatasets(d.samples, inputs.evalDatasetNames), inputs) });
  return out;
}

/** `/api/metrics` over slime's step metrics: x is the rollout id (slime logs on `rollout/step` = rollout id). */
export function slimeMetricsAnswer(steps: ReturnType<typeof slimeStepMetrics>, keys: readonly string[]): MetricsAnswer {
  const out: MetricsAnswer = {};
  for (const key of keys) {
    const series: MetricSeries = { x: [], y: [], ts: [] };
    for (const s of steps) {
      const v = s.metrics[key];
      if (v === undefined) continue;
      series.x.push(s.rolloutId);
      series.y.push(Number.isFinite(v) ? v : null);
    }
    out[key] = series;
  }
  return out;
}

/** Every key the steps log, in first-seen order. */
export function slimeMetricKeys(steps: ReturnType<typeof slimeStepMetrics>): string[] {
  const seen = new Set<string>();
  for (const s of steps) for (const k of Object.keys(s.metrics)) seen.add(k);
  return [...seen];
}

/**
 * The eval dataset names a run logged itself (a slime run recorded through its hooks logs `eval/{name}` per
 * dataset, in dataset order): those of the first record holding any, so the metrics computed from its eval
 * dumps carry the same names instead of `dataset<i>`. Empty when none was logged.
 */
export function loggedEvalDatasets(records: readonly MetricsRecord[]): string[] {
  for (const r of records) {
    const names = Object.keys(r.metrics)
      .map((k) => /^eval\/([^/]+)$/.exec(k)?.[1])
      .filter((n): n is string => n !== undefined && n !== 'step' && !n.endsWith('-truncated_ratio'));
    if (names.length > 0) return names;
  }
  return [];
}
