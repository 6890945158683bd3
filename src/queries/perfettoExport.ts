// Gathers what a Perfetto export of one window holds from an open run's answers (the compute timeline of
// a miles run; the request traces of a slime run), then lays it out as Chrome trace-event JSON.
import { unreadStepProblem } from '../run/errors.ts';
import type { EngineSeries } from '../wire/timeline.ts';
import type { TraceAnswer } from '../wire/trace.ts';
import { BadArgument } from './limits.ts';
import { perfettoTrace, type ChromeTrace, type PerfettoInputs } from './perfetto.ts';
import type { RunSources } from './runAnswers.ts';

export interface PerfettoWindow {
  t0?: number;
  t1?: number;
  /** One dump's traces only (the Trace view's download); all dumps when absent. */
  rolloutId?: number;
  evaluation?: boolean;
}

/** Engine series points per series in an export (a window's worth, as the timeline overlays ask). */
export const PERFETTO_ENGINE_POINTS = 2000;
/** GPU samples per lane in an export. */
export const PERFETTO_GPU_POINTS = 20000;

export async function perfettoForRun(run: RunSources, w: PerfettoWindow = {}): Promise<ChromeTrace> {
  // one step's export is of its request traces: a run without them has only time windows to export
  if (w.rolloutId !== undefined && !run.hasTraces) {
    throw new BadArgument('rollout_id', 'rollout_id: this run records no per-request traces (slime rollout dumps do); export a time window with t0 and t1 instead');
  }
  if (w.rolloutId === undefined && w.evaluation) throw new BadArgument('eval', 'eval: names an eval step, given with rollout_id');
  const meta = await run.meta({ follow: false, useUtilizationOverview: false });
  const inputs: PerfettoInputs = { t0: w.t0, t1: w.t1, title: meta.run_name ?? undefined };
  if (meta.capabilities.has_timeline) {
    inputs.phases = (await run.phases({ t0: w.t0, t1: w.t1 })).phases;
    inputs.gpu = await run.gpu({ t0: w.t0, t1: w.t1, maxPoints: PERFETTO_GPU_POINTS });
  }
  if (meta.capabilities.has_engine_series) {
    const engine: Record<string, EngineSeries[]> = {};
    for (const metric of meta.engine_metric_keys) {
      engine[metric] = (await run.engineSeries({ metric, t0: w.t0, t1: w.t1, maxPoints: PERFETTO_ENGINE_POINTS, perDpRank: false })).series;
    }
    inputs.engine = engine;
  }
  if (run.hasTraces) {
    const list: TraceAnswer[] = [];
    const wanted =
      w.rolloutId !== undefined
        ? [{ id: w.rolloutId, evaluation: w.evaluation ?? false }]
        : [...meta.rollout_ids.train.map((id: number) => ({ id, evaluation: false })), ...meta.rollout_ids.eval.map((id: number) => ({ id, evaluation: true }))];
    const skipped: string[] = [];
    for (const { id, evaluation } of wanted) {
      try {
        list.push(await run.trace(id, evaluation));
      } catch (e) {
        // the whole run's export leaves out a step still being written or damaged (and says so); one step's fails
        const problem = unreadStepProblem(e);
        if (w.rolloutId !== undefined || problem === null) throw e;
        skipped.push(problem);
      }
    }
    inputs.traces = list;
    if (skipped.length > 0) {
      const trace = perfettoTrace(inputs);
      trace.otherData.skipped_steps = skipped.join('; ');
      return trace;
    }
  }
  return perfettoTrace(inputs);
}
