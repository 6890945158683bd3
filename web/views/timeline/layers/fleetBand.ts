// Layer: fleet utilisation band — p10–p90 strip, median line and dashed minimum, per time bucket.
import { alpha, CSS, UTIL_COLOR } from '../../../theme.ts';
import type { Fleet } from '../../../../src/wire/index.ts';

export function drawBand(ctx: CanvasRenderingContext2D, fleet: Fleet, x: number, y: number, w: number, h: number): void {
  const n = fleet.x_buckets;
  const cx = (b: number) => x + ((b + 0.5) / n) * w;
  const cy = (v: number) => y + h - (Math.min(100, Math.max(0, v)) / 100) * h;
  ctx.strokeStyle = CSS.grid;
  for (const v of [0, 50, 100]) {
    ctx.beginPath();
    ctx.moveTo(x, Math.round(cy(v)) + 0.5);
    ctx.lineTo(x + w, Math.round(cy(v)) + 0.5);
    ctx.stroke();
  }
  const { p10, p50, p90, min } = fleet.band;
  ctx.fillStyle = alpha(UTIL_COLOR, 0.22);
  for (let b = 0; b < n; b++) {
    const lo = p10[b];
    const hi = p90[b];
    if (lo == null || hi == null) continue;
    const bx0 = Math.floor(x + (b / n) * w);
    const bx1 = Math.floor(x + ((b + 1) / n) * w);
    ctx.fillRect(bx0, cy(hi), Math.max(1, bx1 - bx0), Math.max(1, cy(lo) - cy(hi)));
  }
  const line = (vals: (number | null)[], color: string, dash: number[]) => {
    ctx.strokeStyle = color;
    ctx.setLineDash(dash);
    ctx.lineWidth = 1.5;
    ctx.beginPath();
    let open = false;
    for (let b = 0; b < n; b++) {
      const v = vals[b];
      if (v == null) continue; // Bridge empty buckets: the band is about trends, not gaps.
      if (!open) ctx.moveTo(cx(b), cy(v));
      else ctx.lineTo(cx(b), cy(v));
      open = true;
    }
    ctx.stroke();
    ctx.setLineDash([]);
    ctx.lineWidth = 1;
  };
  line(min, '#ff6b6b', [4, 3]);
  line(p50, UTIL_COLOR, []);
}
