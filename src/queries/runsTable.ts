// The runs table's row parts (`/api/runs`): a run's status, its recorded configuration and the latest value of
// chosen metrics, from what the run already answers.
import type { MetricsAnswer, RunConfigValue, RunStatus } from '../wire/index.ts';

/** A followed run whose newest data is older than this has gone quiet: not live. */
export const LIVE_EDGE_S = 600;

/**
 * Damaged when reading met problems (the warnings say which); live while a followed run keeps writing, quiet once
 * it has written nothing for LIVE_EDGE_S; finished when not followed, or once its collector said it stopped
 * (`recorder`), however recent its data.
 */
export function runStatus(warnings: readonly string[], follow: boolean, edge: number | null, now: number, recorder: 'running' | 'stopped' | null = null): RunStatus {
  if (warnings.length > 0) return 'damaged';
  if (!follow || recorder === 'stopped') return 'finished';
  if (edge === null) return recorder === 'running' ? 'live' : 'finished';
  return now - edge <= LIVE_EDGE_S ? 'live' : 'quiet';
}

/**
 * The steps of a run that logged none against `rollout/step` and dumped none: the most distinct steps logged
 * against any one step key (a TensorBoard logdir's `tensorboard/step`, a trainer's own `train/step`).
 */
export function mostLoggedSteps(records: readonly { step_key: string | null; step: number | null }[]): number {
  const byKey = new Map<string, Set<number>>();
  for (const r of records) {
    if (r.step_key === null || r.step === null) continue;
    let steps = byKey.get(r.step_key);
    if (!steps) byKey.set(r.step_key, (steps = new Set()));
    steps.add(r.step);
  }
  let most = 0;
  for (const steps of byKey.values()) most = Math.max(most, steps.size);
  return most;
}

/** The scalar arguments of `meta.json` (nested values and nulls are left out: a table cell holds one value). */
export function runConfig(args: unknown): Record<string, RunConfigValue> {
  if (!args || typeof args !== 'object' || Array.isArray(args)) return {};
  const out: Record<string, RunConfigValue> = {};
  for (const [k, v] of Object.entries(args as Record<string, unknown>)) {
    if (typeof v === 'string' || typeof v === 'boolean' || (typeof v === 'number' && Number.isFinite(v))) out[k] = v;
  }
  return out;
}

/** Each key's newest numeric value (null when the run never logged one). */
export function latestValues(answer: MetricsAnswer, keys: readonly string[]): Record<string, number | null> {
  const out: Record<string, number | null> = {};
  for (const k of keys) {
    const y = answer[k]?.y ?? [];
    let v: number | null = null;
    for (let i = y.length - 1; i >= 0; i--) {
      const n = y[i];
      if (typeof n === 'number' && Number.isFinite(n)) {
        v = n;
        break;
      }
    }
    out[k] = v;
  }
  return out;
}
