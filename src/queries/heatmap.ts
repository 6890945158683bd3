// Heatmaps: lanes × time buckets of util / mem / power maxima, phase ids, or trajectory lifecycle states.
import { UTIL_CELL_S, type GpuUtilBlock, type GpuUtilHour, type LaneEntry, type LaneTable, type MetricsRecord, type StreamName, type TrajectoryEvent } from '../run/model.ts';
import { BadArgument } from './limits.ts';
import { encodeHeatmapFrame } from './heatmapFrame.ts';
import { blockHours, rowMem, rowPower, windowPass } from './gpuWindowPass.ts';
import { LIFECYCLE_MAX_ROWS, LIFECYCLE_PALETTE, bucketOf, foldLifecycleRows, magnitudeBytes, paintLifecycle, paintPhases, peakOf } from './heatmapPaint.ts';
import { resolveLanes, selectiveLaneKeys, type LaneSelection } from './lanes.ts';
import { phasesByLane, type PhaseRow, type PhaseSource } from './phases.ts';
import { pyRepr, pyStrRepr } from '../formats/pythonFormat.ts';
import { HEATMAP_X_BUCKETS, REQUEST_STRIP_ROWS, checkLimit, checkTimelineWindow } from './limits.ts';
import { trajectoryLanes, type TrajectoryLane } from './trajectoryLanes.ts';
import type { HeatmapHeader, HeatmapRow } from '../wire/timeline.ts';

export const HEATMAP_METRICS = ['util', 'mem_mb', 'power_w', 'phase', 'lifecycle'] as const;
export type HeatmapMetric = (typeof HEATMAP_METRICS)[number];
const MAGNITUDES = new Set(['util', 'mem_mb', 'power_w']);

/** What heatmaps read from the telemetry store. */
export interface HeatmapSource extends PhaseSource {
  /** With `lanes` (`"<node>:<gpu>"` keys) cold hours may be read for those lanes only. */
  gpuUtilBlocks(t0?: number | null, t1?: number | null, lanes?: Iterable<string> | null): GpuUtilBlock[];
  /** The same blocks one at a time for a single pass (a long window stays within the memory budget). */
  gpuUtilPass(t0?: number | null, t1?: number | null, lanes?: Iterable<string> | null): Iterable<GpuUtilBlock>;
  /** The hours one at a time with their rollup cells (whole-window answers). */
  gpuUtilHours(t0?: number | null, t1?: number | null): Iterable<GpuUtilHour>;
  readonly lanes: LaneTable;
  trajectoryEvents(t0?: number | null, t1?: number | null): TrajectoryEvent[];
  metricsRecords(): readonly MetricsRecord[];
  streamVersion(stream: StreamName): number;
}

export interface HeatmapQuery {
  /** `util` (default), `mem_mb`, `power_w`, `phase` or `lifecycle`. */
  metric?: string;
  t0?: number | null;
  t1?: number | null;
  /** Within HEATMAP_X_BUCKETS. */
  xBuckets?: number;
  /** Lane-selection grammar (ignored by `lifecycle`). */
  lanes?: string | null;
  /**
   * rlsight's own, `lifecycle` only: every request of the window instead of the reference's first
   * 1,024, folded into at most this many density rows when there are more (in [1, 4000]).
   */
  maxRows?: number | null;
}

export type { HeatmapHeader, HeatmapRow };


export interface Heatmap {
  header: HeatmapHeader;
  /** Row-major `uint8[rows × x_buckets]`. */
  values: Uint8Array;
}

/** Every request of the window: one row each while they fit in `maxRows`, else density rows of `k` requests each. */
function requestStrip(all: readonly TrajectoryLane[], t0: number, t1: number, xb: number, maxRows: number): Heatmap {
  const matrix = paintLifecycle(all, t0, t1, xb);
  const header = (rows: HeatmapRow[]): HeatmapHeader => ({ rows, rows_total: all.length, x_buckets: xb, t0, t1, metric: 'lifecycle', scale: null, palette: [...LIFECYCLE_PALETTE] });
  if (all.length <= maxRows) return { header: header(all.map((l) => ({ sample_index: l.sample_index, group_index: l.group_index }))), values: matrix };
  const k = Math.ceil(all.length / maxRows);
  const rows: HeatmapRow[] = [];
  for (let i = 0; i < all.length; i += k) {
    const chunk = all.slice(i, i + k);
    rows.push({ first_sample: chunk[0]!.sample_index, last_sample: chunk.at(-1)!.sample_index, count: chunk.length, t0: chunk[0]!.first_ts, t1: Math.max(...chunk.map((l) => l.last_ts)) });
  }
  return { header: header(rows), values: foldLifecycleRows(matrix, all.length, xb, k) };
}

/** The validated, defaulted window of a heatmap-like query; null when the run has no data at all. */
export function resolveHeatmapWindow(store: { timeRange(): [number, number] | null }, t0q: number | null | undefined, t1q: number | null | undefined): { t0: number; t1: number } | null {
  checkTimelineWindow(t0q, t1q);
  const range = store.timeRange();
  if (range === null) return null;
  const t0 = t0q ?? range[0];
  const t1 = t1q ?? range[1];
  // The reference asserts here (HTTP 500) when a lone bound lies past the data; a 400 names the bound instead.
  if (!(t1 > t0)) {
    const param = t0q == null ? 't1' : 't0';
    throw new BadArgument(param, `empty heatmap window: t1=${pyRepr(t1)} <= t0=${pyRepr(t0)} (the data spans ${pyRepr(range[0])} to ${pyRepr(range[1])})`);
  }
  return { t0, t1 };
}

/** Lane rows of magnitude/phase heatmaps: the lane index entries in the selection. */
export function heatmapLaneRows(laneIndex: readonly LaneEntry[], sel: LaneSelection): { node: string; gpu: number; index: number; roles: string[] }[] {
  return laneIndex.filter((l) => sel === null || sel.has(`${l.node}:${l.gpu}`)).map((l) => ({ node: l.node, gpu: l.gpu, index: l.index, roles: [...l.roles] }));
}

/** Row of each store lane id in `rows` (-1 when not a row). */
/** Heatmap row per lane id (-1 = not shown), extended as parsing interns new lane ids. */
export class LaneRows {
  private readonly byKey = new Map<string, number>();
  private map = new Int32Array(0);

  constructor(
    private readonly lanes: LaneTable,
    rows: readonly { node: string; gpu: number }[],
  ) {
    rows.forEach((r, i) => this.byKey.set(`${r.node}:${r.gpu}`, i));
  }

  /** The map over every lane id interned so far. */
  current(): Int32Array {
    const n = this.lanes.size;
    if (this.map.length < n) {
      const next = new Int32Array(n);
      next.set(this.map);
      for (let id = this.map.length; id < n; id++) next[id] = this.byKey.get(this.lanes.key(id)) ?? -1;
      this.map = next;
    }
    return this.map;
  }
}

/** Per-cell maxima (NaN = no sample) of util, mem_mb or power_w over rows in `[t0, t1]`. */
export function magnitudeCells(
  hours: Iterable<GpuUtilHour>,
  laneRows: LaneRows,
  rows: number,
  metric: string,
  t0: number,
  t1: number,
  xb: number,
): Float64Array {
  const cells = new Float64Array(rows * xb).fill(NaN);
  const kind = metric === 'util' ? 0 : metric === 'mem_mb' ? 1 : 2;
  let rowOfLane = laneRows.current();
  const put = (x: number, lane: number, v: number): void => {
    const r = lane < rowOfLane.length ? rowOfLane[lane] : -1;
    // (a negative power is the GPU sampler's mark for none reported: no sample, not a reading)
    if (r < 0 || v < 0) return;
    const c = r * xb + x;
    if (!(cells[c] >= v)) cells[c] = v;
  };
  windowPass(hours, t0, t1, xb, {
    hour: () => {
      rowOfLane = laneRows.current();
    },
    cell: (x, lane, c, k) => put(x, lane, kind === 0 ? c.maxUtil[k] : kind === 1 ? c.maxMem[k] : c.maxPower[k]),
    row: (x, lane, r, i) => put(x, lane, kind === 0 ? r.util[i] : kind === 1 ? rowMem(r, i) : rowPower(r, i)),
  });
  return cells;
}

/** Bucket width from which a magnitude heatmap reads rollup cells rather than (possibly selective) raw rows. */
const HEATMAP_CELLS_FROM_S = UTIL_CELL_S;

function emptyHeatmap(metric: string, xb: number): Heatmap {
  return { header: { rows: [], x_buckets: xb, t0: 0.0, t1: 0.0, metric, scale: null, palette: null }, values: new Uint8Array(0) };
}

/**
 * `GET /api/timeline/heatmap` (before framing). Missing bounds default to the run's time range; a run
 * without data gives an empty heatmap. Magnitudes: bucket maxima scaled to a byte (util against 100,
 * mem/power against the window peak). `phase`: palette ids painted idle-first. `lifecycle`: one row per
 * trajectory (first 1,024 by first event), queue under generating/tool_wait.
 */
export function heatmap(store: HeatmapSource, q: HeatmapQuery = {}): Heatmap {
  const xb = checkLimit(HEATMAP_X_BUCKETS, q.xBuckets ?? HEATMAP_X_BUCKETS.fallback);
  const metric = q.metric ?? 'util';
  // Checked before the data: the reference skips this on a run without data, but a bad metric is always a bad request.
  if (!(HEATMAP_METRICS as readonly string[]).includes(metric)) throw new BadArgument('metric', `unknown heatmap metric ${pyStrRepr(metric)}`);
  const sel = resolveLanes(q.lanes, store.laneIndex());
  const w = resolveHeatmapWindow(store, q.t0, q.t1);
  if (w === null) return emptyHeatmap(metric, xb);
  const { t0, t1 } = w;

  if (metric === 'lifecycle' && q.maxRows != null) {
    checkLimit(REQUEST_STRIP_ROWS, q.maxRows);
    return requestStrip(trajectoryLanes(store, { t0, t1 }), t0, t1, xb, q.maxRows);
  }
  if (metric === 'lifecycle') {
    const all = trajectoryLanes(store, { t0, t1 });
    const lanes = all.slice(0, LIFECYCLE_MAX_ROWS);
    return {
      header: {
        rows: lanes.map((l) => ({ sample_index: l.sample_index, group_index: l.group_index })),
        rows_total: all.length,
        x_buckets: xb,
        t0,
        t1,
        metric,
        scale: null,
        palette: [...LIFECYCLE_PALETTE],
      },
      values: paintLifecycle(lanes, t0, t1, xb),
    };
  }

  const rows = heatmapLaneRows(store.laneIndex(), sel);
  if (MAGNITUDES.has(metric)) {
    const hours =
      (t1 - t0) / xb >= HEATMAP_CELLS_FROM_S ? store.gpuUtilHours(t0, t1) : blockHours(store.gpuUtilPass(t0, t1, selectiveLaneKeys(sel, store.laneIndex().length)));
    const cells = magnitudeCells(hours, new LaneRows(store.lanes, rows), rows.length, metric, t0, t1, xb);
    const scaleMax = metric === 'util' ? 100.0 : peakOf(cells);
    return { header: { rows, x_buckets: xb, t0, t1, metric, scale: { max: scaleMax }, palette: null }, values: magnitudeBytes(cells, scaleMax) };
  }

  const phaseRows = phaseHeatmapMatrix(store, rows, sel, t0, t1, xb);
  return { header: { rows, x_buckets: xb, t0, t1, metric, scale: null, palette: phaseRows.palette }, values: phaseRows.matrix };
}

/** Recent `phasesByLane` answers per store: the phase carpet, fleet and outliers re-ask for the same window. */
const phaseRowsMemo = new WeakMap<object, Map<string, PhaseRow[]>>();
const PHASE_ROWS_KEPT = 2;

/**
 * `phasesByLane(store, {t0, t1, lanes: sel})`, memoized on the window, the selection and everything the
 * answer depends on (phases, topology, meta, lane index, the data edge open markers grow to).
 * The rows are shared: callers must not modify them.
 */
export function phaseRowsOf(store: PhaseSource & { streamVersion(stream: StreamName): number }, t0: number | null, t1: number | null, sel: LaneSelection): readonly PhaseRow[] {
  const key = [
    t0,
    t1,
    sel === null ? '*' : [...sel].sort().join(','),
    store.streamVersion('phases'),
    store.streamVersion('topology'),
    JSON.stringify(store.timeRange()),
    store.meta()?.start_ts ?? 'none',
    (store as { laneIndexVersion?: number }).laneIndexVersion ?? store.laneIndex().length,
  ].join('|');
  let memo = phaseRowsMemo.get(store);
  if (memo === undefined) phaseRowsMemo.set(store, (memo = new Map()));
  let rows = memo.get(key);
  if (rows === undefined) {
    rows = phasesByLane(store, { t0, t1, lanes: sel });
    if (memo.size >= PHASE_ROWS_KEPT) memo.delete(memo.keys().next().value!);
    memo.set(key, rows);
  }
  return rows;
}

/** The phase carpet of `rows` over `[t0, t1]`. */
export function phaseHeatmapMatrix(
  store: PhaseSource & { streamVersion(stream: StreamName): number },
  rows: readonly { node: string; gpu: number }[],
  sel: LaneSelection,
  t0: number,
  t1: number,
  xb: number,
): { palette: string[]; matrix: Uint8Array } {
  const rowByKey = new Map<string, number>();
  rows.forEach((r, i) => rowByKey.set(`${r.node}:${r.gpu}`, i));
  return paintPhases(phaseRowsOf(store, t0, t1, sel), (node, gpu) => rowByKey.get(`${node}:${gpu}`) ?? -1, rows.length, t0, t1, xb);
}

/** The wire bytes of a heatmap: `[u32 LE header length][header JSON][matrix]`. */
export function encodeHeatmap(h: Heatmap): Uint8Array {
  return encodeHeatmapFrame(h.header, h.values);
}
