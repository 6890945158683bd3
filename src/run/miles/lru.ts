// A least-recently-used map with a fixed capacity, calling `onEvict` for each value it drops.

export class Lru<K, V> {
  private readonly map = new Map<K, V>();

  constructor(
    readonly capacity: number,
    private readonly onEvict?: (value: V, key: K) => void,
  ) {}

  get(key: K): V | undefined {
    const v = this.map.get(key);
    if (v !== undefined) {
      this.map.delete(key);
      this.map.set(key, v);
    }
    return v;
  }

  set(key: K, value: V): void {
    const old = this.map.get(key);
    this.map.delete(key);
    if (old !== undefined && old !== value) this.onEvict?.(old, key);
    this.map.set(key, value);
    while (this.map.size > Math.max(0, this.capacity)) {
      const [k, v] = this.map.entries().next().value as [K, V];
      this.map.delete(k);
      this.onEvict?.(v, k);
    }
  }

  delete(key: K): void {
    const v = this.map.get(key);
    if (v === undefined) return;
    this.map.delete(key);
    this.onEvict?.(v, key);
  }

  clear(): void {
    for (const k of [...this.map.keys()]) this.delete(k);
  }

  /** The values, least recently used first (not counted as a use). */
  values(): IterableIterator<V> {
    return this.map.values();
  }

  get size(): number {
    return this.map.size;
  }
}
