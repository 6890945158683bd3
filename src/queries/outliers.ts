// Outlier lanes: the lowest mean util, or the slowest mean duration of a named phase.
import { compareLanes, type GpuUtilHour, type LaneTable, type StreamName } from '../run/model.ts';
import { windowPass } from './gpuWindowPass.ts';
import { BadArgument } from './limits.ts';
import { phaseRowsOf } from './heatmap.ts';
import { pyStrRepr } from '../formats/pythonFormat.ts';
import type { PhaseSource } from './phases.ts';
import { OUTLIER_TOP_K, checkLimit } from './limits.ts';
import { ENTRY_FALLBACK_PHASE, ENTRY_PHASE, laneStartLags, type StragglerPhase } from './stragglers.ts';
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
  /** `start_lag`: the run attempt's start; earlier attempts' phases are not this attempt's steps (as for the advisory). */
  since?: number | null;
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
      // a phase never closed (its trainer was killed) has no duration to rank
      if (p.name !== name || p.unfinished) continue;
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
    const scored = laneStartLags(trainEntries(store, t0, t1), q.since ?? -Infinity);
    return { outliers: scored.sort((a, b) => b.score - a.score || compareLanes(a, b)).slice(0, topK) };
  }
  throw new BadArgument('criterion', `unknown outlier criterion ${pyStrRepr(q.criterion)}`);
}

/** The train ranks' entry phases in the window, read as the straggler finding reads them, with the lanes each ran on. */
function trainEntries(store: OutlierSource, t0: number | null, t1: number | null): (StragglerPhase & { lanes: string[] })[] {
  const s = store.strings;
  const blocks = store.phaseBlocks(t0, t1);
  // Looked up after the blocks are read: reading them interns their names.
  const names = new Set([s.find(ENTRY_PHASE), s.find(ENTRY_FALLBACK_PHASE)]);
  const out: (StragglerPhase & { lanes: string[] })[] = [];
  for (const b of blocks) {
    const starts = b.gpuStart;
    const gpus = b.gpuList;
    for (let i = 0; i < b.length; i++) {
      if (!names.has(b.name[i]) || b.rank[i] < 0) continue;
      const e0 = b.t0[i];
      const e1 = b.t1[i] === -1 ? Infinity : b.t1[i];
      if ((t1 !== null && e0 >= t1) || (t0 !== null && e1 <= t0)) continue;
      const node = s.str(b.node[i]);
      const lanes: string[] = [];
      for (let k = starts[i]; k < starts[i + 1]; k++) lanes.push(`${node}:${gpus[k]}`);
      out.push({ name: s.str(b.name[i]), t0: e0, t1: b.t1[i], node, rank: b.rank[i], lanes });
    }
  }
  return out;
}
