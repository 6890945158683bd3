// Layer: the SGLang engine series of whichever engine served this GPU at each moment (topology windows).
import { OVERLAY_COLOR } from '../../../theme.ts';
import type { Topology } from '../../../../src/wire/index.ts';
import type { EngineSeriesView } from '../../../columns.ts';
import type { Frame } from '../viewport.ts';
import { drawSeries } from './utilLine.ts';

/** The engine address that covered (node, gpu) in each topology window overlapping the view. */
export function enginesForLane(topo: Topology | null, node: string, gpu: number, t0: number, t1: number): { addr: string; t0: number; t1: number }[] {
  if (!topo) return [];
  const out: { addr: string; t0: number; t1: number }[] = [];
  for (const w of topo.windows) {
    const wt1 = w.t1 ?? Infinity;
    if (wt1 < t0 || w.t0 > t1) continue;
    let e = w.engines.find((en) => en.gpus?.some((g) => g[0] === node && g[1] === gpu));
    // External engines carry no GPU identity: match the engine's host instead.
    e ??= w.engines.find((en) => (!en.gpus || en.gpus.length === 0) && hostOf(en.addr) === node);
    if (e) out.push({ addr: e.addr, t0: w.t0, t1: wt1 });
  }
  return out;
}

export function hostOf(addr: string): string {
  try {
    return new URL(addr).hostname;
  } catch {
    return addr.split(':')[0] ?? addr;
  }
}

export function drawEngineOverlay(
  ctx: CanvasRenderingContext2D,
  f: Frame,
  spans: { addr: string; t0: number; t1: number }[],
  byAddr: Map<string, EngineSeriesView>,
  max: number,
  y: number,
  h: number,
): void {
  for (const s of spans) {
    const series = byAddr.get(s.addr);
    if (!series) continue;
    const sub: Frame = { ...f };
    ctx.save();
    const x0 = Math.max(f.left, f.left + ((s.t0 - f.vp.t0) / (f.vp.t1 - f.vp.t0)) * f.width);
    const x1 = Math.min(f.left + f.width, f.left + ((s.t1 - f.vp.t0) / (f.vp.t1 - f.vp.t0)) * f.width);
    ctx.beginPath();
    ctx.rect(x0, y - 2, Math.max(0, x1 - x0), h + 4);
    ctx.clip();
    drawSeries(ctx, sub, series.ts, series.value, max, y, h, { stroke: OVERLAY_COLOR, width: 1.6 });
    ctx.restore();
  }
}
