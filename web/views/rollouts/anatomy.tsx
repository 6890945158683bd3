// Batch anatomy: each sample of the step as a row on the step's timeline — queued, generating turns,
// tool waits — up to the consume line where training took the batch. Sortable; a row opens its sample.
import { useMemo, useRef, useState } from 'preact/hooks';
import { CanvasBox, type CanvasSize } from '../../components/canvasBox.tsx';
import { hideTip, showTip } from '../../components/tooltip.tsx';
import { fmtDuration, fmtElapsed, fmtWall, timeStep } from '../../format.ts';
import { ACCENT, CSS, LIFECYCLE_COLORS } from '../../theme.ts';
import type { TableRow as Row, Trajectories, Trajectory } from '../../../src/wire/index.ts';

type SortKey = 'start' | 'duration' | 'reward' | 'sample';
const SORTS: { key: SortKey; label: string }[] = [
  { key: 'start', label: 'start' },
  { key: 'duration', label: 'duration' },
  { key: 'reward', label: 'reward' },
  { key: 'sample', label: 'sample' },
];

const LEFT = 64;
const RIGHT = 12;
/** The time axis above the rows: start time, ticks since the start, the consume line's label. */
const AXIS_H = 30;
/** Every row at least this tall (readable, hoverable); a batch taller than the panel scrolls under the axis. */
const ROW_H = 7;

const startOf = (l: Trajectory) => Math.min(l.first_ts, ...l.attempts.map((a) => a.t0 ?? l.first_ts));
const endOf = (l: Trajectory) => Math.max(l.last_ts, ...l.attempts.map((a) => a.t1 ?? l.last_ts));

/** `only`: the samples to draw (a chosen group's), else every one the step recorded. */
export function BatchAnatomy({ traj, rows, only = null, onOpen }: { traj: Trajectories; rows: Row[]; only?: ReadonlySet<number> | null; onOpen: (sample: number) => void }) {
  const [sort, setSort] = useState<{ key: SortKey; desc: boolean }>({ key: 'start', desc: false });
  const reward = useMemo(() => new Map(rows.map((r) => [Number(r.sample_index), Number(r.raw_reward ?? r.reward ?? NaN)])), [rows]);
  const lanes = useMemo(() => {
    const value = (l: Trajectory): number =>
      sort.key === 'start' ? startOf(l) : sort.key === 'duration' ? endOf(l) - startOf(l) : sort.key === 'reward' ? (reward.get(l.sample_index) ?? NaN) : l.sample_index;
    const sorted = traj.lanes.filter((l) => only === null || only.has(l.sample_index)).sort((a, b) => {
      const va = value(a);
      const vb = value(b);
      const d = (Number.isNaN(va) ? Infinity : va) - (Number.isNaN(vb) ? Infinity : vb);
      return (sort.desc ? -d : d) || a.sample_index - b.sample_index;
    });
    return sorted;
  }, [traj, sort, reward, only]);
  const geo = useRef({ t0: 0, t1: 1, w: 1, rowH: ROW_H });
  if (!lanes.length) return null;
  const t0 = Math.min(...lanes.map(startOf));
  const t1 = Math.max(traj.consume_ts ?? -Infinity, ...lanes.map(endOf));
  const rowH = ROW_H;
  const height = lanes.length * rowH + 4;
  const xOf = (t: number, w: number) => LEFT + ((t - t0) / ((t1 > t0 ? t1 : t0 + 1) - t0)) * w;

  function drawAxis(ctx: CanvasRenderingContext2D, size: CanvasSize) {
    const w = Math.max(10, size.width - LEFT - RIGHT);
    ctx.font = '10.5px system-ui, sans-serif';
    ctx.fillStyle = CSS.muted;
    ctx.textBaseline = 'top';
    ctx.fillText(`${fmtWall(t0).slice(11, 19)} UTC · ${fmtDuration(t1 - t0)}`, LEFT, 1);
    const step = timeStep(Math.max(1, t1 - t0), Math.max(2, Math.floor(w / 70)));
    ctx.strokeStyle = CSS.axis;
    ctx.textAlign = 'center';
    const ticks: string[] = [];
    for (let s = 0; s <= t1 - t0 + 1e-9; s += step) {
      const x = Math.round(xOf(t0 + s, w)) + 0.5;
      ctx.beginPath();
      ctx.moveTo(x, AXIS_H - 5);
      ctx.lineTo(x, AXIS_H);
      ctx.stroke();
      const label = fmtElapsed(s);
      ctx.fillText(label, Math.min(Math.max(x, LEFT + 14), LEFT + w - 14), 15);
      ticks.push(label);
    }
    ctx.canvas.setAttribute('data-ticks', ticks.join(' '));
    if (traj.consume_ts != null) {
      ctx.fillStyle = ACCENT;
      ctx.textAlign = 'right';
      ctx.fillText('consumed', Math.round(xOf(traj.consume_ts, w)) - 4, 1);
    }
  }

  function draw(ctx: CanvasRenderingContext2D, size: CanvasSize) {
    const w = Math.max(10, size.width - LEFT - RIGHT);
    geo.current = { t0, t1: t1 > t0 ? t1 : t0 + 1, w, rowH };
    const x = (t: number) => xOf(t, w);
    ctx.textBaseline = 'middle';
    // Bars stay inside the plot, never over the row labels.
    ctx.save();
    ctx.beginPath();
    ctx.rect(LEFT, 0, w, lanes.length * rowH);
    ctx.clip();
    lanes.forEach((l, i) => {
      const y = i * rowH;
      ctx.fillStyle = LIFECYCLE_COLORS.queue!;
      for (const a of l.attempts) ctx.fillRect(x(a.t0 ?? t0), y + rowH * 0.3, Math.max(1, x(a.t1 ?? t1) - x(a.t0 ?? t0)), Math.max(1, rowH * 0.4));
      for (const s of l.segments) {
        ctx.fillStyle = s.kind === 'tool' ? LIFECYCLE_COLORS.tool_wait! : LIFECYCLE_COLORS.generating!;
        ctx.fillRect(x(s.t0 ?? t0), y, Math.max(1, x(s.t1 ?? t1) - x(s.t0 ?? t0)), Math.max(1, rowH - 1));
      }
    });
    ctx.restore();
    if (traj.consume_ts != null) {
      const cx = Math.round(x(traj.consume_ts)) + 0.5;
      ctx.strokeStyle = ACCENT;
      ctx.setLineDash([4, 3]);
      ctx.beginPath();
      ctx.moveTo(cx, 0);
      ctx.lineTo(cx, height);
      ctx.stroke();
      ctx.setLineDash([]);
    }
    if (rowH >= 5) {
      ctx.textAlign = 'right';
      ctx.fillStyle = CSS.muted;
      ctx.font = '10px system-ui, sans-serif';
      // a label every few rows when rows are thinner than the text, so labels never overlap; the first and
      // last kept whole inside the canvas (a row is thinner than half the text)
      const every = Math.ceil(11 / rowH);
      lanes.forEach((l, i) => {
        if (i % every === 0) ctx.fillText(`s${l.sample_index}`, LEFT - 6, Math.min(height - 6, Math.max(6, i * rowH + rowH / 2)));
      });
    }
  }

  function laneAt(e: MouseEvent): Trajectory | null {
    const i = Math.floor(e.offsetY / geo.current.rowH);
    return e.offsetY >= 0 && i >= 0 && i < lanes.length ? lanes[i]! : null;
  }

  function hover(e: MouseEvent) {
    const l = laneAt(e);
    if (!l) return hideTip();
    const t = geo.current.t0 + ((e.offsetX - LEFT) / geo.current.w) * (geo.current.t1 - geo.current.t0);
    const seg = l.segments.find((s) => (s.t0 ?? t0) <= t && (s.t1 ?? t1) >= t);
    const r = reward.get(l.sample_index);
    showTip(e.clientX, e.clientY, [
      `sample ${l.sample_index} (group ${l.group_index}) · ${l.status ?? 'unfinished'}${r !== undefined && !Number.isNaN(r) ? ` · reward ${r}` : ''}`,
      `${fmtWall(startOf(l)).slice(11)} → ${fmtWall(endOf(l)).slice(11)} (${fmtDuration(endOf(l) - startOf(l))})`,
      seg ? (seg.kind === 'gen' ? `turn ${seg.turn} generating · weight version ${seg.weight_version ?? '?'}` : `turn ${seg.turn} waiting on a tool`) : 'queued / between turns',
      'click = open sample',
    ]);
  }

  return (
    <section class="panel" data-testid="batch-anatomy">
      <header>
        <h3>Batch anatomy · {lanes.length} samples</h3>
        <span class="seg" role="group" aria-label="sort the anatomy">
          {SORTS.map((s) => (
            <button
              key={s.key}
              aria-pressed={sort.key === s.key ? 'true' : 'false'}
              title={sort.key === s.key ? 'click again to reverse' : `sort by ${s.label}`}
              onClick={() => setSort(sort.key === s.key ? { key: s.key, desc: !sort.desc } : { key: s.key, desc: s.key === 'duration' || s.key === 'reward' })}
            >
              {s.label}
              {sort.key === s.key ? (sort.desc ? ' ▾' : ' ▴') : ''}
            </button>
          ))}
        </span>
      </header>
      <div class="anatomy-scroll" data-testid="anatomy-scroll">
        <div class="anatomy-axis">
          <CanvasBox height={AXIS_H} draw={drawAxis} label="time since the step's first request" data-testid="anatomy-axis" />
        </div>
      <CanvasBox
        height={height}
        draw={draw}
        label="each sample's generation on the step's timeline, with the consume line"
        onMouseMove={hover}
        onMouseLeave={hideTip}
        onClick={(e) => {
          const l = laneAt(e);
          if (l) {
            hideTip();
            onOpen(l.sample_index);
          }
        }}
        data-testid="anatomy-rows"
        data-row-height={rowH}
      />
      </div>
      <p class="hint" data-testid="anatomy-legend">
        <i class="swatch" style={{ background: LIFECYCLE_COLORS.queue }} /> queued <i class="swatch" style={{ background: LIFECYCLE_COLORS.generating }} /> generating{' '}
        <i class="swatch" style={{ background: LIFECYCLE_COLORS.tool_wait }} /> tool wait · <i class="swatch line dashed" style={{ borderColor: ACCENT }} /> when
        training consumed the batch
      </p>
    </section>
  );
}
