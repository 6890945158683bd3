// Layer: one GPU lane — its label (index, ranks, node:gpu, roles or a quick pick's score), phase band,
// util/mem lines and engine overlay — and what its tooltip says at a time.
import { fmtElapsed, fmtIntRanges, fmtLaneRoles, fmtNum } from '../../../format.ts';
import { ACCENT, CSS } from '../../../theme.ts';
import type { GpuSeries, Topology } from '../../../../src/wire/index.ts';
import type { EngineSeriesView, LanePhases } from '../../../columns.ts';
import { drawEngineOverlay, enginesForLane } from './engineOverlay.ts';
import { drawPhaseBand, hasOverlap } from './phaseBand.ts';
import { drawMem, drawUtil } from './utilLine.ts';
import { type Frame, lastAtOrBefore, nearestIndex } from '../viewport.ts';

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

/** Width of the lane labels; the fleet overview above uses the same so both share one time axis. */
export const LEFT = 118;
export const PHASE_H = 14;
const UTIL_H = 32;
export const LANE_H = PHASE_H + UTIL_H + 10;

/** What the lanes draw from, shared by every lane. */
export interface LaneData {
  phasesByLane: Map<string, LanePhases>;
  gpu: Record<string, GpuSeries>;
  overlay: Overlay | null;
  topology: Topology | null;
  showMem: boolean;
  memMax: number;
  multiNode: boolean;
}

/** Draws one lane at `y` (label left of the frame, the layers inside it); `note` says why it is empty. */
export function drawLaneRow(ctx: CanvasRenderingContext2D, f: Frame, d: LaneData, lane: LaneInfo, y: number, note: string | null): void {
  // Label: index and train ranks, then node:gpu, then roles (what a user looks a lane up by).
  ctx.fillStyle = CSS.text;
  const gLabel = lane.index >= 0 ? `g${lane.index}` : 'g?';
  ctx.fillText(gLabel, 8, y + PHASE_H / 2 + 1);
  const gWidth = ctx.measureText(gLabel).width;
  ctx.fillStyle = CSS.muted;
  ctx.font = '10.5px system-ui, sans-serif';
  if (lane.ranks.length) ctx.fillText(`rank ${fmtIntRanges(lane.ranks)}`, 8 + gWidth + 6, y + PHASE_H / 2 + 1, LEFT - 20 - gWidth);
  ctx.fillText(d.multiNode ? `${lane.node}:${lane.gpu}` : `gpu ${lane.gpu}`, 8, y + PHASE_H + 12, LEFT - 12);
  if (lane.score !== undefined) {
    ctx.fillStyle = ACCENT;
    ctx.fillRect(0, y, 3, LANE_H - 8);
    ctx.font = 'bold 10.5px system-ui, sans-serif';
    ctx.fillText(lane.score, 8, y + PHASE_H + 26, LEFT - 12);
  } else if (lane.roles.length) ctx.fillText(lane.roles.join('+'), 8, y + PHASE_H + 26, LEFT - 12);
  ctx.font = '11.5px system-ui, sans-serif';
  ctx.fillStyle = 'rgba(255,255,255,0.03)';
  ctx.fillRect(LEFT, y + PHASE_H + 2, f.width, UTIL_H);
  drawPhaseBand(ctx, f, d.phasesByLane.get(lane.key), y, PHASE_H);
  const g = d.gpu[lane.key];
  if (note) {
    ctx.fillStyle = CSS.muted;
    ctx.fillText(note, LEFT + 8, y + PHASE_H + 2 + UTIL_H / 2);
  }
  if (g) {
    drawUtil(ctx, f, g.ts, g.util, y + PHASE_H + 2, UTIL_H);
    if (d.showMem) drawMem(ctx, f, g.ts, g.mem_mb, d.memMax, y + PHASE_H + 2, UTIL_H);
  }
  if (d.overlay) {
    const spans = enginesForLane(d.topology, lane.node, lane.gpu, f.vp.t0, f.vp.t1);
    drawEngineOverlay(ctx, f, spans, d.overlay.byAddr, d.overlay.max, y + PHASE_H + 2, UTIL_H);
  }
}

/** The tooltip of a lane at time `t` (`time` its label): phases there, the GPU sample and engine value nearest it. */
export function laneTip(d: LaneData, lane: LaneInfo, t: number, time: string, origin: number, note: string | null): string[] {
  const lines = [`g${lane.index}  ${lane.key}${lane.ranks.length || lane.roles.length ? `  ${fmtLaneRoles(lane)}` : ''}   ${time}`];
  const lanePhases = d.phasesByLane.get(lane.key);
  let shown = 0;
  for (let i = 0; i < (lanePhases?.length ?? 0); i++) {
    const q = lanePhases!;
    const open = q.open?.has(i) ?? false;
    // one still open lasts, as far as is known, from its start to the newest data and on
    if (!(q.t0[i]! <= t && (q.t1[i]! >= t || open))) continue;
    const unclosed = q.unfinished?.has(i)
      ? '  (never closed: ended where its rank next began a phase)'
      : open
        ? '  (still open: no end written yet; running, or its trainer stopped with nothing written after it)'
        : '';
    lines.push(`phase: ${q.strings[q.name[i]!]}${q.rank[i]! >= 0 ? ` (rank ${q.rank[i]})` : ''}  ${fmtElapsed(q.t0[i]! - origin)} → ${fmtElapsed(q.t1[i]! - origin)}${unclosed}`);
    shown++;
  }
  if (!shown) lines.push('phase: —');
  if (hasOverlap(lanePhases)) lines.push('half-height bands: this GPU runs trainer and engine phases at once (colocated) — train on top, rollout below');
  return lines;
}

/** The tooltip lines after the step hint: the lane's note, then its GPU sample and engine value nearest `t`. */
export function laneValuesTip(d: LaneData, lane: LaneInfo, t: number, note: string | null): string[] {
  const lines: string[] = [];
  if (note) lines.push(note);
  const g = d.gpu[lane.key];
  if (g?.ts.length) {
    const k = nearestIndex(g.ts, t);
    // a negative power is the GPU sampler's mark for a board that reports none
    const power = g.power_w ? `   power: ${g.power_w[k]! < 0 ? 'not reported' : `${fmtNum(g.power_w[k])} W`}` : '';
    lines.push(`util: ${g.util[k]}%   mem: ${(g.mem_mb[k]! / 1024).toFixed(1)} GB${power}`);
  }
  if (d.overlay) {
    const span = enginesForLane(d.topology, lane.node, lane.gpu, t, t)[0];
    const s = span && d.overlay.byAddr.get(span.addr);
    if (s?.ts.length) {
      const k = lastAtOrBefore(s.ts, t);
      lines.push(`${d.overlay.metric}: ${k >= 0 ? fmtNum(s.value[k]) : '—'}`, `engine: ${span.addr.replace(/^https?:\/\//, '')}`);
    } else lines.push(`${d.overlay.metric}: —`);
  }
  return lines;
}
