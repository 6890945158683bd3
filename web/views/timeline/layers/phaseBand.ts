// Layer: one lane's phase band, coloured per phase; idle phases hatched so idleness does not rely on hue.
// When phases of different roles overlap (colocated trainer and engine), the band splits: train on top, rollout below.
import { IDLE_PHASES, phaseColor } from '../../../theme.ts';
import type { Phase } from '../../../../src/wire/index.ts';
import { type Frame, xOf } from '../viewport.ts';

/** True when two phases of the lane overlap in time (phases come sorted by t0). */
export function hasOverlap(phases: readonly Phase[]): boolean {
  let end = -Infinity;
  for (const p of phases) {
    if (p.t0 < end - 1e-6) return true;
    if (p.t1 > end) end = p.t1;
  }
  return false;
}

export function drawPhaseBand(ctx: CanvasRenderingContext2D, f: Frame, phases: Phase[], y: number, h: number): void {
  const split = hasOverlap(phases);
  const half = Math.floor(h / 2);
  for (const p of phases) {
    if (!split) drawInterval(ctx, f, p, y, h);
    else if (p.role === 'train') drawInterval(ctx, f, p, y, half);
    else drawInterval(ctx, f, p, y + half, h - half);
  }
}

function drawInterval(ctx: CanvasRenderingContext2D, f: Frame, p: Phase, y: number, h: number): void {
  if (p.t1 < f.vp.t0 || p.t0 > f.vp.t1) return;
  const x0 = Math.max(f.left, xOf(f, p.t0));
  const x1 = Math.min(f.left + f.width, xOf(f, p.t1));
  const w = Math.max(1, x1 - x0);
  ctx.fillStyle = phaseColor(p.name);
  ctx.fillRect(x0, y, w, h);
  if (IDLE_PHASES.has(p.name) && w > 3) hatch(ctx, x0, y, w, h);
}

function hatch(ctx: CanvasRenderingContext2D, x: number, y: number, w: number, h: number): void {
  ctx.save();
  ctx.beginPath();
  ctx.rect(x, y, w, h);
  ctx.clip();
  ctx.strokeStyle = 'rgba(255,255,255,0.13)';
  ctx.lineWidth = 1;
  ctx.beginPath();
  for (let i = x - h; i < x + w; i += 5) {
    ctx.moveTo(i, y + h);
    ctx.lineTo(i + h, y);
  }
  ctx.stroke();
  ctx.restore();
}
