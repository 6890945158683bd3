// The time header that stays in view while lanes scroll: a minimap of the whole run (steps, with the
// current window marked; a click there centres the window) above the shared time axis.
import { useRef } from 'preact/hooks';
import { CanvasBox, type CanvasSize } from '../../components/canvasBox.tsx';
import { ACCENT, CSS } from '../../theme.ts';
import type { Bubble } from '../../../src/wire/index.ts';
import { LEFT } from './layers/laneRow.ts';
import { drawSteps, drawTimeAxis } from './layers/timeAxis.ts';
import type { Frame, Viewport } from './viewport.ts';

const RIGHT = 12;
const MAP_H = 16;
const STEP_H = 18;
const AXIS_H = 20;
export const STICKY_AXIS_H = MAP_H + 4 + STEP_H + AXIS_H;

interface Props {
  range: [number, number];
  vp: Viewport;
  bubbles: Bubble[];
  origin: number;
  onViewport: (vp: Viewport) => void;
}

export function StickyAxis(p: Props) {
  const width = useRef(1);
  const [T0, T1] = p.range;
  const whole = Math.max(T1 - T0, 1e-9);

  function draw(ctx: CanvasRenderingContext2D, size: CanvasSize) {
    const w = Math.max(10, size.width - LEFT - RIGHT);
    width.current = w;
    // Minimap: every step of the run, the window on screen outlined.
    const all: Frame = { left: LEFT, width: w, vp: { t0: T0, t1: T1 } };
    ctx.fillStyle = 'rgba(255,255,255,0.04)';
    ctx.fillRect(LEFT, 0, w, MAP_H);
    drawSteps(ctx, all, p.bubbles, 0, MAP_H, false);
    const x0 = LEFT + ((p.vp.t0 - T0) / whole) * w;
    const x1 = LEFT + ((p.vp.t1 - T0) / whole) * w;
    ctx.fillStyle = 'rgba(255,138,61,0.18)';
    ctx.fillRect(x0, 0, Math.max(2, x1 - x0), MAP_H);
    ctx.strokeStyle = ACCENT;
    ctx.strokeRect(Math.round(x0) + 0.5, 0.5, Math.max(2, x1 - x0), MAP_H - 1);
    ctx.fillStyle = CSS.muted;
    ctx.font = '10.5px system-ui, sans-serif';
    ctx.textBaseline = 'middle';
    ctx.textAlign = 'left';
    ctx.fillText('whole run', 8, MAP_H / 2);
    const f: Frame = { left: LEFT, width: w, vp: p.vp };
    drawSteps(ctx, f, p.bubbles, MAP_H + 4, STEP_H);
    drawTimeAxis(ctx, f, p.origin, MAP_H + 4 + STEP_H, AXIS_H, AXIS_H);
  }

  function click(e: MouseEvent) {
    if (e.offsetX < LEFT) return;
    if (e.offsetY <= MAP_H) {
      // The minimap: centre the window on the point clicked.
      const t = T0 + ((e.offsetX - LEFT) / width.current) * whole;
      const half = (p.vp.t1 - p.vp.t0) / 2;
      p.onViewport({ t0: t - half, t1: t + half });
    } else if (e.offsetY <= MAP_H + 4 + STEP_H) {
      // A step span: zoom to that step.
      const t = p.vp.t0 + ((e.offsetX - LEFT) / width.current) * (p.vp.t1 - p.vp.t0);
      const b = p.bubbles.find((bb) => bb.step_time != null && t >= bb.ts - bb.step_time && t <= bb.ts);
      if (b && b.step_time != null) p.onViewport({ t0: b.ts - b.step_time, t1: b.ts });
    }
  }

  return (
    <div class="sticky-axis" data-testid="sticky-axis">
      <CanvasBox height={STICKY_AXIS_H} draw={draw} label="whole-run minimap with the current window, and the time axis" onClick={click} data-testid="minimap" />
    </div>
  );
}
