// Layer: the request lifecycle strip — one row per request, coloured queued / generating / tool wait.
import { LIFECYCLE_COLORS } from '../../../theme.ts';
import type { HeatmapHeader } from '../../../../src/wire/index.ts';
import { drawRaster, paletteLut } from './raster.ts';

export interface Lifecycle {
  header: HeatmapHeader;
  values: Uint8Array;
}

export function lifecycleLut(palette: string[]): Uint8ClampedArray {
  return paletteLut(palette.map((name) => (name ? (LIFECYCLE_COLORS[name === 'tool' ? 'tool_wait' : name] ?? '#9c9488') : null)));
}

export function drawLifecycle(ctx: CanvasRenderingContext2D, lc: Lifecycle, x: number, y: number, w: number, h: number): void {
  const rows = lc.header.rows.length;
  drawRaster(ctx, lc.values, rows, lc.header.x_buckets, lifecycleLut(lc.header.palette ?? []), x, y, w, h);
}
