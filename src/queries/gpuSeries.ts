// GPU series per lane: util / mem / power over a window, min/max-downsampled on util so spikes survive.
import { compareLanes, type GpuUtilBlock, type LaneEntry, type LaneTable } from '../run/model.ts';
import { minmaxIndices } from './downsample.ts';
import { resolveLanes, selectiveLaneKeys, type LaneSelection } from './lanes.ts';
import { SERIES_MAX_POINTS, checkLimit, checkTimelineWindow } from './limits.ts';
import type { GpuAnswer, GpuSeries } from '../wire/timeline.ts';

/** What the GPU queries read from the telemetry store. */
export interface GpuUtilSource {
  /** With `lanes` (`"<node>:<gpu>"` keys) cold hours may be read for those lanes only. */
  gpuUtilBlocks(t0?: number | null, t1?: number | null, lanes?: Iterable<string> | null): GpuUtilBlock[];
  readonly lanes: LaneTable;
  laneIndex(): readonly LaneEntry[];
}

export interface GpuSeriesQuery {
  t0?: number | null;
  t1?: number | null;
  /** Lane-selection grammar (`rank:0-3, g:8, …`); absent/blank/`all` = every lane. */
  lanes?: string | null;
  /** At least 2; default 2000. */
  maxPoints?: number;
}

export type GpuLaneSeries = GpuSeries;

/** One lane's samples in a window, time-sorted, as parallel columns. */
export interface LaneSamples {
  laneId: number;
  ts: Float64Array;
  util: Float64Array;
  /** `(block, row)` of each sample, to read mem/power for the samples kept. */
  blockOf: Uint16Array;
  rowOf: Uint32Array;
}

/** Store lane ids selected by `sel`, in `(node, gpu)` order (node compared as a string). */
export function selectedLaneIds(lanes: LaneTable, sel: LaneSelection): number[] {
  const ids: number[] = [];
  for (let id = 0; id < lanes.size; id++) {
    if (sel === null || sel.has(lanes.key(id))) ids.push(id);
  }
  const key = (id: number) => ({ node: lanes.node(id), gpu: lanes.gpu(id) });
  return ids.sort((a, b) => compareLanes(key(a), key(b)));
}

/**
 * Samples of each wanted lane with `t0 <= ts <= t1` across `blocks` (block order, then file order),
 * stably sorted by ts. Lanes without a sample in the window are left out. Blocks outside the window
 * are skipped whole; blocks inside it need no per-row test. Lanes are handed out one at a time, so only
 * one lane's samples are held however many lanes are asked for.
 */
export function* laneSamples(blocks: readonly GpuUtilBlock[], laneIds: readonly number[], t0: number | null, t1: number | null): Generator<LaneSamples> {
  const lo = t0 ?? -Infinity;
  const hi = t1 ?? Infinity;
  const used: { k: number; ts: Float64Array; util: ArrayLike<number>; offsets: Uint32Array; rows: Uint32Array; inside: boolean }[] = [];
  blocks.forEach((b, k) => {
    if (b.length === 0 || b.tsMin > hi || b.tsMax < lo) return;
    const { offsets, rows } = b.laneRows();
    used.push({ k, ts: b.ts, util: b.util, offsets, rows, inside: b.tsMin >= lo && b.tsMax <= hi });
  });
  for (const laneId of laneIds) {
    let cap = 0;
    for (const u of used) if (laneId + 1 < u.offsets.length) cap += u.offsets[laneId + 1] - u.offsets[laneId];
    if (cap === 0) continue;
    const tsOut = new Float64Array(cap);
    const utilOut = new Float64Array(cap);
    const blockOf = new Uint16Array(cap);
    const rowOf = new Uint32Array(cap);
    let m = 0;
    let sorted = true;
    for (const u of used) {
      if (laneId + 1 >= u.offsets.length) continue;
      const { ts, util, rows, inside } = u;
      const end = u.offsets[laneId + 1];
      for (let j = u.offsets[laneId]; j < end; j++) {
        const r = rows[j];
        const t = ts[r];
        if (!inside && !(t >= lo && t <= hi)) continue;
        if (m > 0 && t < tsOut[m - 1]) sorted = false;
        tsOut[m] = t;
        utilOut[m] = util[r];
        blockOf[m] = u.k;
        rowOf[m] = r;
        m++;
      }
    }
    if (m === 0) continue;
    const s = { laneId, ts: tsOut.subarray(0, m), util: utilOut.subarray(0, m), blockOf: blockOf.subarray(0, m), rowOf: rowOf.subarray(0, m) };
    yield sorted ? s : sortSamples(s);
  }
}

function sortSamples(s: LaneSamples): LaneSamples {
  const order = Array.from({ length: s.ts.length }, (_, i) => i).sort((a, b) => s.ts[a] - s.ts[b] || a - b);
  return {
    laneId: s.laneId,
    ts: Float64Array.from(order, (i) => s.ts[i]),
    util: Float64Array.from(order, (i) => s.util[i]),
    blockOf: Uint16Array.from(order, (i) => s.blockOf[i]),
    rowOf: Uint32Array.from(order, (i) => s.rowOf[i]),
  };
}

/**
 * `GET /api/timeline/gpu`: per selected lane (sorted lane keys) the samples in `[t0, t1]`, sorted by ts,
 * min/max-downsampled on util to at most `maxPoints`; mem_mb and power_w take the same indices.
 */
export function gpuSeries(store: GpuUtilSource, q: GpuSeriesQuery = {}): GpuAnswer {
  return { lanes: Object.fromEntries(gpuLaneSeries(store, q)) };
}

/** The lanes of `gpuSeries`, one `[key, series]` at a time (a caller may pause between lanes). */
export function* gpuLaneSeries(store: GpuUtilSource, q: GpuSeriesQuery = {}): Generator<[string, GpuLaneSeries]> {
  const maxPoints = checkLimit(SERIES_MAX_POINTS, q.maxPoints ?? SERIES_MAX_POINTS.fallback);
  const t0 = q.t0 ?? null;
  const t1 = q.t1 ?? null;
  checkTimelineWindow(t0, t1);
  const laneIndex = store.laneIndex();
  const sel = resolveLanes(q.lanes, laneIndex);
  const blocks = store.gpuUtilBlocks(t0, t1, selectiveLaneKeys(sel, laneIndex.length));
  // blocks of small integers only (the compact schema) answer in integer columns: the same values in
  // under half the bytes; a wide block's values keep their floats
  const compact = blocks.every((b) => !b.wide);
  for (const s of laneSamples(blocks, selectedLaneIds(store.lanes, sel), t0, t1)) {
    const util = s.util;
    const idx = minmaxIndices(util, maxPoints);
    // typed columns: a 1,024-lane hour is ~15 M numbers, written to JSON in chunks, never as one array of objects
    const ts = new Float64Array(idx.length);
    const utilOut = compact ? new Uint8Array(idx.length) : new Float64Array(idx.length);
    const mem = compact ? new Uint32Array(idx.length) : new Float64Array(idx.length);
    const power = compact ? new Uint16Array(idx.length) : new Float64Array(idx.length);
    for (let k = 0; k < idx.length; k++) {
      const i = idx[k];
      const b = blocks[s.blockOf[i]];
      const r = s.rowOf[i];
      ts[k] = s.ts[i];
      utilOut[k] = util[i];
      mem[k] = b.memMb(r);
      power[k] = b.powerW(r);
    }
    yield [store.lanes.key(s.laneId), { ts, util: utilOut, mem_mb: mem, power_w: power }];
  }
}
