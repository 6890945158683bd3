// Layer: NVML utilisation (filled area, 0–100 %) and optionally memory (line, scaled to a shared max).
import { alpha, MEM_COLOR, UTIL_COLOR } from '../../../theme.ts';
import { type Frame, xOf } from '../viewport.ts';

/** A spacing this many times the series' median one is a gap in the record, as the Metrics charts break theirs. */
export const GAP_FACTOR = 4;

const breaksMemo = new WeakMap<object, { n: number; breaks: Uint8Array }>();

/**
 * Where a series' line breaks: `breaks[i]` is 1 when sample `i` follows sample `i - 1` by more than GAP_FACTOR
 * times the median spacing (the sampler stopped: no line is drawn across the silence). Three samples at
 * least tell the usual spacing; timestamps ascending. Kept per timestamp column, as lanes are redrawn often.
 */
export function gapBreaks(ts: ArrayLike<number>): Uint8Array {
  const n = ts.length;
  const key = typeof ts === 'object' ? (ts as object) : null;
  const hit = key === null ? undefined : breaksMemo.get(key);
  if (hit !== undefined && hit.n === n) return hit.breaks;
  const breaks = new Uint8Array(n);
  if (n >= 3) {
    const dx = new Float64Array(n - 1);
    let m = 0;
    for (let i = 1; i < n; i++) {
      const d = ts[i]! - ts[i - 1]!;
      // repeated stamps say nothing of the spacing
      if (d > 0) dx[m++] = d;
    }
    if (m > 0) {
      const sorted = dx.subarray(0, m).sort();
      const limit = GAP_FACTOR * sorted[m >> 1]!;
      for (let i = 1; i < n; i++) if (ts[i]! - ts[i - 1]! > limit) breaks[i] = 1;
    }
  }
  if (key !== null) breaksMemo.set(key, { n, breaks });
  return breaks;
}

export function drawSeries(
  ctx: CanvasRenderingContext2D,
  f: Frame,
  ts: ArrayLike<number>,
  values: ArrayLike<number | null>,
  max: number,
  y: number,
  h: number,
  style: { stroke: string; fill?: string; width?: number; dash?: number[] },
): void {
  if (!ts.length || max <= 0) return;
  const base = y + h;
  ctx.save();
  ctx.beginPath();
  ctx.rect(f.left, y - 1, f.width, h + 2);
  ctx.clip();
  ctx.lineWidth = style.width ?? 1;
  ctx.setLineDash(style.dash ?? []);
  const path = new Path2D();
  const area = style.fill ? new Path2D() : null;
  const breaks = gapBreaks(ts);
  let open = false;
  let points = 0;
  let firstX = 0;
  let lastX = 0;
  let lastY = 0;
  const closeArea = () => {
    // a sample alone between two silences is a short stroke, not nothing
    if (open && points === 1) path.lineTo(lastX + 1, lastY);
    if (area && open) {
      area.lineTo(lastX, base);
      area.lineTo(firstX, base);
      area.closePath();
    }
    open = false;
  };
  for (let i = 0; i < ts.length; i++) {
    const v = values[i];
    if (v === null || v === undefined || !Number.isFinite(v)) {
      closeArea();
      continue;
    }
    if (breaks[i]) closeArea();
    const x = xOf(f, ts[i]!);
    const yy = base - (Math.min(v, max) / max) * h;
    if (!open) {
      points = 0;
      path.moveTo(x, yy);
      area?.moveTo(x, base);
      area?.lineTo(x, yy);
      firstX = x;
      open = true;
    } else {
      path.lineTo(x, yy);
      area?.lineTo(x, yy);
    }
    points++;
    lastX = x;
    lastY = yy;
  }
  closeArea();
  if (area && style.fill) {
    ctx.fillStyle = style.fill;
    ctx.fill(area);
  }
  ctx.strokeStyle = style.stroke;
  ctx.stroke(path);
  ctx.restore();
}

export function drawUtil(ctx: CanvasRenderingContext2D, f: Frame, ts: ArrayLike<number>, util: ArrayLike<number>, y: number, h: number): void {
  drawSeries(ctx, f, ts, util, 100, y, h, { stroke: alpha(UTIL_COLOR, 0.95), fill: alpha(UTIL_COLOR, 0.16) });
}

export function drawMem(ctx: CanvasRenderingContext2D, f: Frame, ts: ArrayLike<number>, mem: ArrayLike<number>, memMax: number, y: number, h: number): void {
  drawSeries(ctx, f, ts, mem, memMax, y, h, { stroke: MEM_COLOR, width: 1.25, dash: [4, 3] });
}
