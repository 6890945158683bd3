// Interned strings and ids shared by every hour block of a run, so columns hold small integers.

/** Strings ↔ dense integer ids (first seen = 0). */
export class StringTable {
  private readonly ids = new Map<string, number>();
  private readonly strs: string[] = [];

  id(s: string): number {
    let id = this.ids.get(s);
    if (id === undefined) {
      id = this.strs.length;
      this.strs.push(s);
      this.ids.set(s, id);
    }
    return id;
  }

  /** The id of `s`, or -1 when it was never interned. */
  find(s: string): number {
    return this.ids.get(s) ?? -1;
  }

  str(id: number): string {
    return this.strs[id];
  }

  get size(): number {
    return this.strs.length;
  }
}

/**
 * `(node, gpu)` ↔ dense lane ids (u16 in blocks, so up to 65,536 distinct GPUs a run). Not the lane
 * *index*: that is the sorted position.
 */
export class LaneTable {
  private readonly ids = new Map<string, number>();
  private readonly nodes: string[] = [];
  private readonly gpus: number[] = [];
  private readonly keys: string[] = [];

  id(node: string, gpu: number): number {
    const key = `${node}:${gpu}`;
    let id = this.ids.get(key);
    if (id === undefined) {
      id = this.keys.length;
      this.keys.push(key);
      this.nodes.push(node);
      this.gpus.push(gpu);
      this.ids.set(key, id);
    }
    return id;
  }

  /** The id of `(node, gpu)`, or -1 when no row of it was ever read. */
  find(node: string, gpu: number): number {
    return this.ids.get(`${node}:${gpu}`) ?? -1;
  }

  node(id: number): string {
    return this.nodes[id];
  }

  gpu(id: number): number {
    return this.gpus[id];
  }

  /** `"<node>:<gpu>"`. */
  key(id: number): string {
    return this.keys[id];
  }

  /** `[node, gpu]` of every lane id, in id order (the lane table a persisted parse or rollup carries). */
  places(): [string, number][] {
    return Array.from({ length: this.size }, (_, id) => [this.node(id), this.gpu(id)]);
  }

  get size(): number {
    return this.keys.length;
  }
}

/** One engine series identity `(addr, metric, labels)` ↔ a dense id. */
export interface EngineSeriesKey {
  addr: string;
  metric: string;
  /** Compact JSON of the labels object in file key order (`JSON.stringify(labels)`), e.g. `{}`. */
  labelsJson: string;
  addrId: number;
  metricId: number;
  labelsId: number;
}

export class EngineSeriesTable {
  /** Engine addresses, metric names and labels JSON strings, each in their own id space. */
  readonly addrs = new StringTable();
  readonly metrics = new StringTable();
  readonly labels = new StringTable();
  private readonly ids = new Map<string, number>();
  private readonly entries: EngineSeriesKey[] = [];

  id(addr: string, metric: string, labelsJson: string): number {
    const k = `${addr}\u0000${metric}\u0000${labelsJson}`;
    let id = this.ids.get(k);
    if (id === undefined) {
      id = this.entries.length;
      this.entries.push({
        addr,
        metric,
        labelsJson,
        addrId: this.addrs.id(addr),
        metricId: this.metrics.id(metric),
        labelsId: this.labels.id(labelsJson),
      });
      this.ids.set(k, id);
    }
    return id;
  }

  key(id: number): EngineSeriesKey {
    return this.entries[id];
  }

  get size(): number {
    return this.entries.length;
  }

  /** Every series as a parse hands it over: `[addr, metric, labelsJson]` by series id. */
  rows(): [string, string, string][] {
    return this.entries.map((k) => [k.addr, k.metric, k.labelsJson]);
  }
}

/**
 * Byte-slice interning without building a string per row: FNV-1a over the bytes, verified by comparison.
 * `find` returns the id of a byte range (or -1); `add` registers a new one.
 */
export class ByteSliceMap {
  private readonly buckets = new Map<number, { bytes: Uint8Array; id: number }[]>();
  private lastHash = 0;

  find(buf: Uint8Array, start: number, end: number): number {
    let h = 0x811c9dc5;
    for (let i = start; i < end; i++) h = Math.imul(h ^ buf[i], 0x01000193);
    this.lastHash = h;
    const list = this.buckets.get(h);
    if (list === undefined) return -1;
    const n = end - start;
    outer: for (let k = 0; k < list.length; k++) {
      const e = list[k];
      const b = e.bytes;
      if (b.length !== n) continue;
      for (let i = 0; i < n; i++) if (b[i] !== buf[start + i]) continue outer;
      return e.id;
    }
    return -1;
  }

  /** Registers `buf[start, end)` as `id`; call right after a `find` of the same range returned -1. */
  add(buf: Uint8Array, start: number, end: number, id: number): void {
    const entry = { bytes: Uint8Array.prototype.slice.call(buf, start, end) as Uint8Array, id };
    const list = this.buckets.get(this.lastHash);
    if (list === undefined) this.buckets.set(this.lastHash, [entry]);
    else list.push(entry);
  }
}
