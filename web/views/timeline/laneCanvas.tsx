// The lane view: one row per GPU stacking phase band, util/mem and the engine overlay, then the request lifecycle strip.
import { useEffect, useRef, useState } from 'preact/hooks';
import { CanvasBox, type CanvasSize } from '../../components/canvasBox.tsx';
import { hideTip, showTip } from '../../components/tooltip.tsx';
import { fmtElapsed, fmtLaneRoles, fmtWall } from '../../format.ts';
import { markPainted } from '../../paintMarks.ts';
import { href, navigate } from '../../route.ts';
import type { Bubble } from '../../../src/wire/index.ts';
import { drawLaneRow, LANE_H, type LaneData, type LaneInfo, laneTip, laneValuesTip, LEFT, PHASE_H } from './layers/laneRow.ts';
import {
  densityTip,
  drawRequestStrip,
  LC_TITLE,
  type Lifecycle,
  lifecycleCellAt,
  lifecycleHeight,
  requestTip,
  rowDensity,
  rowLastTime,
  rowSample,
} from './layers/lifecycleStrip.ts';
import { bubbleAt, drawGrid, drawSteps, drawTimeAxis, stepTip } from './layers/timeAxis.ts';
import { findSampleStep, knownSampleStep } from './sampleStep.ts';
import { type Frame, tOf, type Viewport } from './viewport.ts';

interface Props extends LaneData {
  lanes: LaneInfo[];
  lifecycle: Lifecycle | null;
  bubbles: Bubble[];
  origin: number;
  vp: Viewport;
  /** Training step ids, to find which step a lifecycle row's sample belongs to. */
  stepIds: readonly number[];
  /** `replace` for continuous changes (wheel zoom); discrete ones push a history entry. */
  onViewport: (vp: Viewport, replace?: boolean) => void;
  onReset: () => void;
  /** False when the step bar and time axis are drawn in a sticky header above (only grid lines here). */
  header?: boolean;
}

const RIGHT = 12;
const STEP_H = 18;
const AXIS_H = 20;

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

  /** The training step whose span holds t (from the step bubbles), or null. */
  function stepAt(t: number): number | null {
    const b = bubbleAt(p.bubbles, t);
    return b && b.step !== null && p.stepIds.includes(b.step) ? b.step : null;
  }

  function openRow(row: number) {
    const s = rowSample(p.lifecycle, row);
    if (!s) return;
    setOpening({ sample: s.sample, failed: false });
    findSampleStep(s.sample, p.stepIds, p.bubbles, rowLastTime(p.lifecycle!, row)).then((hit) => {
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
    p.lanes.forEach((lane, i) => drawLaneRow(ctx, f, p, lane, lanesTop + i * LANE_H, laneNote(lane.key)));
    if (p.lifecycle && lcRows) drawRequestStrip(ctx, f, p.lifecycle, lcTop, lcH);
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
      const b = bubbleAt(p.bubbles, t);
      return b ? showTip(e.clientX, e.clientY, stepTip(b)) : hideTip();
    }
    const li = Math.floor((y - lanesTop) / LANE_H);
    if (li >= 0 && li < p.lanes.length) {
      const lane = p.lanes[li]!;
      const note = laneNote(lane.key);
      const lines = laneTip(p, lane, t, time, p.origin, note);
      const step = stepAt(t);
      if (step !== null && y - (lanesTop + li * LANE_H) < PHASE_H) lines.push(`click = open step ${step}'s Rollouts`);
      lines.push(...laneValuesTip(p, lane, t, note));
      return showTip(e.clientX, e.clientY, lines);
    }
    const row = lifecycleRowAt(y);
    if (row !== null) {
      const s = rowSample(p.lifecycle, row);
      if (!s) return hideTip();
      c.style.cursor = 'pointer';
      const cell = lifecycleCellAt(p.lifecycle!, row, t);
      // Only a drawn segment is the request: the idle rest of its row opens nothing.
      if (!cell) return hideTip();
      const state = p.lifecycle!.header.palette?.[cell] || '—';
      const dense = rowDensity(p.lifecycle, row);
      if (dense) {
        c.style.cursor = 'zoom-in';
        return showTip(e.clientX, e.clientY, densityTip(dense, state, time));
      }
      const tipLines = () => {
        const known = knownSampleStep(s.sample, p.stepIds);
        return requestTip(s, state, time, known && known !== 'none' ? { rolloutId: known.rolloutId, status: known.lane.status ?? null } : known);
      };
      hoverRow.current = row;
      showTip(e.clientX, e.clientY, tipLines());
      if (!knownSampleStep(s.sample, p.stepIds)) {
        const { clientX, clientY } = e;
        // The status comes with the step's answer; refresh the tip if the pointer is still on this row.
        findSampleStep(s.sample, p.stepIds, p.bubbles, rowLastTime(p.lifecycle!, row)).then(() => {
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
      const b = bubbleAt(p.bubbles, t);
      if (b && b.step_time != null) p.onViewport({ t0: b.ts - b.step_time, t1: b.ts });
      return;
    }
    e.preventDefault();
    setDrag({ x0: x, x1: x });
    const pressedRow = lifecycleRowAt(y);
    const pressedOnRequest = pressedRow !== null && lifecycleCellAt(p.lifecycle!, pressedRow, tOf(f, x)) !== 0;
    const li = Math.floor((y - lanesTop) / LANE_H);
    const pressedStep = li >= 0 && li < p.lanes.length && y - (lanesTop + li * LANE_H) < PHASE_H ? stepAt(tOf(f, x)) : null;
    const up = (ev: MouseEvent) => {
      window.removeEventListener('mouseup', up);
      // A click (no drag) on a lifecycle row opens that sample.
      const click = Math.abs(ev.clientX - e.clientX) <= 4 && Math.abs(ev.clientY - e.clientY) <= 4;
      const dense = pressedOnRequest ? rowDensity(p.lifecycle, pressedRow!) : null;
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
      data-request-density={lcRows && rowDensity(p.lifecycle, 0) ? 'folded' : 'each'}
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
