// Decoded records kept by the memory they take, not by how many: one step of 4,096 samples weighs what
// forty small ones do, so a count either thrashes on big steps or overflows memory on them.

/**
 * Roughly the bytes `value` takes on the heap: typed arrays by their buffers, strings by their length, an
 * object or array by its slots; each object and buffer counted once however often it is referenced.
 */
export function approxBytes(value: unknown): number {
  const seen = new Set<object>();
  const stack: unknown[] = [value];
  let bytes = 0;
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v === 'string') {
      bytes += 16 + v.length;
      continue;
    }
    if (typeof v === 'bigint') {
      bytes += 16;
      continue;
    }
    if (v === null || typeof v !== 'object') {
      bytes += 8;
      continue;
    }
    if (seen.has(v)) {
      bytes += 8;
      continue;
    }
    seen.add(v);
    if (ArrayBuffer.isView(v)) {
      bytes += 64;
      if (!seen.has(v.buffer)) {
        seen.add(v.buffer);
        bytes += v.buffer.byteLength;
      }
      continue;
    }
    if (v instanceof ArrayBuffer) {
      bytes += v.byteLength;
      continue;
    }
    if (v instanceof Map) {
      bytes += 32 + 24 * v.size;
      for (const [k, x] of v) stack.push(k, x);
      continue;
    }
    if (v instanceof Set) {
      bytes += 32 + 16 * v.size;
      for (const x of v) stack.push(x);
      continue;
    }
    if (Array.isArray(v)) {
      bytes += 16;
      for (const x of v) stack.push(x);
      continue;
    }
    bytes += 24;
    for (const key of Object.keys(v)) stack.push((v as Record<string, unknown>)[key]);
  }
  return bytes;
}

/**
 * About what `approxBytes` would give for an array of like items, weighing `sampled` of them (all of them when
 * there are no more): one from each of `sampled` equal stretches of it, at a place that moves from stretch to
 * stretch (a fixed place would see the same member of every group of a step). A step's thousands of records in
 * about a millisecond.
 */
export function approxListBytes(items: readonly unknown[], sampled = 256): number {
  const n = items.length;
  if (n <= sampled) return approxBytes(items);
  let bytes = 0;
  for (let k = 0; k < sampled; k++) {
    const at = ((k * 0.6180339887498949) % 1) + k;
    bytes += approxBytes(items[Math.floor((at * n) / sampled)]) + 8;
  }
  return 16 + Math.round((bytes * n) / sampled);
}

/**
 * A least-recently-used map within a byte budget (each value weighed once, when set) and, optionally, a
 * count; a value heavier than the whole budget is not kept.
 */
export class ByteBudgetLru<K, V> {
  private readonly map = new Map<K, { value: V; bytes: number }>();
  private total = 0;

  constructor(
    readonly budget: number,
    private readonly weigh: (value: V) => number = approxBytes,
    readonly maxCount = Infinity,
  ) {}

  get(key: K): V | undefined {
    const e = this.map.get(key);
    if (e === undefined) return undefined;
    this.map.delete(key);
    this.map.set(key, e);
    return e.value;
  }

  set(key: K, value: V): void {
    this.delete(key);
    const bytes = this.weigh(value);
    if (bytes > this.budget) return; // it would push out everything else and still not fit
    this.map.set(key, { value, bytes });
    this.total += bytes;
    for (const [k, e] of this.map) {
      if (this.total <= this.budget && this.map.size <= this.maxCount) break;
      this.map.delete(k);
      this.total -= e.bytes;
    }
  }

  delete(key: K): void {
    const e = this.map.get(key);
    if (e === undefined) return;
    this.map.delete(key);
    this.total -= e.bytes;
  }

  clear(): void {
    this.map.clear();
    this.total = 0;
  }

  /** Bytes the kept values weigh together. */
  get bytes(): number {
    return this.total;
  }

  get size(): number {
    return this.map.size;
  }
}
