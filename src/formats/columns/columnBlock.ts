// The one growable column base every partition block is built on: a block declares its columns as a
// schema (name → typed-array type) and gets amortised growth, live views, trimming, thread hand-off
// (`columns()` / `adoptColumns`) and its resident size from here.

export type Column = Float64Array | Uint32Array | Int32Array | Uint16Array | Uint8Array;
export type ColumnType = Float64ArrayConstructor | Uint32ArrayConstructor | Int32ArrayConstructor | Uint16ArrayConstructor | Uint8ArrayConstructor;
/** Column name → typed-array constructor. */
export type ColumnSchema = Readonly<Record<string, ColumnType>>;
export type ColumnsOf<S extends ColumnSchema> = { [K in keyof S]: InstanceType<S[K]> };

/** A new column of `col`'s type with room for `capacity` values, holding `col`'s first `n`. */
export function resized<T extends Column>(col: T, n: number, capacity: number): T {
  const out = new (col.constructor as new (length: number) => T)(capacity);
  out.set(col.subarray(0, Math.min(n, capacity)));
  return out;
}

function allocate<S extends ColumnSchema>(schema: S, capacity: number): ColumnsOf<S> {
  const out = {} as Record<string, Column>;
  for (const [name, Type] of Object.entries(schema)) out[name] = new Type(capacity);
  return out as ColumnsOf<S>;
}

/** A block's columns as handed between threads: every column trimmed to `length` rows. */
export interface BlockColumns<S extends ColumnSchema> {
  length: number;
  tsMin: number;
  tsMax: number;
  cols: ColumnsOf<S>;
}

/**
 * Rows of one partition file held column by column. `key` = `YYYYMMDD_HH` (or `legacy` for the flat v1
 * file), `[lo, hi)` its hour bounds (infinite for legacy). Rows are appended at the end only; columns
 * double when full and drop spare room on `trim()`. Subclasses name their columns in a schema and may
 * switch to a wider one (`retype`) when a value does not fit the compact types.
 */
export abstract class ColumnBlock<S extends ColumnSchema> {
  readonly key: string;
  readonly lo: number;
  readonly hi: number;
  length = 0;
  /** Smallest / largest timestamp in the block (NaN when empty). */
  tsMin = NaN;
  tsMax = NaN;
  /** Set when the block was read selectively (lanes / metrics, newline-separated): it holds only those rows. */
  view: string | null = null;
  protected schema: S;
  protected cols: ColumnsOf<S>;
  /** Rows the columns have room for. */
  protected cap: number;
  private liveCache: { n: number; cols: Partial<ColumnsOf<S>> } = { n: -1, cols: {} };

  protected constructor(schema: S, key: string, lo: number, hi: number, capacity: number) {
    this.schema = schema;
    this.key = key;
    this.lo = lo;
    this.hi = hi;
    this.cap = Math.max(16, capacity);
    this.cols = allocate(schema, this.cap);
  }

  /** Makes room for `extra` more rows (amortised doubling); call before writing rows past `length`. */
  protected reserve(extra: number): void {
    const need = this.length + extra;
    if (need > this.cap) this.setCapacity(Math.max(need, this.cap * 2, 16));
  }

  private setCapacity(cap: number): void {
    const n = this.length;
    const next = {} as Record<string, Column>;
    for (const [name, col] of Object.entries(this.cols) as [string, Column][]) next[name] = resized(col, n, cap);
    this.cols = next as ColumnsOf<S>;
    this.cap = cap;
    this.liveCache = { n: -1, cols: {} };
  }

  /** Column `name` over the live rows `[0, length)` (a view, cached per length). */
  protected live<K extends keyof S>(name: K): ColumnsOf<S>[K] {
    const n = this.length;
    if (this.liveCache.n !== n) this.liveCache = { n, cols: {} };
    const v = this.liveCache.cols[name];
    if (v !== undefined) return v;
    return (this.liveCache.cols[name] = (this.cols[name] as Column).subarray(0, n) as ColumnsOf<S>[K]);
  }

  /** Widens every value of the live rows into another schema (`convert` fills the new columns from the old). */
  protected retype<T extends ColumnSchema>(schema: T, convert: (from: ColumnsOf<S>, to: ColumnsOf<T>, n: number) => void): void {
    const next = allocate(schema, this.cap);
    convert(this.cols, next, this.length);
    (this as unknown as ColumnBlock<T>).schema = schema;
    (this as unknown as ColumnBlock<T>).cols = next;
    this.liveCache = { n: -1, cols: {} };
  }

  /** Widens the block's time bounds by one timestamp. */
  protected noteTs(t: number): void {
    if (!(t >= this.tsMin)) this.tsMin = t;
    if (!(t <= this.tsMax)) this.tsMax = t;
  }

  /** Drops spare capacity (after a cold fill of a closed hour). */
  trim(): void {
    if (this.cap > this.length + 16) this.setCapacity(Math.max(16, this.length));
  }

  /**
   * Room for `rows` rows at once (a cold fill that has estimated its file's rows), instead of doubling
   * its way there with a copy at each step.
   */
  expectRows(rows: number): void {
    if (rows > this.cap) this.setCapacity(Math.ceil(rows));
  }

  /**
   * The columns over the live rows (moved out to another thread, or adopted from one): trimmed, or with
   * `trim` false views over the spare room too (read once and dropped, no copy is worth making).
   */
  columns(trim = true): BlockColumns<S> {
    if (trim) this.trim();
    const cols = {} as Record<string, Column>;
    for (const [name, col] of Object.entries(this.cols) as [string, Column][]) cols[name] = col.length === this.length ? col : col.subarray(0, this.length);
    return { length: this.length, tsMin: this.tsMin, tsMax: this.tsMax, cols: cols as ColumnsOf<S> };
  }

  /** Takes over columns parsed elsewhere (their schema must be one this block knows). */
  protected adoptColumns(schema: S, c: BlockColumns<S>): void {
    this.schema = schema;
    this.cols = c.cols;
    this.length = c.length;
    this.tsMin = c.tsMin;
    this.tsMax = c.tsMax;
    this.cap = c.length;
    this.liveCache = { n: -1, cols: {} };
  }

  /** Appends the rows of `other` (same schema), as if they had been parsed into this block after its own. */
  protected appendRows(other: ColumnBlock<S>): void {
    this.reserve(other.length);
    for (const [name, col] of Object.entries(this.cols) as [string, Column][]) col.set((other.cols[name] as Column).subarray(0, other.length), this.length);
    this.length += other.length;
    if (other.length > 0) {
      this.noteTs(other.tsMin);
      this.noteTs(other.tsMax);
    }
  }

  /** The buffers of `columns()`, for a transfer list. */
  static transferables(c: BlockColumns<ColumnSchema>): ArrayBuffer[] {
    return Object.values(c.cols).map((col) => col.buffer as ArrayBuffer);
  }

  /** Resident bytes of the columns (capacity, not just the live rows). */
  bytesResident(): number {
    let b = 0;
    for (const col of Object.values(this.cols) as Column[]) b += col.byteLength;
    return b;
  }
}

/** One growable typed array outside a block's rows (e.g. the flattened GPU lists of phases). */
export class GrowableColumn<T extends Column = Column> {
  length = 0;
  private data: T;

  constructor(Type: new (n: number) => T, capacity = 16) {
    this.data = new Type(Math.max(16, capacity));
  }

  push(v: number): void {
    if (this.length === this.data.length) this.data = resized(this.data, this.length, this.length * 2);
    this.data[this.length++] = v;
  }

  /** The backing array (valid up to `length`). */
  get values(): T {
    return this.data;
  }

  trim(): void {
    if (this.data.length > this.length + 16) this.data = resized(this.data, this.length, Math.max(16, this.length));
  }

  /** Takes over an array filled elsewhere. */
  adopt(values: T, length: number): void {
    this.data = values;
    this.length = length;
  }

  get byteLength(): number {
    return this.data.byteLength;
  }
}
