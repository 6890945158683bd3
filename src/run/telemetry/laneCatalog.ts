// The lane index: from `lane_catalog.json` when the writer keeps one, else folded from the streams.
import type { LaneEntry, TopologySnapshot } from './records.ts';

export interface LaneFacts {
  node: string;
  gpu: number;
  ranks: Set<number>;
  engineAddrs: Set<string>;
  roles: Set<string>;
}

/** Lane order: `(node, gpu)` with node compared as a plain string (`"10.0.0.10" < "10.0.0.2"`). */
export function compareLanes(a: { node: string; gpu: number }, b: { node: string; gpu: number }): number {
  if (a.node !== b.node) return a.node < b.node ? -1 : 1;
  return a.gpu - b.gpu;
}

const numAsc = (a: number, b: number): number => a - b;
/** Python's string order (code units), as the reference sorts names. */
export const strAsc = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** Sorted lane entries with their `index`. */
export function laneEntries(facts: Iterable<LaneFacts>): LaneEntry[] {
  const list = [...facts].sort(compareLanes);
  return list.map((f, index) => ({
    node: f.node,
    gpu: f.gpu,
    ranks: [...f.ranks].sort(numAsc),
    engine_addrs: [...f.engineAddrs].sort(strAsc),
    roles: [...f.roles].sort(strAsc),
    index,
  }));
}

/** Splits a `"<node>:<gpu>"` lane key at its last colon; null when the gpu is not an integer. */
export function parseLaneKey(key: string): { node: string; gpu: number } | null {
  const at = key.lastIndexOf(':');
  if (at < 0) return null;
  const gpuText = key.slice(at + 1).trim();
  if (!/^[+-]?\d+$/.test(gpuText)) return null;
  return { node: key.slice(0, at), gpu: Number(gpuText) };
}

/** Reads the `lane_catalog.json` document; throws a message naming what is wrong. */
export function parseLaneCatalog(text: string): LaneFacts[] {
  const doc = JSON.parse(text) as unknown;
  if (doc === null || typeof doc !== 'object' || typeof (doc as any).lanes !== 'object' || (doc as any).lanes === null) {
    throw new Error('expected {"version": 1, "lanes": {...}}');
  }
  const out: LaneFacts[] = [];
  for (const [key, v] of Object.entries((doc as any).lanes as Record<string, any>)) {
    const lane = parseLaneKey(key);
    if (lane === null) throw new Error(`bad lane key '${key}'`);
    const list = (x: unknown): unknown[] => (Array.isArray(x) ? x : []);
    out.push({
      node: lane.node,
      gpu: lane.gpu,
      ranks: new Set(list(v?.ranks).filter((r): r is number => typeof r === 'number')),
      engineAddrs: new Set(list(v?.engine_addrs).filter((a): a is string => typeof a === 'string')),
      roles: new Set(list(v?.roles).filter((r): r is string => typeof r === 'string')),
    });
  }
  return out;
}

/** The legacy fallback: lanes folded from gpu_util rows, phase events (any role) and topology snapshots. */
export class LaneScan {
  private readonly lanes = new Map<string, LaneFacts>();
  /** Bumped whenever a lane or a fact is added. */
  version = 0;

  private lane(node: string, gpu: number): LaneFacts {
    const key = `${node}:${gpu}`;
    let f = this.lanes.get(key);
    if (f === undefined) {
      f = { node, gpu, ranks: new Set(), engineAddrs: new Set(), roles: new Set() };
      this.lanes.set(key, f);
      this.version++;
    }
    return f;
  }

  addGpu(node: string, gpu: number): void {
    this.lane(node, gpu);
  }

  addPhase(node: string, gpus: ArrayLike<number>, rank: number, role: string): void {
    for (let i = 0; i < gpus.length; i++) {
      const f = this.lane(node, gpus[i]);
      if (role === 'train') {
        if (!f.roles.has('train')) {
          f.roles.add('train');
          this.version++;
        }
        if (rank >= 0 && !f.ranks.has(rank)) {
          f.ranks.add(rank);
          this.version++;
        }
      }
    }
  }

  addTopology(snap: TopologySnapshot): void {
    for (const e of snap.engines) {
      for (const [node, gpu] of e.gpus) {
        const f = this.lane(node, gpu);
        if (!f.roles.has('rollout')) {
          f.roles.add('rollout');
          this.version++;
        }
        if (!f.engineAddrs.has(e.addr)) {
          f.engineAddrs.add(e.addr);
          this.version++;
        }
      }
    }
  }

  facts(): Iterable<LaneFacts> {
    return this.lanes.values();
  }
}
