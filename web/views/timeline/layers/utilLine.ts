// Layer: NVML utilisation (filled area, 0–100 %) and optionally memory (line, scaled to a shared max).
import { alpha, MEM_COLOR, UTIL_COLOR } from '../../../theme.ts';
import { type Frame, xOf } from '../viewport.ts';

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
  let open = false;
  let firstX = 0;
  let lastX = 0;
  const closeArea = () => {
    if (area && open) {
      area.lineTo(lastX, base);
      area.lineTo(firstX, base);
      area.closePath();
    }
  };
  for (let i = 0; i < ts.length; i++) {
    const v = values[i];
    if (v === null || v === undefined || !Number.isFinite(v)) {
      closeArea();
      open = false;
      continue;
    }
    const x = xOf(f, ts[i]!);
    const yy = base - (Math.min(v, max) / max) * h;
    if (!open) {
      path.moveTo(x, yy);
      area?.moveTo(x, base);
      area?.lineTo(x, yy);
      firstX = x;
      open = true;
    } else {
      path.lineTo(x, yy);
      area?.lineTo(x, yy);
    }
    lastX = x;
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
