// Layer: the SGLang engine series of whichever engine served this GPU at each moment (topology windows).
import { OVERLAY_COLOR } from '../../../theme.ts';
import type { Topology, TopologyWindow } from '../../../../src/wire/index.ts';
import type { EngineSeriesView } from '../../../columns.ts';
import type { Frame } from '../viewport.ts';
import { drawSeries } from './utilLine.ts';

/** The engine each lane shows in one topology window, by the GPU it holds and, for an external engine, by host. */
interface LaneEngines {
  byGpu: Map<string, string>;
  byHost: Map<string, string>;
}

/** Each window's maps, built once: an answer's windows are never changed, and every lane asks on every frame. */
const laneEnginesCache = new WeakMap<TopologyWindow, LaneEngines>();

/**
 * The one rule for which engine a lane shows in a window: the first engine holding the lane's GPU, else (external
 * engines carry no GPU identity) the first external engine on the lane's host.
 */
function laneEngines(w: TopologyWindow): LaneEngines {
  let out = laneEnginesCache.get(w);
  if (out) return out;
  out = { byGpu: new Map(), byHost: new Map() };
  for (const e of w.engines) {
    if (e.gpus && e.gpus.length > 0) {
      for (const g of e.gpus) {
        const key = `${g[0]}:${g[1]}`;
        if (!out.byGpu.has(key)) out.byGpu.set(key, e.addr);
      }
    } else {
      const host = hostOf(e.addr);
      if (!out.byHost.has(host)) out.byHost.set(host, e.addr);
    }
  }
  laneEnginesCache.set(w, out);
  return out;
}

function laneEngine(w: TopologyWindow, node: string, gpu: number): string | undefined {
  const { byGpu, byHost } = laneEngines(w);
  return byGpu.get(`${node}:${gpu}`) ?? byHost.get(node);
}

/** The topology windows that overlap [t0, t1] (by index): what the engines on the lanes in view depend on. */
export function windowsIn(topo: Topology | null, t0: number, t1: number): number[] {
  const out: number[] = [];
  topo?.windows.forEach((w, i) => {
    if (!((w.t1 ?? Infinity) < t0 || w.t0 > t1)) out.push(i);
  });
  return out;
}

/** The engine address that covered (node, gpu) in each topology window overlapping the view. */
export function enginesForLane(topo: Topology | null, node: string, gpu: number, t0: number, t1: number): { addr: string; t0: number; t1: number }[] {
  if (!topo) return [];
  const out: { addr: string; t0: number; t1: number }[] = [];
  for (const i of windowsIn(topo, t0, t1)) {
    const w = topo.windows[i]!;
    const addr = laneEngine(w, node, gpu);
    if (addr !== undefined) out.push({ addr, t0: w.t0, t1: w.t1 ?? Infinity });
  }
  return out;
}

/** Why an engine's series is drawn on no lane (see `unplacedEngines`). */
export type UnplacedReason = 'no topology' | 'not in topology' | 'no lane' | 'lane taken';

/** The words the legend gives each reason. */
export const UNPLACED_WHY: Record<UnplacedReason, string> = {
  'no topology': 'no topology snapshot in this window says which GPUs an engine serves',
  'not in topology': 'in no topology snapshot of this window',
  'no lane': 'their GPUs (or, for an external engine, its host) are on no lane of this run',
  'lane taken': 'their lanes show another engine on the same GPU or host',
};

/**
 * The engines among `addrs` whose series `enginesForLane` places on none of `lanes` in [t0, t1], each with
 * why: the overlay legend names them, since their scale is shown but nothing of them is drawn.
 */
export function unplacedEngines(topo: Topology | null, lanes: readonly { node: string; gpu: number }[], addrs: Iterable<string>, t0: number, t1: number): { addr: string; why: UnplacedReason }[] {
  const windows = windowsIn(topo, t0, t1).map((i) => topo!.windows[i]!);
  const placed = new Set<string>();
  const listed = new Set<string>();
  const onLaneNode = new Set<string>();
  const laneNodes = new Set(lanes.map((l) => l.node));
  const laneKeys = new Set(lanes.map((l) => `${l.node}:${l.gpu}`));
  for (const w of windows) {
    for (const e of w.engines) {
      listed.add(e.addr);
      const external = !e.gpus || e.gpus.length === 0;
      if (external ? laneNodes.has(hostOf(e.addr)) : e.gpus!.some((g) => laneKeys.has(`${g[0]}:${g[1]}`))) onLaneNode.add(e.addr);
    }
    // the engine each lane shows in this window, by the rule enginesForLane draws it with
    for (const l of lanes) {
      const addr = laneEngine(w, l.node, l.gpu);
      if (addr !== undefined) placed.add(addr);
    }
  }
  const out: { addr: string; why: UnplacedReason }[] = [];
  for (const addr of addrs) {
    if (placed.has(addr)) continue;
    const why: UnplacedReason = windows.length === 0 ? 'no topology' : !listed.has(addr) ? 'not in topology' : onLaneNode.has(addr) ? 'lane taken' : 'no lane';
    out.push({ addr, why });
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
