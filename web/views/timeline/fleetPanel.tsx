// Fleet overview (many GPUs): phase composition and utilisation band over time, O(buckets) whatever the lane count.
import { useRef } from 'preact/hooks';
import { CanvasBox } from '../../components/canvasBox.tsx';
import { hideTip, showTip } from '../../components/tooltip.tsx';
import { fmtElapsed } from '../../format.ts';
import { markPainted } from '../../paintMarks.ts';
import { CSS } from '../../theme.ts';
import type { Fleet } from '../../../src/wire/index.ts';
import { drawBand } from './layers/fleetBand.ts';
import { drawComposition } from './layers/fleetComposition.ts';
import { LEFT } from './layers/laneRow.ts';
import { drawUnread } from '../../components/unread.ts';
import { CoverageNote } from '../../components/coverage.tsx';
import type { Viewport } from './viewport.ts';

const RIGHT = 12;
const COMP_H = 64;
const BAND_H = 64;
const GAP = 10;

export function FleetPanel({ fleet, origin, onViewport }: { fleet: Fleet; origin: number; onViewport: (vp: Viewport) => void }) {
  const widthRef = useRef(0);
  const height = COMP_H + GAP + BAND_H + 4;

  function draw(ctx: CanvasRenderingContext2D, size: { width: number; height: number }) {
    const w = size.width - LEFT - RIGHT;
    widthRef.current = w;
    ctx.font = '11px system-ui, sans-serif';
    ctx.textBaseline = 'middle';
    ctx.fillStyle = CSS.muted;
    ctx.fillText('phase mix', 8, COMP_H / 2);
    ctx.fillText('util %', 8, COMP_H + GAP + BAND_H / 2);
    ctx.textAlign = 'right';
    ctx.fillText('100', LEFT - 6, COMP_H + GAP + 5);
    ctx.fillText('0', LEFT - 6, COMP_H + GAP + BAND_H - 4);
    ctx.textAlign = 'left';
    drawComposition(ctx, fleet, LEFT, 0, w, COMP_H);
    drawBand(ctx, fleet, LEFT, COMP_H + GAP, w, BAND_H);
    drawUnread(ctx, fleet.coverage, fleet.t0, fleet.t1, LEFT, 0, w, COMP_H);
    drawUnread(ctx, fleet.coverage, fleet.t0, fleet.t1, LEFT, COMP_H + GAP, w, BAND_H);
    markPainted('fleet');
  }

  function bucketAt(e: MouseEvent): number {
    const x = e.offsetX - LEFT;
    return Math.floor((x / widthRef.current) * fleet.x_buckets);
  }

  function hover(e: MouseEvent) {
    const b = bucketAt(e);
    if (b < 0 || b >= fleet.x_buckets) return hideTip();
    const t = fleet.t0 + ((b + 0.5) / fleet.x_buckets) * (fleet.t1 - fleet.t0);
    const lines = [`${fmtElapsed(t - origin)} · ${fleet.lanes} GPUs`];
    if (e.offsetY < COMP_H) {
      for (const name of fleet.palette.filter(Boolean)) {
        const v = fleet.composition[name]?.[b] ?? 0;
        if (v >= 0.002) lines.push(`${name}: ${(v * 100).toFixed(1)}%`);
      }
      const none = fleet.composition.none?.[b] ?? 0;
      if (none >= 0.002) lines.push(`no phase: ${(none * 100).toFixed(1)}%`);
    } else {
      const f = (v: number | null | undefined) => (v == null ? '—' : `${v.toFixed(0)}%`);
      lines.push(`median ${f(fleet.band.p50[b])}`, `p10–p90 ${f(fleet.band.p10[b])}–${f(fleet.band.p90[b])}`, `min ${f(fleet.band.min[b])}`);
    }
    lines.push('click = zoom to ±5% around here');
    showTip(e.clientX, e.clientY, lines);
  }

  function click(e: MouseEvent) {
    const b = bucketAt(e);
    if (b < 0 || b >= fleet.x_buckets) return;
    const span = fleet.t1 - fleet.t0;
    const t = fleet.t0 + ((b + 0.5) / fleet.x_buckets) * span;
    onViewport({ t0: t - span * 0.05, t1: t + span * 0.05 });
  }

  return (
    <section class="panel fleet" data-testid="fleet">
      <div class="fleet-title">
        <strong style={{ color: '#e8e4de' }}>Fleet overview · {fleet.lanes} GPUs</strong>
        <span>top: share of GPUs per phase · bottom: util p10–p90 band, median, dashed min</span>
        <CoverageNote coverage={fleet.coverage} />
      </div>
      <CanvasBox height={height} draw={draw} label="fleet overview" onMouseMove={hover} onMouseLeave={hideTip} onClick={click} style={{ cursor: 'pointer' }} />
    </section>
  );
}
