// Per-process VRAM samples of the selected GPUs: coarse snapshots the client resolves to the nearest.
import type { GpuProcessSample, LaneEntry } from '../run/model.ts';
import { resolveLanes } from './lanes.ts';
import { checkTimelineWindow } from './limits.ts';

export interface GpuProcessSource {
  gpuProcessRows(t0?: number | null, t1?: number | null): GpuProcessSample[];
  laneIndex(): readonly LaneEntry[];
}

export interface GpuProcessQuery {
  t0?: number | null;
  t1?: number | null;
  /** Lane-selection grammar; absent/blank/`all` = every lane. */
  lanes?: string | null;
}

/** `GET /api/timeline/gpu_processes`: samples with `t0 <= ts <= t1` on the selected lanes, in file order. */
export function gpuProcesses(store: GpuProcessSource, q: GpuProcessQuery = {}): { processes: GpuProcessSample[] } {
  checkTimelineWindow(q.t0, q.t1);
  const sel = resolveLanes(q.lanes, store.laneIndex());
  const processes: GpuProcessSample[] = [];
  for (const r of store.gpuProcessRows(q.t0, q.t1)) {
    if (sel !== null && !sel.has(`${r.node}:${r.gpu}`)) continue;
    processes.push({ ts: r.ts, node: r.node, gpu: r.gpu, pid: r.pid, name: r.name, mem_mb: r.mem_mb });
  }
  return { processes };
}
