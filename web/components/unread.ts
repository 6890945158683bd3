// The stretches of a partial answer not read yet (hours of a window, steps of a run), hatched, so an empty stretch is not taken for idle GPUs or a gap.
import { CSS } from '../theme.ts';
import type { Coverage } from '../../src/wire/index.ts';

export function drawUnread(ctx: CanvasRenderingContext2D, coverage: Pick<Coverage, 'unread'> | undefined, t0: number, t1: number, x: number, y: number, w: number, h: number): void {
  if (!coverage || !(t1 > t0)) return;
  const px = (t: number) => x + ((Math.min(t1, Math.max(t0, t)) - t0) / (t1 - t0)) * w;
  ctx.save();
  for (const [a, b] of coverage.unread) {
    const x0 = Math.floor(px(a));
    const x1 = Math.ceil(px(b));
    if (x1 - x0 < 1) continue;
    ctx.beginPath();
    ctx.rect(x0, y, x1 - x0, h);
    ctx.clip();
    ctx.fillStyle = 'rgba(20, 20, 24, 0.55)';
    ctx.fillRect(x0, y, x1 - x0, h);
    ctx.strokeStyle = CSS.muted;
    ctx.globalAlpha = 0.45;
    ctx.lineWidth = 1;
    ctx.beginPath();
    for (let s = x0 - h; s < x1; s += 7) {
      ctx.moveTo(s, y + h);
      ctx.lineTo(s + h, y);
    }
    ctx.stroke();
    ctx.globalAlpha = 1;
    if (x1 - x0 > 90) {
      ctx.fillStyle = CSS.muted;
      ctx.font = '11px system-ui, sans-serif';
      ctx.textBaseline = 'middle';
      ctx.textAlign = 'left';
      ctx.fillText('not yet read', x0 + 6, y + h / 2);
    }
    ctx.restore();
    ctx.save();
  }
  ctx.restore();
}
