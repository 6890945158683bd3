// Heatmap cell painting over plain arrays: time buckets, magnitude bytes, phase and lifecycle carpets.
import type { TrajectoryLane } from './trajectoryLanes.ts';

/** Phases painted first, so any active phase wins a shared bucket. */
export const IDLE_PHASES: ReadonlySet<string> = new Set(['initialize', 'train_wait', 'sleep']);
export const LIFECYCLE_PALETTE = ['', 'queue', 'generating', 'tool_wait'] as const;
export const LIFECYCLE_MAX_ROWS = 1024;

/** `min(xb-1, max(0, trunc((ts - t0) / span * xb)))`. */
export function bucketOf(ts: number, t0: number, span: number, xb: number): number {
  const b = Math.trunc(((ts - t0) / span) * xb);
  return b > 0 ? (b >= xb ? xb - 1 : b) : 0; // also maps trunc's -0 to 0
}

/**
 * Bytes of a magnitude heatmap from per-cell maxima (NaN = no sample):
 * `min(255, trunc(v / scaleMax * 255))`, unfilled cells 0.
 */
export function magnitudeBytes(cells: Float64Array, scaleMax: number): Uint8Array {
  const out = new Uint8Array(cells.length);
  for (let i = 0; i < cells.length; i++) {
    const v = cells[i];
    if (v !== v) continue;
    const b = Math.trunc((v / scaleMax) * 255);
    out[i] = b >= 255 ? 255 : b > 0 ? b : 0;
  }
  return out;
}

/** The largest filled cell, or 1.0 when none is filled (the mem/power scale). */
export function peakOf(cells: Float64Array): number {
  let peak = -Infinity;
  for (let i = 0; i < cells.length; i++) if (cells[i] > peak) peak = cells[i];
  return peak === -Infinity ? 1.0 : peak;
}

/** A phase interval as `phasesByLane` emits it. */
export interface PaintablePhase {
  name: string;
  t0: number;
  t1: number;
  node: string;
  gpu: number;
}

/**
 * Phase carpet: `palette = ["", ...sorted names]`; idle phases paint first, then the rest, each in the
 * given (node, gpu, t0) order; every interval overwrites its inclusive bucket span
 * `[bucket(max(e.t0, t0)), bucket(min(e.t1, t1))]`. `rowOf` gives the row of a lane or -1.
 */
export function paintPhases(
  phases: readonly PaintablePhase[],
  rowOf: (node: string, gpu: number) => number,
  rows: number,
  t0: number,
  t1: number,
  xb: number,
): { palette: string[]; matrix: Uint8Array } {
  const idOf = new Map<string, number>();
  for (const p of phases) if (!idOf.has(p.name)) idOf.set(p.name, 0);
  const names = [...idOf.keys()].sort(codePointCompare);
  names.forEach((n, i) => idOf.set(n, i + 1));
  const palette = ['', ...names];
  const matrix = new Uint8Array(rows * xb);
  const span = t1 - t0;
  // Resolve each interval's row and id once; rows of one lane are contiguous in (node, gpu, t0) order.
  const rowIds = new Int32Array(phases.length);
  let lastNode = '';
  let lastGpu = NaN;
  let lastRow = -1;
  for (let k = 0; k < phases.length; k++) {
    const e = phases[k];
    if (e.node !== lastNode || e.gpu !== lastGpu) {
      lastNode = e.node;
      lastGpu = e.gpu;
      lastRow = rowOf(e.node, e.gpu);
    }
    rowIds[k] = lastRow;
  }
  const paint = (idle: boolean): void => {
    for (let k = 0; k < phases.length; k++) {
      const r = rowIds[k];
      if (r < 0) continue;
      const e = phases[k];
      if (IDLE_PHASES.has(e.name) !== idle) continue;
      const b0 = bucketOf(Math.max(e.t0, t0), t0, span, xb);
      const b1 = bucketOf(Math.min(e.t1, t1), t0, span, xb);
      // ids above 255 cannot be stored in a byte; a run never has that many phase names
      const id = idOf.get(e.name)! & 0xff;
      if (b1 >= b0) matrix.fill(id, r * xb + b0, r * xb + b1 + 1);
    }
  };
  paint(true);
  paint(false);
  return { palette, matrix };
}

/**
 * Lifecycle carpet rows: per lane attempts paint `queue` (1), then gen (2) / tool (3) segments;
 * an open end stretches to the window edge.
 */
export function paintLifecycle(lanes: readonly TrajectoryLane[], t0: number, t1: number, xb: number): Uint8Array {
  const matrix = new Uint8Array(lanes.length * xb);
  const span = t1 - t0;
  const fill = (row: number, a: number | null, b: number | null, id: number): void => {
    // `a or t0` in the reference: a missing bound means the window edge
    const b0 = bucketOf(a || t0, t0, span, xb);
    const b1 = bucketOf(b || t1, t0, span, xb);
    if (b1 >= b0) matrix.fill(id, row * xb + b0, row * xb + b1 + 1);
  };
  lanes.forEach((lane, row) => {
    for (const a of lane.attempts) fill(row, a.t0, a.t1, 1);
    for (const s of lane.segments) fill(row, s.t0, s.t1, s.kind === 'gen' ? 2 : 3);
  });
  return matrix;
}

/** Python's default string order (UTF-16 units here; equal outside astral characters), not locale order. */
export function codePointCompare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Which state a density row shows where its requests differ: generating over tool wait over queued. */
const STATE_WEIGHT = [0, 1, 3, 2];

/**
 * Folds each `k` consecutive rows of a lifecycle matrix into one density row: per bucket the busiest
 * state any of them is in, so a row still shows when its requests generate, wait on tools or queue.
 */
export function foldLifecycleRows(matrix: Uint8Array, rows: number, xb: number, k: number): Uint8Array {
  const out = new Uint8Array(Math.ceil(rows / k) * xb);
  for (let r = 0; r < rows; r++) {
    const o = Math.floor(r / k) * xb;
    const src = r * xb;
    for (let c = 0; c < xb; c++) {
      const v = matrix[src + c]!;
      if (STATE_WEIGHT[v]! > STATE_WEIGHT[out[o + c]!]!) out[o + c] = v;
    }
  }
  return out;
}
