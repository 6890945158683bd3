// What a run holds and lacks, in the words the empty states use: a view with nothing to show says what the run
// has instead and why it lacks this, from what the server reports (meta, and the run's format from the run list),
// and says "yet" only of a run that may still grow.
import type { Meta } from '../src/wire/index.ts';

export interface RunFacts {
  /** Its format from the run list (`miles`, `slime`, `collected`); null when unknown. */
  format: string | null;
  /** Data may still come: the server follows the run, and no collector said it stopped. */
  mayGrow: boolean;
  /** `rlsight collect` recorded it. */
  collector: boolean;
  trainSteps: number;
  evalSteps: number;
  /** It records per-request traces (a slime or collected run). */
  traces: boolean;
  /** Phase or GPU telemetry to draw. */
  timeline: boolean;
  /** Metric keys other than the `dump/*` aggregates (logged, or computed from a slime run's dumps). */
  metricKeys: number;
  /** Its metrics came from a TensorBoard logdir (`tensorboard/step`). */
  tensorboard: boolean;
}

export function runFacts(meta: Meta, format: string | null): RunFacts {
  return {
    format,
    mayGrow: meta.mode === 'follow' && meta.recorder !== 'stopped',
    collector: meta.recorder !== undefined,
    trainSteps: meta.rollout_ids.train.length,
    evalSteps: meta.rollout_ids.eval.length,
    traces: meta.traces === true,
    timeline: meta.capabilities.has_timeline && meta.time_range !== null,
    metricKeys: meta.metric_keys.filter((k) => !k.startsWith('dump/')).length,
    tensorboard: meta.step_keys.includes('tensorboard/step'),
  };
}

const count = (n: number, what: string): string => `${n} ${what}${n === 1 ? '' : 's'}`;

function list(items: readonly string[], last: 'and' | 'or'): string {
  return items.length <= 1 ? (items[0] ?? '') : `${items.slice(0, -1).join(', ')} ${last} ${items.at(-1)}`;
}

export const dumped = (f: RunFacts): boolean => f.trainSteps + f.evalSteps > 0;

/** One sentence of what the run holds and which of the rest it lacks. */
export function holdingsText(f: RunFacts): string {
  const has: string[] = [];
  const lacks: string[] = [];
  if (dumped(f)) has.push(`rollout dumps (${[f.trainSteps ? count(f.trainSteps, 'train step') : '', f.evalSteps ? count(f.evalSteps, 'eval step') : ''].filter(Boolean).join(', ')})`);
  else lacks.push('rollout dumps');
  if (f.traces && dumped(f)) has.push('request traces');
  else lacks.push('request traces');
  if (f.timeline) has.push('compute telemetry');
  else lacks.push('compute telemetry');
  if (f.metricKeys > 0) has.push(`${dumped(f) ? 'metrics' : 'logged metrics'} (${count(f.metricKeys, 'key')}${f.tensorboard ? ', read from a TensorBoard logdir' : ''})`);
  if (has.length === 0) return `It holds no data${f.mayGrow ? ' yet' : ''}: no rollout dumps, logged metrics or telemetry.`;
  if (has.length === 1) return `It holds only ${has[0]}: no ${list(lacks, 'or')}.`;
  return `It holds ${list(has, 'and')}${lacks.length ? `, but no ${list(lacks, 'or')}` : ''}.`;
}

/** Why a run has no compute timeline (a slime run's reason is its format's, said by the view). */
export function noTimelineText(f: RunFacts): string {
  if (f.collector)
    return `It was recorded by rlsight collect, but no phases or GPU samples reached the collector${f.mayGrow ? ' yet' : ''} (a trainer records phases with client.phase(…); GPU lanes come from the GPU sampler), so there is no phase or GPU telemetry to draw.`;
  return 'It was recorded without the collector, so there is no phase or GPU telemetry to draw.';
}

/** A view that reads rollout dumps, on a run without any: why, and (when the run may grow) that they will appear. */
export function noDumpsText(f: RunFacts, view: string): string {
  if (f.mayGrow) return `${view} reads rollout dumps, and this run holds none yet: they appear here as the job writes them.`;
  const why = f.collector ? 'no samples reached its collector (a trainer sends them with client.samples(step, samples))' : 'no rollout dumps were written for it';
  return `${view} reads rollout dumps, and this run holds none: ${why}.`;
}

/** Why a run has no per-request traces. */
export function noTracesText(f: RunFacts): string {
  const what = 'This run holds no per-request traces: they come from slime rollout dumps (each sample’s trace of spans and events)';
  return dumped(f) && f.format !== null ? `${what}, and this is a ${f.format} run.` : `${what}.`;
}
