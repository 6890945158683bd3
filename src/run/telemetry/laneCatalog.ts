// The lane index: from `lane_catalog.json` when the writer keeps one, else folded from the streams.
import { parseLaneCatalogJson, parseLaneKey } from '../../formats/dashboard/laneCatalog.ts';
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

/** Reads the `lane_catalog.json` document; throws a message naming what is wrong. */
export function parseLaneCatalog(text: string): LaneFacts[] {
  return [...parseLaneCatalogJson(text)].map(([key, e]) => ({ ...parseLaneKey(key)!, ...e }));
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
