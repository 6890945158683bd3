// This sample's lifecycle: attempts (queued), generation turns and tool waits on one strip, with the weight version.
import { useRef } from 'preact/hooks';
import { CanvasBox } from '../../components/canvasBox.tsx';
import { hideTip, showTip } from '../../components/tooltip.tsx';
import { fmtDuration, fmtWall } from '../../format.ts';
import { CSS, LIFECYCLE_COLORS } from '../../theme.ts';
import type { Trajectory } from '../../../src/wire/index.ts';

const LEFT = 8;
const RIGHT = 8;
const BAR_Y = 6;
const BAR_H = 18;

export function LifecycleStrip({ lane }: { lane: Trajectory }) {
  const geo = useRef({ t0: 0, t1: 1, w: 1 });
  const t0 = Math.min(lane.first_ts, ...lane.attempts.map((a) => a.t0 ?? lane.first_ts));
  const t1 = Math.max(lane.last_ts, ...lane.attempts.map((a) => a.t1 ?? lane.last_ts));

  function draw(ctx: CanvasRenderingContext2D, size: { width: number; height: number }) {
    const w = size.width - LEFT - RIGHT;
    geo.current = { t0, t1: t1 > t0 ? t1 : t0 + 1, w };
    const x = (t: number) => LEFT + ((t - t0) / (geo.current.t1 - t0)) * w;
    ctx.fillStyle = LIFECYCLE_COLORS.queue!;
    for (const a of lane.attempts) ctx.fillRect(x(a.t0 ?? t0), BAR_Y + 5, Math.max(1, x(a.t1 ?? t1) - x(a.t0 ?? t0)), BAR_H - 10);
    for (const s of lane.segments) {
      const a = s.t0 ?? t0;
      const b = s.t1 ?? t1;
      ctx.fillStyle = s.kind === 'tool' ? LIFECYCLE_COLORS.tool_wait! : LIFECYCLE_COLORS.generating!;
      ctx.fillRect(x(a), BAR_Y, Math.max(1, x(b) - x(a)), BAR_H);
      if (s.kind === 'gen' && x(b) - x(a) > 34) {
        ctx.fillStyle = '#fff';
        ctx.font = '10.5px system-ui, sans-serif';
        ctx.textBaseline = 'middle';
        ctx.fillText(`t${s.turn} · v${s.weight_version ?? '?'}`, x(a) + 4, BAR_Y + BAR_H / 2);
      }
    }
    ctx.fillStyle = CSS.muted;
    ctx.font = '10.5px system-ui, sans-serif';
    ctx.textBaseline = 'top';
    // Absolute wall-clock ends (UTC), with the duration between them.
    ctx.fillText(`${fmtWall(t0).slice(11)}`, LEFT, BAR_Y + BAR_H + 4);
    ctx.textAlign = 'center';
    ctx.fillText(fmtDuration(t1 - t0), LEFT + w / 2, BAR_Y + BAR_H + 4);
    ctx.textAlign = 'right';
    ctx.fillText(`${fmtWall(t1).slice(11)}`, LEFT + w, BAR_Y + BAR_H + 4);
  }

  function hover(e: MouseEvent) {
    const { w } = geo.current;
    const t = t0 + ((e.offsetX - LEFT) / w) * (geo.current.t1 - t0);
    const seg = lane.segments.find((s) => (s.t0 ?? t0) <= t && (s.t1 ?? t1) >= t);
    const lines = [`sample ${lane.sample_index} · ${fmtWall(t).slice(11)} (+${fmtDuration(Math.max(0, t - t0))}) · ${lane.status ?? 'running'}`];
    if (seg) lines.push(seg.kind === 'gen' ? `turn ${seg.turn} generating · weight version ${seg.weight_version ?? '?'}` : `turn ${seg.turn} waiting on a tool`);
    else lines.push('queued / between turns');
    if (lane.versions.length > 1) lines.push(`spans weight versions ${lane.versions.join(', ')}`);
    showTip(e.clientX, e.clientY, lines);
  }

  return <CanvasBox height={44} draw={draw} label="sample lifecycle" onMouseMove={hover} onMouseLeave={hideTip} data-testid="sample-lifecycle" />;
}

/** The Compute Utilization window around a request: its lifecycle with a margin each side. */
export function lifecycleWindow(lane: Trajectory): { t0: number; t1: number } {
  const t0 = Math.min(lane.first_ts, ...lane.attempts.map((a) => a.t0 ?? lane.first_ts));
  const t1 = Math.max(lane.last_ts, ...lane.attempts.map((a) => a.t1 ?? lane.last_ts));
  const pad = Math.max(5, (t1 - t0) * 0.15);
  return { t0: +(t0 - pad).toFixed(3), t1: +(t1 + pad).toFixed(3) };
}
