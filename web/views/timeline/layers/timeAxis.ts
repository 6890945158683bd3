// Layer: the shared time axis (elapsed since run start) with grid lines, and step spans from the bubbles.
import { fmtElapsed, fmtNum, timeStep } from '../../../format.ts';
import { CSS } from '../../../theme.ts';
import type { Bubble } from '../../../../src/wire/index.ts';
import { type Frame, xOf } from '../viewport.ts';

/** The axis ticks of a frame: one "nice" step, the first tick at or after the window start. */
function ticks(f: Frame, origin: number): { first: number; step: number } {
  const step = timeStep(f.vp.t1 - f.vp.t0, Math.max(2, f.width / 110));
  return { first: origin + Math.ceil((f.vp.t0 - origin) / step) * step, step };
}

/** Only the vertical grid lines of the time axis (its labels live in a header elsewhere). */
export function drawGrid(ctx: CanvasRenderingContext2D, f: Frame, origin: number, height: number): void {
  const { first, step } = ticks(f, origin);
  ctx.strokeStyle = CSS.grid;
  for (let t = first; t <= f.vp.t1 + 1e-9; t += step) {
    const x = Math.round(xOf(f, t)) + 0.5;
    ctx.beginPath();
    ctx.moveTo(x, 0);
    ctx.lineTo(x, height);
    ctx.stroke();
  }
}

export function drawTimeAxis(ctx: CanvasRenderingContext2D, f: Frame, origin: number, top: number, height: number, axisH: number): void {
  const { first, step } = ticks(f, origin);
  ctx.font = '11px system-ui, sans-serif';
  ctx.textBaseline = 'middle';
  ctx.textAlign = 'center';
  for (let t = first; t <= f.vp.t1 + 1e-9; t += step) {
    const x = Math.round(xOf(f, t)) + 0.5;
    ctx.strokeStyle = CSS.grid;
    ctx.beginPath();
    ctx.moveTo(x, top + axisH);
    ctx.lineTo(x, top + height);
    ctx.stroke();
    ctx.fillStyle = CSS.axis;
    ctx.fillText(fmtElapsed(t - origin), Math.min(Math.max(x, f.left + 20), f.left + f.width - 20), top + axisH / 2 + 5);
  }
}

/** Steps as labelled spans [end − step_time, end] along the top; alternate shading keeps neighbours apart. */
export function drawSteps(ctx: CanvasRenderingContext2D, f: Frame, bubbles: Bubble[], top: number, h: number, labelled = true): void {
  ctx.font = '10.5px system-ui, sans-serif';
  ctx.textBaseline = 'middle';
  ctx.textAlign = 'left';
  ctx.save();
  ctx.beginPath();
  ctx.rect(f.left, top, f.width, h);
  ctx.clip();
  for (const b of bubbles) {
    if (b.step_time == null) continue;
    const x0 = xOf(f, b.ts - b.step_time);
    const x1 = xOf(f, b.ts);
    if (x1 < f.left || x0 > f.left + f.width) continue;
    const wr = b.wait_ratio ?? 0;
    ctx.fillStyle = `rgba(255,107,107,${0.08 + Math.min(0.5, Math.max(0, wr)) * 0.5})`;
    ctx.fillRect(x0, top + 1, Math.max(1, x1 - x0 - 1), h - 2);
    if (!labelled) continue;
    ctx.fillStyle = CSS.text;
    // The longest label that fits the visible span; none when even the step number does not.
    const room = Math.min(x1, f.left + f.width) - Math.max(x0, f.left) - 8;
    const labels = [`step ${b.step}${b.wait_ratio != null ? ` · wait ${(b.wait_ratio * 100).toFixed(0)}%` : ''}`, `step ${b.step}`, `${b.step}`];
    const label = labels.find((l) => ctx.measureText(l).width <= room);
    if (label) ctx.fillText(label, Math.max(x0, f.left) + 4, top + h / 2);
  }
  ctx.restore();
}

/** The step bubble whose span holds t, or undefined. */
export function bubbleAt(bubbles: readonly Bubble[], t: number): Bubble | undefined {
  return bubbles.find((bb) => bb.step_time != null && t >= bb.ts - bb.step_time && t <= bb.ts);
}

/** The tooltip of the step bar over a step. */
export function stepTip(b: Bubble): string[] {
  return [`step ${b.step}`, `step_time = ${fmtNum(b.step_time)} s`, `wait_ratio = ${fmtNum(b.wait_ratio)}`, 'click = zoom to this step'];
}
