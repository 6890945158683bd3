// Layer: one lane's phase band, coloured per phase; idle phases hatched so idleness does not rely on hue.
// When phases of different roles overlap (colocated trainer and engine), the band splits: train on top, rollout below.
import { IDLE_PHASES, phaseColor } from '../../../theme.ts';
import type { LanePhases } from '../../../columns.ts';
import { type Frame, xOf } from '../viewport.ts';

/** True when two phases of the lane overlap in time (phases come sorted by t0). */
export function hasOverlap(phases: LanePhases | undefined): boolean {
  if (!phases) return false;
  const { t0, t1 } = phases;
  let end = -Infinity;
  for (let i = 0; i < phases.length; i++) {
    if (t0[i]! < end - 1e-6) return true;
    if (t1[i]! > end) end = t1[i]!;
  }
  return false;
}

/** Draws a lane's phases straight from the frame's columns. */
export function drawPhaseBand(ctx: CanvasRenderingContext2D, f: Frame, phases: LanePhases | undefined, y: number, h: number): void {
  if (!phases) return;
  const split = hasOverlap(phases);
  const half = Math.floor(h / 2);
  const train = phases.strings.indexOf('train');
  for (let i = 0; i < phases.length; i++) {
    if (!split) drawInterval(ctx, f, phases, i, y, h);
    else if (phases.role[i] === train) drawInterval(ctx, f, phases, i, y, half);
    else drawInterval(ctx, f, phases, i, y + half, h - half);
  }
}

function drawInterval(ctx: CanvasRenderingContext2D, f: Frame, phases: LanePhases, i: number, y: number, h: number): void {
  const t0 = phases.t0[i]!;
  const t1 = phases.t1[i]!;
  if (t1 < f.vp.t0 || t0 > f.vp.t1) return;
  const x0 = Math.max(f.left, xOf(f, t0));
  const x1 = Math.min(f.left + f.width, xOf(f, t1));
  // one still open at the data edge may have no length yet: wide enough to be seen
  const w = Math.max(phases.open?.has(i) ? 3 : 1, x1 - x0);
  const name = phases.strings[phases.name[i]!]!;
  ctx.fillStyle = phaseColor(name);
  ctx.fillRect(x0, y, w, h);
  if (IDLE_PHASES.has(name) && w > 3) hatch(ctx, x0, y, w, h);
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
