// Gathers what a Perfetto export of one window holds from an open run's answers (the compute timeline of
// a miles run; the request traces of a slime run), then lays it out as Chrome trace-event JSON.
import { unreadStepProblem } from '../run/errors.ts';
import type { EngineSeries, GpuAnswer } from '../wire/timeline.ts';
import type { TraceAnswer, TraceDetails } from '../wire/trace.ts';
import { BadArgument, MAX_WINDOW_S, SERIES_MAX_POINTS } from './limits.ts';
import { perfettoTrace, type ChromeTrace, type PerfettoInputs, type TraceInput } from './perfetto.ts';
import { widenedByTrace } from './slimeTraceView.ts';
import type { RunSources } from './runAnswers.ts';

export interface PerfettoWindow {
  t0?: number;
  t1?: number;
  /** The lanes whose phases and GPU samples it holds (the timeline's lane grammar); every lane when absent. */
  lanes?: string;
  /** Counter events it may hold at most (PERFETTO_COUNTER_BUDGET when absent). */
  counterBudget?: number;
  /** One dump's traces only (the Trace view's download); all dumps when absent. */
  rolloutId?: number;
  evaluation?: boolean;
}

/** Engine series points per series in an export (a window's worth, as the timeline overlays ask). */
export const PERFETTO_ENGINE_POINTS = 2000;
/** GPU samples per lane in an export. */
export const PERFETTO_GPU_POINTS = 20000;
/**
 * Counter events (GPU and engine samples) one export holds at most, shared out over its lanes and engine series
 * (about 100 bytes each: some 300 MB, below the ~500 MB Perfetto loads). A fleet of 1,024 GPUs and 128 engines
 * gets fewer points per series rather than a file Perfetto cannot open.
 */
export const PERFETTO_COUNTER_BUDGET = 3_000_000;
/** Points per series when `budget` points are shared by `series` series, within `[SERIES_MAX_POINTS.min, most]`. */
function pointsEach(budget: number, series: number, most: number): number {
  return Math.max(SERIES_MAX_POINTS.min, Math.min(most, Math.floor(budget / Math.max(1, series))));
}

export async function perfettoForRun(run: RunSources, w: PerfettoWindow = {}): Promise<ChromeTrace> {
  // one step's export is of its request traces: a run without them has only time windows to export
  if (w.rolloutId !== undefined && !run.hasTraces) {
    throw new BadArgument('rollout_id', 'rollout_id: this run records no per-request traces (slime rollout dumps do); export a time window with t0 and t1 instead');
  }
  if (w.rolloutId === undefined && w.evaluation) throw new BadArgument('eval', 'eval: names an eval step, given with rollout_id');
  const meta = await run.meta({ follow: false, useUtilizationOverview: false });
  const inputs: PerfettoInputs = { t0: w.t0, t1: w.t1, title: meta.run_name ?? undefined };
  // the series queries answer at most MAX_WINDOW_S at a time: a wider window is read in pieces and joined,
  // its points shared out so the whole window holds about as many as one piece would
  const pieces = windowPieces(w.t0, w.t1, meta.time_range);
  const share = (points: number): number => Math.max(SERIES_MAX_POINTS.min, Math.ceil(points / Math.max(1, pieces.length)));
  const timeline = meta.capabilities.has_timeline;
  const engines = meta.capabilities.has_engine_series && meta.engine_metric_keys.length > 0;
  // the counter budget, halved between the GPUs and the engines when the run has both
  const all = w.counterBudget ?? PERFETTO_COUNTER_BUDGET;
  const budget = timeline && engines ? all / 2 : all;
  if (timeline) {
    inputs.phases = (await run.phases({ t0: w.t0, t1: w.t1, lanes: w.lanes })).phases;
    const lanes = (await run.selectLanes(w.lanes)).lanes.length;
    const each = pointsEach(budget, lanes, PERFETTO_GPU_POINTS);
    const parts: GpuAnswer[] = [];
    for (const [t0, t1] of pieces) parts.push(await run.gpu({ t0, t1, lanes: w.lanes, maxPoints: share(each) }));
    inputs.gpu = joinGpu(parts);
  } else if (w.lanes !== undefined) throw new BadArgument('lanes', 'lanes: this run has no compute timeline to pick lanes of');
  if (engines) {
    const engine: Record<string, EngineSeries[]> = {};
    // how many series one metric has (the engines), asked over the first piece with the fewest points
    const [f0, f1] = pieces[0] ?? [w.t0, w.t1];
    const first = (await run.engineSeries({ metric: meta.engine_metric_keys[0], t0: f0, t1: f1, maxPoints: SERIES_MAX_POINTS.min, perDpRank: false })).series.length;
    const each = pointsEach(budget, first * meta.engine_metric_keys.length, PERFETTO_ENGINE_POINTS);
    for (const metric of meta.engine_metric_keys) {
      const parts: EngineSeries[][] = [];
      for (const [t0, t1] of pieces) parts.push((await run.engineSeries({ metric, t0, t1, maxPoints: share(each), perDpRank: false })).series);
      engine[metric] = joinEngine(parts);
    }
    inputs.engine = engine;
  }
  if (run.hasTraces) {
    const list: TraceInput[] = [];
    const wanted =
      w.rolloutId !== undefined
        ? [{ id: w.rolloutId, evaluation: w.evaluation ?? false }]
        : [...meta.rollout_ids.train.map((id: number) => ({ id, evaluation: false })), ...meta.rollout_ids.eval.map((id: number) => ({ id, evaluation: true }))];
    const skipped: string[] = [];
    for (const { id, evaluation } of wanted) {
      try {
        const answer = await run.trace(id, evaluation);
        // each row's details carry the attrs the export writes as args (the row answer has only names and times)
        const details = new Map<number, TraceDetails>();
        for (const row of answer.rows) {
          if (w.t0 !== undefined && answer.t0 + row.end < w.t0) continue;
          if (w.t1 !== undefined && answer.t0 + row.start > w.t1) continue;
          details.set(row.row, await run.traceDetails(id, evaluation, row.row));
        }
        list.push({ answer, details });
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

/**
 * `[t0, t1]` cut into pieces of at most MAX_WINDOW_S (one piece when a bound is open: the queries take those
 * whole). A wider window is first cut to the run's time range (`range`): no samples lie outside it.
 */
export function windowPieces(t0: number | undefined, t1: number | undefined, range: readonly [number, number] | null): [number | undefined, number | undefined][] {
  if (t0 === undefined || t1 === undefined || t1 - t0 <= MAX_WINDOW_S) return [[t0, t1]];
  if (range === null || range[0] > t1 || range[1] < t0) return [];
  t0 = Math.max(t0, range[0]);
  t1 = Math.min(t1, range[1]);
  if (t1 - t0 <= MAX_WINDOW_S) return [[t0, t1]];
  const n = Math.ceil((t1 - t0) / MAX_WINDOW_S);
  const step = (t1 - t0) / n;
  return Array.from({ length: n }, (_, i) => [t0 + i * step, i === n - 1 ? t1 : t0 + (i + 1) * step]);
}

/** Points of ascending pieces joined; a point on the edge of two pieces (both answer it) is kept once. */
function joinPoints(cols: number, parts: { ts: ArrayLike<number>; values: ArrayLike<number | null>[] }[]): { ts: number[]; values: (number | null)[][] } {
  const ts: number[] = [];
  const values: (number | null)[][] = Array.from({ length: cols }, () => []);
  for (const p of parts) {
    for (let i = 0; i < p.ts.length; i++) {
      if (ts.length > 0 && p.ts[i] <= ts[ts.length - 1]) continue;
      ts.push(p.ts[i]);
      for (let c = 0; c < cols; c++) values[c].push(p.values[c][i]);
    }
  }
  return { ts, values };
}

function joinGpu(parts: GpuAnswer[]): GpuAnswer {
  if (parts.length === 1) return parts[0];
  if (parts.length === 0) return { lanes: {} };
  const keys = new Set(parts.flatMap((p) => Object.keys(p.lanes)));
  const lanes: GpuAnswer['lanes'] = {};
  for (const key of keys) {
    const got = parts.flatMap((p) => (p.lanes[key] ? [p.lanes[key]] : []));
    const j = joinPoints(3, got.map((s) => ({ ts: s.ts, values: [s.util, s.mem_mb, s.power_w] })));
    lanes[key] = { ts: j.ts, util: j.values[0] as number[], mem_mb: j.values[1] as number[], power_w: j.values[2] as number[] };
  }
  return { lanes };
}

function joinEngine(parts: EngineSeries[][]): EngineSeries[] {
  if (parts.length === 1) return parts[0];
  if (parts.length === 0) return [];
  const byKey = new Map<string, EngineSeries[]>();
  for (const list of parts) {
    for (const s of list) {
      const key = `${s.addr} ${JSON.stringify(s.labels)}`;
      const got = byKey.get(key);
      if (got === undefined) byKey.set(key, [s]);
      else got.push(s);
    }
  }
  return [...byKey.values()].map((got) => {
    const j = joinPoints(1, got.map((s) => ({ ts: s.ts, values: [s.value] })));
    return { addr: got[0].addr, labels: got[0].labels, ts: j.ts, value: j.values[0] as number[] };
  });
}

const HOUR_S = 3600;

/** What a Perfetto export of the whole run can draw, and when: for saying where to look when a window holds none of it. */
export interface PerfettoSpan {
  t0: number;
  t1: number;
  /** `phases`, `GPU utilisation`, `engine series`, `request traces`: those the run has. */
  kinds: string[];
}

/**
 * The span of what the export draws: phases and request traces whole, and the first and last GPU and engine
 * samples, found without reading every hour of them (a run's metrics may begin long before its telemetry).
 * Null when the run has none of it.
 */
export async function perfettoSpan(run: RunSources): Promise<PerfettoSpan | null> {
  const meta = await run.meta({ follow: false, useUtilizationOverview: false });
  let lo = Infinity;
  let hi = -Infinity;
  const kinds: string[] = [];
  const add = (kind: string, span: [number, number] | null): void => {
    if (span === null) return;
    kinds.push(kind);
    lo = Math.min(lo, span[0]);
    hi = Math.max(hi, span[1]);
  };
  const range = meta.time_range;
  if (meta.capabilities.has_timeline) {
    let phases: [number, number] | null = null;
    for (const p of (await run.phases({})).phases) phases = phases === null ? [p.t0, p.t1] : [Math.min(phases[0], p.t0), Math.max(phases[1], p.t1)];
    add('phases', phases);
    if (range !== null) {
      add('GPU utilisation', await sampleEdges(range, async (t0, t1) => {
        const out: number[] = [];
        for (const s of Object.values((await run.gpu({ t0, t1, maxPoints: SERIES_MAX_POINTS.min })).lanes)) {
          for (let i = 0; i < s.ts.length; i++) if (Number.isFinite(s.util[i])) out.push(s.ts[i]);
        }
        return out;
      }));
    }
  }
  if (meta.capabilities.has_engine_series && range !== null) {
    add('engine series', await sampleEdges(range, async (t0, t1) => {
      const out: number[] = [];
      for (const metric of meta.engine_metric_keys) {
        for (const s of (await run.engineSeries({ metric, t0, t1, maxPoints: SERIES_MAX_POINTS.min, perDpRank: false })).series) {
          for (let i = 0; i < s.ts.length; i++) if (s.value[i] !== null && Number.isFinite(s.value[i])) out.push(s.ts[i]);
        }
      }
      return out;
    }));
  }
  if (run.hasTraces) {
    let traces: [number, number] | null = null;
    for (const [ids, evaluation] of [[meta.rollout_ids.train, false], [meta.rollout_ids.eval, true]] as const) {
      for (const id of ids) {
        let tr: TraceAnswer;
        try {
          tr = await run.trace(id, evaluation);
        } catch (e) {
          if (unreadStepProblem(e) === null) throw e;
          continue;
        }
        traces = widenedByTrace(traces, tr);
      }
    }
    add('request traces', traces);
  }
  return kinds.length > 0 ? { t0: lo, t1: hi, kinds } : null;
}

/**
 * The first and last of the samples `stamps(t0, t1)` answers (some of those in `[t0, t1]`, at least one when
 * there are any) within `range`: the hour holding each, found hour by hour from that end, then halved down to a
 * millisecond, so only the hours at the two edges are read.
 */
export async function sampleEdges(range: readonly [number, number], stamps: (t0: number, t1: number) => Promise<number[]>): Promise<[number, number] | null> {
  const min = (xs: number[]): number => xs.reduce((a, b) => Math.min(a, b), Infinity);
  const max = (xs: number[]): number => xs.reduce((a, b) => Math.max(a, b), -Infinity);
  let found: number[] = [];
  let h = Math.floor(range[0] / HOUR_S) * HOUR_S;
  for (; h <= range[1]; h += HOUR_S) if ((found = await stamps(h, h + HOUR_S)).length > 0) break;
  if (found.length === 0) return null;
  // the first sample lies in [a, b]; b is one
  let a = h;
  let b = min(found);
  while (b - a > 1e-3) {
    const mid = (a + b) / 2;
    const got = await stamps(a, mid);
    if (got.length > 0) b = min(got);
    else a = mid;
  }
  const first = b;
  h = Math.floor(range[1] / HOUR_S) * HOUR_S;
  for (; h + HOUR_S >= first; h -= HOUR_S) if ((found = await stamps(Math.max(h, first), h + HOUR_S)).length > 0) break;
  // the last sample lies in [a, b]; a is one
  a = max(found);
  b = h + HOUR_S;
  while (b - a > 1e-3) {
    const mid = (a + b) / 2;
    const got = await stamps(mid, b);
    if (got.length > 0) a = max(got);
    else b = mid;
  }
  return [first, a];
}
