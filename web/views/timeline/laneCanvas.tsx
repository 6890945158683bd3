// The lane view: one row per GPU stacking phase band, util/mem and the engine overlay, then the request lifecycle strip.
import { useEffect, useRef, useState } from 'preact/hooks';
import { CanvasBox, type CanvasSize } from '../../components/canvasBox.tsx';
import { hideTip, showTip } from '../../components/tooltip.tsx';
import { fmtElapsed, fmtIntRanges, fmtLaneRoles, fmtNum, fmtWall } from '../../format.ts';
import { markPainted } from '../../paintMarks.ts';
import { href, navigate } from '../../route.ts';
import { ACCENT, CSS } from '../../theme.ts';
import type { Bubble, GpuSeries, Topology } from '../../../src/wire/index.ts';
import type { EngineSeriesView, LanePhases } from '../../columns.ts';
import { drawEngineOverlay, enginesForLane } from './layers/engineOverlay.ts';
import { drawLifecycle, type Lifecycle } from './layers/lifecycleStrip.ts';
import { drawPhaseBand, hasOverlap } from './layers/phaseBand.ts';
import { drawGrid, drawSteps, drawTimeAxis } from './layers/timeAxis.ts';
import { drawMem, drawUtil } from './layers/utilLine.ts';
import { findSampleStep, knownSampleStep } from './sampleStep.ts';
import { type Frame, lastAtOrBefore, nearestIndex, tOf, type Viewport } from './viewport.ts';

export interface LaneInfo {
  key: string;
  node: string;
  gpu: number;
  index: number;
  ranks: number[];
  roles: string[];
  /** Why this lane was picked (a quick pick's score with its unit); such lanes are highlighted. */
  score?: string;
}

export interface Overlay {
  metric: string;
  byAddr: Map<string, EngineSeriesView>;
  max: number;
}

interface Props {
  lanes: LaneInfo[];
  phasesByLane: Map<string, LanePhases>;
  gpu: Record<string, GpuSeries>;
  overlay: Overlay | null;
  topology: Topology | null;
  showMem: boolean;
  memMax: number;
  lifecycle: Lifecycle | null;
  bubbles: Bubble[];
  origin: number;
  vp: Viewport;
  multiNode: boolean;
  /** Training step ids, to find which step a lifecycle row's sample belongs to. */
  stepIds: readonly number[];
  /** `replace` for continuous changes (wheel zoom); discrete ones push a history entry. */
  onViewport: (vp: Viewport, replace?: boolean) => void;
  onReset: () => void;
  /** False when the step bar and time axis are drawn in a sticky header above (only grid lines here). */
  header?: boolean;
}

/** Width of the lane labels; the fleet overview above uses the same so both share one time axis. */
export const LEFT = 118;
const RIGHT = 12;
const STEP_H = 18;
const AXIS_H = 20;
const PHASE_H = 14;
const UTIL_H = 32;
const LANE_H = PHASE_H + UTIL_H + 10;
const LC_TITLE = 18;

/** Request rows are at least this tall, so each is a target a pointer can hit. */
export const MIN_REQUEST_ROW_H = 4;
/** Tall enough for one step's batch (128 requests and the stragglers around it) at one row each. */
const MAX_STRIP_H = 600;
/** How many rows the strip asks for: beyond this the server folds requests into density rows. */
export const REQUEST_STRIP_ROWS = Math.floor(MAX_STRIP_H / MIN_REQUEST_ROW_H);

export function lifecycleHeight(rows: number): number {
  return rows ? Math.max(24, rows * Math.min(10, Math.max(MIN_REQUEST_ROW_H, MAX_STRIP_H / rows))) : 0;
}

/** A density row: several consecutive requests drawn as one (the window holds more than fit). */
interface DensityRow {
  first_sample: number;
  last_sample: number;
  count: number;
  t0: number;
  t1: number;
}

export function LaneCanvas(p: Props) {
  const lcRows = p.lifecycle?.header.rows.length ?? 0;
  const stepH = p.header === false ? 0 : STEP_H;
  const axisH = p.header === false ? 4 : AXIS_H;
  const lanesTop = stepH + axisH;
  const lanesH = p.lanes.length * LANE_H;
  const lcTop = lanesTop + lanesH + 6;
  const lcH = lifecycleHeight(lcRows);
  const height = lcTop + (lcRows ? LC_TITLE + lcH : 0) + 4;
  const frameRef = useRef<Frame | null>(null);
  const canvasRef = useRef<HTMLCanvasElement | null>(null);
  const [drag, setDrag] = useState<{ x0: number; x1: number } | null>(null);
  const [opening, setOpening] = useState<{ sample: number; failed: boolean } | null>(null);
  const hoverRow = useRef<number | null>(null);
  // The tooltip is app-wide: it must not outlive the canvas it describes.
  useEffect(() => () => hideTip(), []);
  // Selected lanes with neither phases nor GPU samples in the window: drawn with a note, never dropped.
  const empty = new Set(p.lanes.filter((l) => !p.gpu[l.key]?.ts.length && !p.phasesByLane.get(l.key)?.length).map((l) => l.key));
  const laneNote = (key: string) => (empty.has(key) ? 'no data in this window' : p.gpu[key]?.ts.length ? null : 'no GPU samples in this window');

  /** The lifecycle row under canvas y, or null outside the strip. */
  function lifecycleRowAt(y: number): number | null {
    if (!p.lifecycle || y < lcTop + LC_TITLE || y >= lcTop + LC_TITLE + lcH) return null;
    const row = Math.floor(((y - lcTop - LC_TITLE) / lcH) * lcRows);
    return row >= 0 && row < lcRows ? row : null;
  }

  /** Time of a row's last painted cell: the sample's last event, which the consuming step closes after. */
  function rowLastTime(row: number): number {
    const lc = p.lifecycle!;
    const { x_buckets: xb, t0, t1 } = lc.header;
    for (let c = xb - 1; c >= 0; c--) if (lc.values[row * xb + c]) return t0 + ((c + 1) / xb) * (t1 - t0);
    return t1;
  }

  /** The lifecycle state id painted at time t on a row (0 where the row is idle). */
  function lifecycleCellAt(row: number, t: number): number {
    const h = p.lifecycle!.header;
    const col = Math.floor(((t - h.t0) / (h.t1 - h.t0)) * h.x_buckets);
    return col >= 0 && col < h.x_buckets ? p.lifecycle!.values[row * h.x_buckets + col]! : 0;
  }

  /** The training step whose span holds t (from the step bubbles), or null. */
  function stepAt(t: number): number | null {
    const b = p.bubbles.find((bb) => bb.step_time != null && t >= bb.ts - bb.step_time && t <= bb.ts);
    return b && b.step !== null && p.stepIds.includes(b.step) ? b.step : null;
  }

  function rowDensity(row: number): DensityRow | null {
    const info = p.lifecycle?.header.rows[row] as Partial<DensityRow> | undefined;
    return info && typeof info.count === 'number' ? (info as DensityRow) : null;
  }

  function rowSample(row: number): { sample: number; group: number } | null {
    const info = p.lifecycle?.header.rows[row] as { sample_index?: number; group_index?: number } | undefined;
    return info && typeof info.sample_index === 'number' ? { sample: info.sample_index, group: info.group_index ?? -1 } : null;
  }

  function openRow(row: number) {
    const s = rowSample(row);
    if (!s) return;
    setOpening({ sample: s.sample, failed: false });
    findSampleStep(s.sample, p.stepIds, p.bubbles, rowLastTime(row)).then((hit) => {
      if (hit) {
        setOpening(null);
        hideTip();
        navigate(href(`/rollout/${hit.rolloutId}/sample/${s.sample}`));
      } else setOpening({ sample: s.sample, failed: true });
    });
  }

  function draw(ctx: CanvasRenderingContext2D, size: CanvasSize) {
    const f: Frame = { left: LEFT, width: Math.max(10, size.width - LEFT - RIGHT), vp: p.vp };
    frameRef.current = f;
    if (stepH) drawSteps(ctx, f, p.bubbles, 0, stepH);
    if (p.header === false) drawGrid(ctx, f, p.origin, size.height);
    else drawTimeAxis(ctx, f, p.origin, stepH, size.height - stepH, axisH);
    ctx.font = '11.5px system-ui, sans-serif';
    ctx.textBaseline = 'middle';
    ctx.textAlign = 'left';
    p.lanes.forEach((lane, i) => {
      const y = lanesTop + i * LANE_H;
      // Label: index and train ranks, then node:gpu, then roles (what a user looks a lane up by).
      ctx.fillStyle = CSS.text;
      const gLabel = lane.index >= 0 ? `g${lane.index}` : 'g?';
      ctx.fillText(gLabel, 8, y + PHASE_H / 2 + 1);
      const gWidth = ctx.measureText(gLabel).width;
      ctx.fillStyle = CSS.muted;
      ctx.font = '10.5px system-ui, sans-serif';
      if (lane.ranks.length) ctx.fillText(`rank ${fmtIntRanges(lane.ranks)}`, 8 + gWidth + 6, y + PHASE_H / 2 + 1, LEFT - 20 - gWidth);
      ctx.fillText(p.multiNode ? `${lane.node}:${lane.gpu}` : `gpu ${lane.gpu}`, 8, y + PHASE_H + 12, LEFT - 12);
      if (lane.score !== undefined) {
        ctx.fillStyle = ACCENT;
        ctx.fillRect(0, y, 3, LANE_H - 8);
        ctx.font = 'bold 10.5px system-ui, sans-serif';
        ctx.fillText(lane.score, 8, y + PHASE_H + 26, LEFT - 12);
      } else if (lane.roles.length) ctx.fillText(lane.roles.join('+'), 8, y + PHASE_H + 26, LEFT - 12);
      ctx.font = '11.5px system-ui, sans-serif';
      ctx.fillStyle = 'rgba(255,255,255,0.03)';
      ctx.fillRect(LEFT, y + PHASE_H + 2, f.width, UTIL_H);
      drawPhaseBand(ctx, f, p.phasesByLane.get(lane.key), y, PHASE_H);
      const g = p.gpu[lane.key];
      const note = laneNote(lane.key);
      if (note) {
        ctx.fillStyle = CSS.muted;
        ctx.fillText(note, LEFT + 8, y + PHASE_H + 2 + UTIL_H / 2);
      }
      if (g) {
        drawUtil(ctx, f, g.ts, g.util, y + PHASE_H + 2, UTIL_H);
        if (p.showMem) drawMem(ctx, f, g.ts, g.mem_mb, p.memMax, y + PHASE_H + 2, UTIL_H);
      }
      if (p.overlay) {
        const spans = enginesForLane(p.topology, lane.node, lane.gpu, p.vp.t0, p.vp.t1);
        drawEngineOverlay(ctx, f, spans, p.overlay.byAddr, p.overlay.max, y + PHASE_H + 2, UTIL_H);
      }
    });
    if (p.lifecycle && lcRows) {
      ctx.fillStyle = CSS.text;
      ctx.fillText('requests', 8, lcTop + LC_TITLE / 2);
      ctx.fillStyle = CSS.muted;
      const total = p.lifecycle.header.rows_total ?? lcRows;
      const perRow = rowDensity(0)?.count ?? 1;
      ctx.fillText(
        `${total} request${total === 1 ? '' : 's'}${perRow > 1 ? ` · up to ${perRow} per row (zoom in to see each)` : ''}${total > lcRows && perRow === 1 ? ` · first ${lcRows}` : ''} · queued / generating / tool`,
        LEFT,
        lcTop + LC_TITLE / 2,
      );
      const h = p.lifecycle.header;
      // The strip was fetched for its own window; place it on the shared axis.
      const x0 = LEFT + ((h.t0 - p.vp.t0) / (p.vp.t1 - p.vp.t0)) * f.width;
      const x1 = LEFT + ((h.t1 - p.vp.t0) / (p.vp.t1 - p.vp.t0)) * f.width;
      ctx.save();
      ctx.beginPath();
      ctx.rect(LEFT, lcTop + LC_TITLE, f.width, lcH);
      ctx.clip();
      drawLifecycle(ctx, p.lifecycle, x0, lcTop + LC_TITLE, x1 - x0, lcH);
      ctx.restore();
    }
    if (p.lanes.length) markPainted('timeline');
  }

  function hover(e: MouseEvent) {
    const f = frameRef.current;
    const c = canvasRef.current;
    if (!f || !c) return;
    const r = c.getBoundingClientRect();
    const x = e.clientX - r.left;
    const y = e.clientY - r.top;
    if (drag) {
      setDrag({ ...drag, x1: Math.min(Math.max(x, LEFT), LEFT + f.width) });
      hideTip();
      return;
    }
    hoverRow.current = null;
    c.style.cursor = '';
    if (x < LEFT || x > LEFT + f.width) return hideTip();
    const t = tOf(f, x);
    const time = `${fmtElapsed(t - p.origin)}  (${fmtWall(t).slice(11)})`;
    if (y < stepH) {
      const b = p.bubbles.find((bb) => bb.step_time != null && t >= bb.ts - bb.step_time && t <= bb.ts);
      if (!b) return hideTip();
      return showTip(e.clientX, e.clientY, [
        `step ${b.step}`,
        `step_time = ${fmtNum(b.step_time)} s`,
        `wait_ratio = ${fmtNum(b.wait_ratio)}`,
        'click = zoom to this step',
      ]);
    }
    const li = Math.floor((y - lanesTop) / LANE_H);
    if (li >= 0 && li < p.lanes.length) {
      const lane = p.lanes[li]!;
      const lines = [`g${lane.index}  ${lane.key}${lane.ranks.length || lane.roles.length ? `  ${fmtLaneRoles(lane)}` : ''}   ${time}`];
      const lanePhases = p.phasesByLane.get(lane.key);
      let shown = 0;
      for (let i = 0; i < (lanePhases?.length ?? 0); i++) {
        const q = lanePhases!;
        if (!(q.t0[i]! <= t && q.t1[i]! >= t)) continue;
        lines.push(`phase: ${q.strings[q.name[i]!]}${q.rank[i]! >= 0 ? ` (rank ${q.rank[i]})` : ''}  ${fmtElapsed(q.t0[i]! - p.origin)} → ${fmtElapsed(q.t1[i]! - p.origin)}`);
        shown++;
      }
      if (!shown) lines.push('phase: —');
      if (hasOverlap(lanePhases)) lines.push('half-height bands: this GPU runs trainer and engine phases at once (colocated) — train on top, rollout below');
      const step = stepAt(t);
      if (step !== null && y - (lanesTop + li * LANE_H) < PHASE_H) lines.push(`click = open step ${step}'s Rollouts`);
      const note = laneNote(lane.key);
      if (note) lines.push(note);
      const g = p.gpu[lane.key];
      if (g?.ts.length) {
        const k = nearestIndex(g.ts, t);
        lines.push(`util: ${g.util[k]}%   mem: ${(g.mem_mb[k]! / 1024).toFixed(1)} GB${g.power_w ? `   power: ${fmtNum(g.power_w[k])} W` : ''}`);
      }
      if (p.overlay) {
        const span = enginesForLane(p.topology, lane.node, lane.gpu, t, t)[0];
        const s = span && p.overlay.byAddr.get(span.addr);
        if (s?.ts.length) {
          const k = lastAtOrBefore(s.ts, t);
          lines.push(`${p.overlay.metric}: ${k >= 0 ? fmtNum(s.value[k]) : '—'}`, `engine: ${span.addr.replace(/^https?:\/\//, '')}`);
        } else lines.push(`${p.overlay.metric}: —`);
      }
      return showTip(e.clientX, e.clientY, lines);
    }
    const row = lifecycleRowAt(y);
    if (row !== null) {
      const h = p.lifecycle!.header;
      const col = Math.floor(((t - h.t0) / (h.t1 - h.t0)) * h.x_buckets);
      const s = rowSample(row);
      if (!s) return hideTip();
      c.style.cursor = 'pointer';
      const cell = col >= 0 && col < h.x_buckets ? p.lifecycle!.values[row * h.x_buckets + col]! : 0;
      // Only a drawn segment is the request: the idle rest of its row opens nothing.
      if (!cell) return hideTip();
      const state = h.palette?.[cell] || '—';
      const dense = rowDensity(row);
      if (dense) {
        c.style.cursor = 'zoom-in';
        return showTip(e.clientX, e.clientY, [
          `${dense.count} requests (samples ${dense.first_sample} … ${dense.last_sample})   ${time}`,
          `busiest state here: ${state}`,
          'click = zoom to these requests (each gets its own row)',
        ]);
      }
      const tipLines = () => {
        const known = knownSampleStep(s.sample, p.stepIds);
        return [
          `sample ${s.sample} (group ${s.group})   ${time}`,
          `state: ${state}`,
          known === 'none'
            ? 'not in any dumped training step'
            : known
              ? `step ${known.rolloutId} · status: ${known.lane.status ?? 'unfinished'}`
              : 'step · status: …',
          known === 'none' ? 'no sample page to open' : 'click = open this sample',
        ];
      };
      hoverRow.current = row;
      showTip(e.clientX, e.clientY, tipLines());
      if (!knownSampleStep(s.sample, p.stepIds)) {
        const { clientX, clientY } = e;
        // The status comes with the step's answer; refresh the tip if the pointer is still on this row.
        findSampleStep(s.sample, p.stepIds, p.bubbles, rowLastTime(row)).then(() => {
          if (hoverRow.current === row) showTip(clientX, clientY, tipLines());
        });
      }
      return;
    }
    hideTip();
  }

  function down(e: MouseEvent) {
    const f = frameRef.current;
    const c = canvasRef.current;
    if (!f || !c || e.button !== 0) return;
    const r = c.getBoundingClientRect();
    const x = e.clientX - r.left;
    const y = e.clientY - r.top;
    if (x < LEFT) return;
    if (y < stepH) {
      const t = tOf(f, x);
      const b = p.bubbles.find((bb) => bb.step_time != null && t >= bb.ts - bb.step_time && t <= bb.ts);
      if (b && b.step_time != null) p.onViewport({ t0: b.ts - b.step_time, t1: b.ts });
      return;
    }
    e.preventDefault();
    setDrag({ x0: x, x1: x });
    const pressedRow = lifecycleRowAt(y);
    const pressedOnRequest = pressedRow !== null && lifecycleCellAt(pressedRow, tOf(f, x)) !== 0;
    const li = Math.floor((y - lanesTop) / LANE_H);
    const pressedStep = li >= 0 && li < p.lanes.length && y - (lanesTop + li * LANE_H) < PHASE_H ? stepAt(tOf(f, x)) : null;
    const up = (ev: MouseEvent) => {
      window.removeEventListener('mouseup', up);
      // A click (no drag) on a lifecycle row opens that sample.
      const click = Math.abs(ev.clientX - e.clientX) <= 4 && Math.abs(ev.clientY - e.clientY) <= 4;
      const dense = pressedOnRequest ? rowDensity(pressedRow!) : null;
      if (click && dense) {
        const pad = Math.max(1, (dense.t1 - dense.t0) * 0.05);
        p.onViewport({ t0: dense.t0 - pad, t1: dense.t1 + pad });
      } else if (click && pressedOnRequest) openRow(pressedRow!);
      // A click on a lane's phase band opens that step's Rollouts.
      if (click && pressedStep !== null) {
        hideTip();
        navigate(href(`/rollout/${pressedStep}`));
      }
      setDrag((d) => {
        if (d && Math.abs(d.x1 - d.x0) > 4) {
          const a = tOf(f, Math.min(d.x0, d.x1));
          const b = tOf(f, Math.max(d.x0, d.x1));
          queueMicrotask(() => p.onViewport({ t0: a, t1: b }));
        }
        return null;
      });
    };
    window.addEventListener('mouseup', up);
  }

  function wheel(e: WheelEvent) {
    // Plain wheel scrolls the page; ctrl/⌘ + wheel zooms around the cursor.
    if (!(e.ctrlKey || e.metaKey)) return;
    const f = frameRef.current;
    const c = canvasRef.current;
    if (!f || !c) return;
    e.preventDefault();
    const r = c.getBoundingClientRect();
    const t = tOf(f, e.clientX - r.left);
    const k = Math.exp(e.deltaY * 0.002);
    p.onViewport({ t0: t - (t - p.vp.t0) * k, t1: t + (p.vp.t1 - t) * k }, true);
  }

  return (
    <div
      class="lane-canvas-wrap"
      style={{ position: 'relative' }}
      data-requests-total={p.lifecycle?.header.rows_total ?? 0}
      data-request-rows={lcRows}
      data-request-density={lcRows && rowDensity(0) ? 'folded' : 'each'}
      data-strip-top={lcTop + LC_TITLE}
      data-lanes-top={lanesTop}
      data-lane-height={LANE_H}
      data-strip-height={lcH}
      data-empty-lanes={p.lanes.filter((l) => empty.has(l.key)).map((l) => `g${l.index}`).join(' ')}>
      <CanvasBox
        height={height}
        draw={draw}
        canvasRef={canvasRef}
        class="timeline-canvas"
        label="per-GPU lanes: phase band, utilisation, engine overlay, request lifecycle"
        data-testid="lanes"
        onMouseMove={hover}
        onMouseLeave={() => ((hoverRow.current = null), hideTip())}
        onMouseDown={down}
        onWheel={wheel}
        onDblClick={() => p.onReset()}
      />
      <ol class="sr-only" data-testid="lane-labels" aria-label="lanes, top to bottom">
        {p.lanes.map((l) => (
          <li key={l.key} data-score={l.score}>{`g${l.index} ${l.node}:${l.gpu}${l.ranks.length || l.roles.length ? ` ${fmtLaneRoles(l)}` : ''}${l.score ? ` · ${l.score}` : ''}`}</li>
        ))}
      </ol>
      {opening && (
        <p class={opening.failed ? 'error-note' : 'hint'} data-testid="lifecycle-open" style={{ margin: '4px 0 0' }}>
          {opening.failed
            ? `Sample ${opening.sample} is not listed by any training step of this run (an eval or dropped sample has no sample page here).`
            : `finding the step of sample ${opening.sample}…`}
        </p>
      )}
      {drag && Math.abs(drag.x1 - drag.x0) > 2 && (
        <div
          class="drag-select"
          style={{
            position: 'absolute',
            top: `${stepH}px`,
            height: `${height - stepH}px`,
            left: `${Math.min(drag.x0, drag.x1)}px`,
            width: `${Math.abs(drag.x1 - drag.x0)}px`,
            background: 'rgba(255,138,61,0.15)',
            borderLeft: '1px solid #ff8a3d',
            borderRight: '1px solid #ff8a3d',
            pointerEvents: 'none',
          }}
        />
      )}
    </div>
  );
}
