// Phases by lane: raw Timer intervals resolved into one row per GPU lane, for the timeline and carpet.
import { compareLanes, INITIALIZE_PHASE, OPEN_T1, type LaneEntry, type PhaseBlock, type RunMeta, type StringTable, type TopologyWindow } from '../run/model.ts';
import type { LaneSelection } from './lanes.ts';
import type { Phase } from '../wire/timeline.ts';

/**
 * One phase interval on one lane, as answered. `unfinished`: an open marker never closed, ended where the next
 * phase of its rank on its lane starts (its length is not a duration: leave it out of duration rankings).
 */
export type PhaseRow = Phase & { unfinished?: true; open?: true };

/** What `phasesByLane` reads from the telemetry store. */
export interface PhaseSource {
  phaseBlocks(t0?: number | null, t1?: number | null): PhaseBlock[];
  timeRange(): [number, number] | null;
  topologyWindows(): TopologyWindow[];
  laneIndex(): readonly LaneEntry[];
  meta(): RunMeta | null;
  readonly strings: StringTable;
}

export interface PhaseQuery {
  t0?: number | null;
  t1?: number | null;
  /** Resolved lane selection (`resolveLanes`); null/undefined = every lane. */
  lanes?: LaneSelection;
}

const ROLLOUT_MANAGER = 'rollout_manager';

/**
 * Phase intervals per `(node, gpu)` lane overlapping `[t0, t1]`, sorted by `(node, gpu, t0)` (stable):
 * * an open marker (`t1 == -1`) disappears when its closed twin `(node, rank, name, t0)` exists; else it
 *   ends where the next phase of its node and rank on one of its GPUs starts (a GPU-less one: of its node,
 *   rank and role), marked `unfinished` (it cannot still be running then), and without a later phase it
 *   grows to the data edge: `t1 = max(timeRange()[1], t0)`, marked `open` (it may still be running, or its
 *   trainer was killed with nothing written after it);
 * * `rollout_manager` intervals land on the GPUs of the engines of each topology window they overlap,
 *   clipped to the window (so an engine restart splits them); engines without GPUs fall back to every
 *   known lane on the engine's host; nothing is emitted without topology;
 * * other intervals land on their own `gpus`;
 * * when the window starts at or before `meta.start_ts`, each lane whose first interval starts later
 *   gets an `initialize` band `[start_ts, first)` with rank -1 and role `derived`.
 */
export function phasesByLane(store: PhaseSource, q: PhaseQuery = {}): PhaseRow[] {
  const t0 = q.t0 ?? null;
  const t1 = q.t1 ?? null;
  const sel = q.lanes ?? null;
  const strings = store.strings;
  const blocks = store.phaseBlocks(t0, t1);
  const { live, ends } = liveOpenMarkers(store, blocks);
  const edge = (store.timeRange() ?? [0, 0])[1];
  const overlaps = (a0: number, a1: number): boolean => (t1 === null || a0 < t1) && (t0 === null || a1 > t0);
  const rows: PhaseRow[] = [];
  const rmId = strings.find(ROLLOUT_MANAGER);
  let windows: { t0: number; t1: number | null; lanes: { node: string; gpu: number }[] }[] | null = null;

  /** How an interval ends: closed by its marker, `unfinished` (ended by its rank's next phase), or still `open` at the data edge. */
  type Ending = 'closed' | 'unfinished' | 'open';
  const push = (r: PhaseRow, ending: Ending): void => {
    if (ending === 'unfinished') r.unfinished = true;
    else if (ending === 'open') r.open = true;
    rows.push(r);
  };

  const emit = (b: PhaseBlock, i: number, e0: number, e1: number, ending: Ending = 'closed'): void => {
    if (b.role[i] === rmId) {
      windows ??= expansionWindows(store.topologyWindows(), store.laneIndex());
      const name = strings.str(b.name[i]);
      const rank = b.rank[i];
      for (const w of windows) {
        const c0 = Math.max(e0, w.t0);
        const c1 = w.t1 === null ? e1 : Math.min(e1, w.t1);
        // (an open one at the data edge may have no length yet)
        if (c0 > c1 || (c0 === c1 && ending !== 'open')) continue;
        for (const lane of w.lanes) {
          if (sel !== null && !sel.has(`${lane.node}:${lane.gpu}`)) continue;
          push({ name, t0: c0, t1: c1, node: lane.node, gpu: lane.gpu, rank, role: ROLLOUT_MANAGER }, ending);
        }
      }
      return;
    }
    const g0 = b.gpuStart[i];
    const g1 = b.gpuStart[i + 1];
    if (g0 === g1) return;
    const node = strings.str(b.node[i]);
    for (let k = g0; k < g1; k++) {
      const gpu = b.gpuList[k];
      if (sel !== null && !sel.has(`${node}:${gpu}`)) continue;
      push({ name: strings.str(b.name[i]), t0: e0, t1: e1, node, gpu, rank: b.rank[i], role: strings.str(b.role[i]) }, ending);
    }
  };

  for (let bi = 0; bi < blocks.length; bi++) {
    const b = blocks[bi];
    const open = live[bi];
    const end = ends[bi];
    /** The `k`-th live open marker (row `i`) as emitted. */
    const emitOpen = (k: number, i: number): void => {
      const e0 = b.t0[i];
      const next = end[k];
      const e1 = Number.isNaN(next) ? Math.max(edge, e0) : next;
      // (one at the data edge may not have lasted yet: it overlaps a window holding its start)
      if (overlaps(e0, e1) || (e0 === e1 && overlaps(e0, e0 + 1e-9))) emit(b, i, e0, e1, Number.isNaN(next) ? 'open' : 'unfinished');
    };
    // a closed interval ends by its block's tsMax: a block ending before the window has only its open markers to offer
    const closedMayOverlap = t0 === null || b.tsMax > t0;
    if (closedMayOverlap) {
      let k = 0;
      for (let i = 0; i < b.length; i++) {
        const e0 = b.t0[i];
        const e1 = b.t1[i];
        if (e1 === OPEN_T1) {
          while (k < open.length && open[k] < i) k++;
          if (k >= open.length || open[k] !== i) continue; // its closed twin wins
          emitOpen(k, i);
        } else if (overlaps(e0, e1)) emit(b, i, e0, e1);
      }
    } else {
      for (let k = 0; k < open.length; k++) emitOpen(k, open[k]);
    }
  }

  const meta = store.meta();
  if (meta !== null && (t0 === null || t0 <= meta.start_ts)) {
    const first = new Map<string, PhaseRow>();
    for (const r of rows) {
      const k = `${r.node}:${r.gpu}`;
      const f = first.get(k);
      if (f === undefined || r.t0 < f.t0) first.set(k, r);
    }
    const start = meta.start_ts;
    for (const f of first.values()) {
      if (f.t0 > start && overlaps(start, f.t0)) {
        rows.push({ name: INITIALIZE_PHASE, t0: start, t1: f.t0, node: f.node, gpu: f.gpu, rank: -1, role: 'derived' });
      }
    }
  }

  return rows.sort((a, b) => compareLanes(a, b) || a.t0 - b.t0);
}

const EMPTY = new Int32Array(0);
const NO_ENDS = new Float64Array(0);

/** Per block, its live open markers' rows (ascending) and where each one ends (`ends[k]` for `live[k]`; NaN: nowhere yet). */
interface LiveMarkers {
  live: Int32Array[];
  ends: Float64Array[];
}

const resolved = new WeakMap<object, { sig: string; markers: LiveMarkers }[]>();

/**
 * Per block, the rows of open markers without a closed twin (same node, rank, name and exact t0)
 * among `blocks`, ascending, each with the start of the next phase among `blocks` that it cannot outlast
 * (`openMarkerEnds`). Cached per store for the last few block sets (blocks only grow, so keys + lengths
 * identify the answer).
 */
function liveOpenMarkers(store: object, blocks: readonly PhaseBlock[]): LiveMarkers {
  const sig = blocks.map((b) => `${b.key}:${b.length}`).join(',');
  let memo = resolved.get(store);
  if (memo === undefined) resolved.set(store, (memo = []));
  const hit = memo.find((m) => m.sig === sig);
  if (hit !== undefined) return hit.markers;
  // open markers in a hash table on their t0's bits (typed arrays: no map keyed on floats, no sort)
  let opens = 0;
  for (const b of blocks) opens += b.openCount;
  const openBlock = new Int32Array(opens);
  const openRow = new Int32Array(opens);
  const table = new StampTable(opens);
  let n = 0;
  for (let bi = 0; bi < blocks.length; bi++) {
    const b = blocks[bi];
    if (b.openCount === 0) continue;
    for (let i = 0; i < b.length && n < opens; i++) {
      if (b.t1[i] !== OPEN_T1) continue;
      openBlock[n] = bi;
      openRow[n] = i;
      table.add(b.t0[i], n++);
    }
  }
  const cancelled: (Uint8Array | null)[] = blocks.map((b) => (b.openCount === 0 ? null : new Uint8Array(b.length)));
  if (n > 0) {
    for (const b of blocks) {
      const t0 = b.t0;
      const t1 = b.t1;
      for (let i = 0; i < b.length; i++) {
        if (t1[i] === OPEN_T1) continue;
        // a marker's closed twin starts when it did, on the same node and rank, with the same name
        for (let k = table.first(t0[i]); k >= 0; k = table.next[k]) {
          const ob = blocks[openBlock[k]];
          const oi = openRow[k];
          if (ob.node[oi] === b.node[i] && ob.rank[oi] === b.rank[i] && ob.name[oi] === b.name[i]) cancelled[openBlock[k]]![oi] = 1;
        }
      }
    }
  }
  const live = blocks.map((b, bi) => {
    const c = cancelled[bi];
    if (c === null) return EMPTY;
    const rows: number[] = [];
    for (let i = 0; i < b.length; i++) if (b.t1[i] === OPEN_T1 && c[i] === 0) rows.push(i);
    return Int32Array.from(rows);
  });
  const markers = { live, ends: openMarkerEnds(blocks, live) };
  memo.push({ sig, markers });
  if (memo.length > 8) memo.shift();
  return markers;
}

/**
 * Where each live open marker ends: the earliest start, after its own, of a phase of the same node and rank
 * on one of its GPUs (a GPU-less marker, e.g. the rollout manager's: of the same node, rank and role), or NaN.
 * The process that opened it had moved on by then, so it was not running any more.
 */
function openMarkerEnds(blocks: readonly PhaseBlock[], live: readonly Int32Array[]): Float64Array[] {
  interface Marker {
    t0: number;
    role: number;
    /** Its GPUs (empty: GPU-less). */
    gpus: number[];
    end: number;
  }
  // markers by node id, then rank: the few a row is compared with
  const byNode = new Map<number, Map<number, Marker[]>>();
  const found: Marker[][] = blocks.map((b, bi) => {
    const rows = live[bi];
    const starts = rows.length > 0 ? b.gpuStart : null;
    return Array.from(rows, (i) => {
      const m: Marker = { t0: b.t0[i], role: b.role[i], gpus: Array.from(b.gpuList.subarray(starts![i], starts![i + 1])), end: Infinity };
      let ranks = byNode.get(b.node[i]);
      if (ranks === undefined) byNode.set(b.node[i], (ranks = new Map()));
      const list = ranks.get(b.rank[i]);
      if (list === undefined) ranks.set(b.rank[i], [m]);
      else list.push(m);
      return m;
    });
  });
  if (byNode.size === 0) return blocks.map(() => NO_ENDS);
  for (const b of blocks) {
    const { node, rank, t0, role } = b;
    let starts: Uint32Array | null = null;
    let gpuList: Int32Array | null = null;
    for (let j = 0; j < b.length; j++) {
      const list = byNode.get(node[j])?.get(rank[j]);
      if (list === undefined) continue;
      const s = t0[j];
      for (const m of list) {
        if (!(s > m.t0 && s < m.end)) continue;
        if (m.gpus.length === 0) {
          if (role[j] === m.role) m.end = s;
          continue;
        }
        starts ??= b.gpuStart;
        gpuList ??= b.gpuList;
        for (let g = starts[j]; g < starts[j + 1]; g++) {
          if (m.gpus.includes(gpuList[g])) {
            m.end = s;
            break;
          }
        }
      }
    }
  }
  return found.map((ms) => (ms.length === 0 ? NO_ENDS : Float64Array.from(ms, (m) => (m.end === Infinity ? NaN : m.end))));
}

/** Per topology window, the lanes its engines cover (sorted), or for GPU-less engines every known lane on their hosts. */
function expansionWindows(windows: TopologyWindow[], laneIndex: readonly LaneEntry[]): { t0: number; t1: number | null; lanes: { node: string; gpu: number }[] }[] {
  return windows.map((w) => {
    const covered = new Map<string, { node: string; gpu: number }>();
    for (const e of w.engines) for (const [node, gpu] of e.gpus) covered.set(`${node}:${gpu}`, { node, gpu });
    if (covered.size === 0) {
      const hosts = new Set(w.engines.map((e) => hostOf(e.addr)));
      for (const l of laneIndex) if (hosts.has(l.node)) covered.set(`${l.node}:${l.gpu}`, { node: l.node, gpu: l.gpu });
    }
    return { t0: w.t0, t1: w.t1, lanes: [...covered.values()].sort(compareLanes) };
  });
}

/** `addr.split("//")[-1].split(":")[0]`. */
function hostOf(addr: string): string {
  const parts = addr.split('//');
  return parts[parts.length - 1].split(':')[0];
}

/** Entries keyed by a timestamp compared with `===` (so 0 and -0 are one key, NaN none): open addressing on the stamp's bits. */
class StampTable {
  private readonly keys: Float64Array;
  /** The newest entry of each slot's key (-1: empty slot); `next[entry]` the one added before it. */
  private readonly heads: Int32Array;
  readonly next: Int32Array;
  private readonly mask: number;
  private readonly bits = new Float64Array(1);
  private readonly words = new Uint32Array(this.bits.buffer);

  constructor(entries: number) {
    let cap = 16;
    while (cap < entries * 2) cap *= 2;
    this.keys = new Float64Array(cap);
    this.heads = new Int32Array(cap).fill(-1);
    this.next = new Int32Array(Math.max(1, entries));
    this.mask = cap - 1;
  }

  private slot(t: number): number {
    this.bits[0] = t + 0; // -0 hashes as 0
    let s = Math.imul(this.words[0] ^ Math.imul(this.words[1], 0x9e3779b1), 0x85ebca6b) >>> 0;
    for (s &= this.mask; this.heads[s] !== -1 && this.keys[s] !== t; s = (s + 1) & this.mask);
    return s;
  }

  add(t: number, entry: number): void {
    if (t !== t) {
      this.next[entry] = -1; // NaN equals nothing: never found
      return;
    }
    const s = this.slot(t);
    this.keys[s] = t;
    this.next[entry] = this.heads[s];
    this.heads[s] = entry;
  }

  /** The newest entry keyed `t`, or -1. */
  first(t: number): number {
    return t !== t ? -1 : this.heads[this.slot(t)];
  }
}
