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

/**
 * Node names in cluster order: digit runs compare as numbers, the rest by code units, so IPv4
 * addresses order by octet (`10.0.1.2` < `10.0.1.10`) and host names by their numbers
 * (`node-2` < `node-10`). Equal numbers with more leading zeros sort later, so the order is total.
 */
export function compareNodes(a: string, b: string): number {
  if (a === b) return 0;
  const ta = a.match(NODE_PARTS) ?? [];
  const tb = b.match(NODE_PARTS) ?? [];
  for (let i = 0; i < ta.length && i < tb.length; i++) {
    const x = ta[i]!;
    const y = tb[i]!;
    if (x === y) continue;
    const xd = isDigit(x);
    const yd = isDigit(y);
    if (xd && yd) {
      const nx = x.replace(/^0+(?=\d)/, '');
      const ny = y.replace(/^0+(?=\d)/, '');
      // Compare as numbers without overflow: a longer digit run (sans leading zeros) is larger.
      if (nx.length !== ny.length) return nx.length - ny.length;
      if (nx !== ny) return nx < ny ? -1 : 1;
      return x.length - y.length;
    }
    return x < y ? -1 : 1;
  }
  return ta.length - tb.length;
}
const NODE_PARTS = /\d+|\D+/g;
const isDigit = (part: string): boolean => part.charCodeAt(0) >= 48 && part.charCodeAt(0) <= 57;

/** Lane order, the one used by the lane catalog, the grammar's `g:` indices, every answer and the app: node in cluster order ({@link compareNodes}), then GPU index. */
export function compareLanes(a: { node: string; gpu: number }, b: { node: string; gpu: number }): number {
  return compareNodes(a.node, b.node) || a.gpu - b.gpu;
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

/**
 * Lanes a catalog may list: 8x the 1,024-GPU runs rlsight is built for. Every per-lane answer (heatmap rows,
 * fleet bands) grows with this, so a catalog beyond it is refused rather than served.
 */
export const MAX_LANES = 8192;
/** Bytes of `lane_catalog.json` read at most (a catalog of MAX_LANES lanes takes about 1 MiB). */
export const MAX_LANE_CATALOG_BYTES = 8 * 2 ** 20;

/** Reads the `lane_catalog.json` document; throws a message naming what is wrong. */
export function parseLaneCatalog(text: string): LaneFacts[] {
  if (text.length > MAX_LANE_CATALOG_BYTES) throw new Error(`${text.length} bytes exceed the limit of ${MAX_LANE_CATALOG_BYTES}`);
  const lanes = parseLaneCatalogJson(text);
  if (lanes.size > MAX_LANES) throw new Error(`${lanes.size} lanes exceed the limit of ${MAX_LANES}`);
  return [...lanes].map(([key, e]) => ({ ...parseLaneKey(key)!, ...e }));
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
