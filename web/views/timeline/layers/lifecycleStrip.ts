// Layer: the request lifecycle strip — one row per request, coloured queued / generating / tool wait (or a
// density row folding several requests when the window holds more than fit) — and what its rows say.
import { CSS, LIFECYCLE_COLORS } from '../../../theme.ts';
import type { HeatmapHeader } from '../../../../src/wire/index.ts';
import { drawRaster, paletteLut } from './raster.ts';
import type { Frame } from '../viewport.ts';

export interface Lifecycle {
  header: HeatmapHeader;
  values: Uint8Array;
}

/** Height of the strip's title line. */
export const LC_TITLE = 18;
/** Request rows are at least this tall, so each is a target a pointer can hit. */
export const MIN_REQUEST_ROW_H = 4;
/** Tall enough for one step's batch (128 requests and the stragglers around it) at one row each. */
const MAX_STRIP_H = 600;
/** How many rows the strip asks for: beyond this the server folds requests into density rows. */
export const REQUEST_STRIP_ROWS = Math.floor(MAX_STRIP_H / MIN_REQUEST_ROW_H);

export function lifecycleHeight(rows: number): number {
  return rows ? Math.max(24, rows * Math.min(10, Math.max(MIN_REQUEST_ROW_H, MAX_STRIP_H / rows))) : 0;
}

/** A density row: several consecutive requests drawn as one (the window holds more than fit). */
export interface DensityRow {
  first_sample: number;
  last_sample: number;
  count: number;
  t0: number;
  t1: number;
}

export function lifecycleLut(palette: string[]): Uint8ClampedArray {
  return paletteLut(palette.map((name) => (name ? (LIFECYCLE_COLORS[name === 'tool' ? 'tool_wait' : name] ?? '#9c9488') : null)));
}

export function drawLifecycle(ctx: CanvasRenderingContext2D, lc: Lifecycle, x: number, y: number, w: number, h: number): void {
  const rows = lc.header.rows.length;
  drawRaster(ctx, lc.values, rows, lc.header.x_buckets, lifecycleLut(lc.header.palette ?? []), x, y, w, h);
}

/** Draws the strip's title and its rows below `top` (`h` tall), placed on the frame's time axis. */
export function drawRequestStrip(ctx: CanvasRenderingContext2D, f: Frame, lc: Lifecycle, top: number, h: number): void {
  const rows = lc.header.rows.length;
  ctx.fillStyle = CSS.text;
  ctx.fillText('requests', 8, top + LC_TITLE / 2);
  ctx.fillStyle = CSS.muted;
  const total = lc.header.rows_total ?? rows;
  const perRow = rowDensity(lc, 0)?.count ?? 1;
  ctx.fillText(
    `${total} request${total === 1 ? '' : 's'}${perRow > 1 ? ` · up to ${perRow} per row (zoom in to see each)` : ''}${total > rows && perRow === 1 ? ` · first ${rows}` : ''} · queued / generating / tool`,
    f.left,
    top + LC_TITLE / 2,
  );
  const hd = lc.header;
  // The strip was fetched for its own window; place it on the shared axis.
  const x0 = f.left + ((hd.t0 - f.vp.t0) / (f.vp.t1 - f.vp.t0)) * f.width;
  const x1 = f.left + ((hd.t1 - f.vp.t0) / (f.vp.t1 - f.vp.t0)) * f.width;
  ctx.save();
  ctx.beginPath();
  ctx.rect(f.left, top + LC_TITLE, f.width, h);
  ctx.clip();
  drawLifecycle(ctx, lc, x0, top + LC_TITLE, x1 - x0, h);
  ctx.restore();
}

/** Time of a row's last painted cell: the sample's last event, which the consuming step closes after. */
export function rowLastTime(lc: Lifecycle, row: number): number {
  const { x_buckets: xb, t0, t1 } = lc.header;
  for (let c = xb - 1; c >= 0; c--) if (lc.values[row * xb + c]) return t0 + ((c + 1) / xb) * (t1 - t0);
  return t1;
}

/** The lifecycle state id painted at time t on a row (0 where the row is idle). */
export function lifecycleCellAt(lc: Lifecycle, row: number, t: number): number {
  const h = lc.header;
  const col = Math.floor(((t - h.t0) / (h.t1 - h.t0)) * h.x_buckets);
  return col >= 0 && col < h.x_buckets ? lc.values[row * h.x_buckets + col]! : 0;
}

export function rowDensity(lc: Lifecycle | null, row: number): DensityRow | null {
  const info = lc?.header.rows[row] as Partial<DensityRow> | undefined;
  return info && typeof info.count === 'number' ? (info as DensityRow) : null;
}

export function rowSample(lc: Lifecycle | null, row: number): { sample: number; group: number } | null {
  const info = lc?.header.rows[row] as { sample_index?: number; group_index?: number } | undefined;
  return info && typeof info.sample_index === 'number' ? { sample: info.sample_index, group: info.group_index ?? -1 } : null;
}

/** The tooltip of a density row over a painted cell of state `state`. */
export function densityTip(dense: DensityRow, state: string, time: string): string[] {
  return [
    `${dense.count} requests (samples ${dense.first_sample} … ${dense.last_sample})   ${time}`,
    `busiest state here: ${state}`,
    'click = zoom to these requests (each gets its own row)',
  ];
}

/** The tooltip of one request's row: its sample, state, and the step it belongs to once known (null: not yet). */
export function requestTip(
  s: { sample: number; group: number },
  state: string,
  time: string,
  known: { rolloutId: number; status: string | null } | 'none' | null,
): string[] {
  return [
    `sample ${s.sample} (group ${s.group})   ${time}`,
    `state: ${state}`,
    known === 'none' ? 'not in any dumped training step' : known ? `step ${known.rolloutId} · status: ${known.status ?? 'unfinished'}` : 'step · status: …',
    known === 'none' ? 'no sample page to open' : 'click = open this sample',
  ];
}
