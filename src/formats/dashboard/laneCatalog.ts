// `lane_catalog.json`: what each GPU lane (`"<node>:<gpu>"`) is, folded by the writer from the
// records it flushes, so a reader need not scan the streams.
import { pyDumps, type PyJson } from '../pythonJson.ts';
import type { GpuSample, PhaseEvent, TopologySnapshot } from './records.ts';

export interface LaneCatalogEntry {
  ranks: Set<number>;
  engineAddrs: Set<string>;
  roles: Set<string>;
}

const codeUnitOrder = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** The catalog document with Python's default separators and every list sorted. */
export function laneCatalogJson(lanes: ReadonlyMap<string, LaneCatalogEntry>): string {
  const body: Record<string, PyJson> = {};
  for (const key of [...lanes.keys()].sort(codeUnitOrder)) {
    const lane = lanes.get(key)!;
    body[key] = {
      ranks: [...lane.ranks].sort((a, b) => a - b),
      engine_addrs: [...lane.engineAddrs].sort(codeUnitOrder),
      roles: [...lane.roles].sort(codeUnitOrder),
    };
  }
  return pyDumps({ version: 1, lanes: body });
}

/** Splits a `"<node>:<gpu>"` lane key at its last colon; null when the gpu is not an integer. */
export function parseLaneKey(key: string): { node: string; gpu: number } | null {
  const at = key.lastIndexOf(':');
  if (at < 0) return null;
  const gpuText = key.slice(at + 1).trim();
  if (!/^[+-]?\d+$/.test(gpuText)) return null;
  return { node: key.slice(0, at), gpu: Number(gpuText) };
}

/** The catalog document back into entries; throws a message naming what is wrong. */
export function parseLaneCatalogJson(text: string): Map<string, LaneCatalogEntry> {
  const doc = JSON.parse(text) as unknown;
  const lanes = (doc as { lanes?: unknown } | null)?.lanes;
  if (doc === null || typeof doc !== 'object' || lanes === null || typeof lanes !== 'object' || Array.isArray(lanes)) {
    throw new Error('expected {"version": 1, "lanes": {...}}');
  }
  const out = new Map<string, LaneCatalogEntry>();
  const list = (x: unknown): unknown[] => (Array.isArray(x) ? x : []);
  for (const [key, v] of Object.entries(lanes as Record<string, { ranks?: unknown; engine_addrs?: unknown; roles?: unknown }>)) {
    if (parseLaneKey(key) === null) throw new Error(`bad lane key '${key}'`);
    out.set(key, {
      ranks: new Set(list(v?.ranks).filter((r): r is number => typeof r === 'number')),
      engineAddrs: new Set(list(v?.engine_addrs).filter((a): a is string => typeof a === 'string')),
      roles: new Set(list(v?.roles).filter((r): r is string => typeof r === 'string')),
    });
  }
  return out;
}

/**
 * The writer's fold (miles' `_merge_catalog`): train phases add role `train` and their rank (when
 * known) to each of their GPUs; topology adds role `rollout` and the engine's address to each of its
 * GPUs; a GPU sample makes sure its lane exists. `changed` says whether the document must be rewritten.
 */
export class LaneCatalogFold {
  readonly lanes = new Map<string, LaneCatalogEntry>();
  changed = false;

  private lane(node: string, gpu: number): LaneCatalogEntry {
    const key = `${node}:${gpu}`;
    let e = this.lanes.get(key);
    if (e === undefined) {
      e = { ranks: new Set(), engineAddrs: new Set(), roles: new Set() };
      this.lanes.set(key, e);
      this.changed = true;
    }
    return e;
  }

  private add<T>(set: Set<T>, v: T): void {
    if (!set.has(v)) {
      set.add(v);
      this.changed = true;
    }
  }

  /** Starts from a catalog already on disk (a restarted writer keeps what it knew). */
  load(existing: ReadonlyMap<string, LaneCatalogEntry>): void {
    for (const [key, e] of existing) {
      const lane = parseLaneKey(key)!;
      const into = this.lane(lane.node, lane.gpu);
      for (const r of e.ranks) into.ranks.add(r);
      for (const a of e.engineAddrs) into.engineAddrs.add(a);
      for (const r of e.roles) into.roles.add(r);
    }
    this.changed = false;
  }

  addPhase(e: Pick<PhaseEvent, 'node' | 'gpus' | 'rank' | 'role'>): void {
    if (e.role !== 'train') return;
    for (const g of e.gpus) {
      const lane = this.lane(e.node, g);
      this.add(lane.roles, 'train');
      if (e.rank >= 0) this.add(lane.ranks, e.rank);
    }
  }

  addTopology(s: TopologySnapshot): void {
    for (const engine of s.engines) {
      for (const [node, gpu] of engine.gpus) {
        const lane = this.lane(node, gpu);
        this.add(lane.roles, 'rollout');
        this.add(lane.engineAddrs, engine.addr);
      }
    }
  }

  addGpu(s: Pick<GpuSample, 'node' | 'gpu'>): void {
    this.lane(s.node, s.gpu);
  }

  toJson(): string {
    return laneCatalogJson(this.lanes);
  }
}
