// Outlier lanes: the lowest mean util, or the slowest mean duration of a named phase.
import { compareLanes, type GpuUtilHour, type LaneTable, type StreamName } from '../run/model.ts';
import { windowPass } from './gpuWindowPass.ts';
import { BadArgument } from '../run/errors.ts';
import { phaseRowsOf } from './heatmap.ts';
import { pyStrRepr } from '../formats/pythonFormat.ts';
import type { PhaseSource } from './phases.ts';
import { OUTLIER_TOP_K, checkLimit } from './limits.ts';
import { laneStartLags } from './stragglers.ts';
import type { Outlier, OutliersAnswer } from '../wire/timeline.ts';

export interface OutlierSource extends PhaseSource {
  /** gpu_util hours one at a time, with their rollup cells, for a single pass over the window. */
  gpuUtilHours(t0?: number | null, t1?: number | null): Iterable<GpuUtilHour>;
  readonly lanes: LaneTable;
  streamVersion(stream: StreamName): number;
}

export interface OutlierQuery {
  /** `lowest_util`, `slowest_phase:<name>` or (rlsight's) `start_lag`. */
  criterion: string;
  t0?: number | null;
  t1?: number | null;
  /** Within OUTLIER_TOP_K. */
  topK?: number;
}

export type { Outlier };

const SLOWEST_PHASE = 'slowest_phase:';
const START_LAG = 'start_lag';

/** Ascending by `(score, node, gpu)`, node compared as a string. */
function ascending(a: Outlier, b: Outlier): number {
  return a.score - b.score || compareLanes(a, b);
}

/** Mean util per lane over rows with `t0 <= ts <= t1` (lanes without rows are absent). */
export function meanUtilByLane(hours: Iterable<GpuUtilHour>, lanes: LaneTable, t0: number | null, t1: number | null): Outlier[] {
  let sum = new Float64Array(lanes.size);
  let count = new Float64Array(lanes.size);
  windowPass(
    hours,
    t0,
    t1,
    1,
    {
      hour: () => {
        if (lanes.size <= sum.length) return;
        // reading this hour interned new lane ids
        const s = new Float64Array(lanes.size);
        const c = new Float64Array(lanes.size);
        s.set(sum);
        c.set(count);
        sum = s;
        count = c;
      },
      cell: (_x, lane, cells, k) => {
        sum[lane] += cells.sumUtil![k];
        count[lane] += cells.count[k];
      },
      row: (_x, lane, rows, i) => {
        sum[lane] += rows.util[i];
        count[lane]++;
      },
    },
    // integer sums are exact in any order; a wide hour (fractional util) is summed row by row
    { usable: (cells) => cells.sumUtil !== null },
  );
  const out: Outlier[] = [];
  for (let id = 0; id < lanes.size; id++) {
    if (count[id] > 0) out.push({ node: lanes.node(id), gpu: lanes.gpu(id), score: sum[id] / count[id] });
  }
  return out;
}

/**
 * `GET /api/timeline/outliers`: the first `topK` lanes by criterion. `lowest_util` ranks mean util
 * ascending; `slowest_phase:<name>` ranks the mean duration of that phase's intervals (in
 * `phasesByLane` order, summed left to right) descending, ties by descending `(node, gpu)`.
 * No window rule: a reversed window simply selects nothing.
 */
export function outliers(store: OutlierSource, q: OutlierQuery): OutliersAnswer {
  const topK = checkLimit(OUTLIER_TOP_K, q.topK ?? OUTLIER_TOP_K.fallback);
  const t0 = q.t0 ?? null;
  const t1 = q.t1 ?? null;
  if (q.criterion === 'lowest_util') {
    return { outliers: meanUtilByLane(store.gpuUtilHours(t0, t1), store.lanes, t0, t1).sort(ascending).slice(0, topK) };
  }
  if (q.criterion.startsWith(SLOWEST_PHASE)) {
    const name = q.criterion.slice(SLOWEST_PHASE.length);
    const acc = new Map<string, { node: string; gpu: number; sum: number; n: number }>();
    for (const p of phaseRowsOf(store, t0, t1, null)) {
      if (p.name !== name) continue;
      const k = `${p.node}:${p.gpu}`;
      let a = acc.get(k);
      if (a === undefined) acc.set(k, (a = { node: p.node, gpu: p.gpu, sum: 0, n: 0 }));
      a.sum += p.t1 - p.t0;
      a.n++;
    }
    const scored = [...acc.values()].map((a) => ({ node: a.node, gpu: a.gpu, score: a.sum / a.n }));
    return { outliers: scored.sort((a, b) => ascending(b, a)).slice(0, topK) };
  }
  if (q.criterion === START_LAG) {
    // Seconds behind the median of the peers entering the train phases, latest first.
    const scored = laneStartLags(phaseRowsOf(store, t0, t1, null));
    return { outliers: scored.sort((a, b) => b.score - a.score || compareLanes(a, b)).slice(0, topK) };
  }
  throw new BadArgument('criterion', `unknown outlier criterion ${pyStrRepr(q.criterion)}`);
}
