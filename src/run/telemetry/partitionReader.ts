// Lazy hourly partitions of one stream: `{stream}/{YYYYMMDD_HH}.jsonl` (+ the legacy flat file),
// parsed on first use into blocks, tailed by byte offset, kept in an LRU.
import { join } from 'node:path';
import type { TelemetryIo } from './io.ts';
import { nodeIo } from './io.ts';
import type { BudgetOwner, MemoryBudget } from './memoryBudget.ts';
import type { CachedPartition, PartitionCache, PersistedParses } from './partitionCache.ts';
import type { FileStat } from './io.ts';
import type { BadLine } from './lineScan.ts';
import { parsePythonJson } from './lineScan.ts';
import type { ParsedColumns, ParseResult } from './parseJob.ts';
import type { ParsePool } from './parsePool.ts';
import type { PartitionedStream } from './records.ts';
import { flatFile, hourKey, hourStart, partitionFile, partitionKeyOf } from '../../formats/dashboard/layout.ts';
import { OPEN_T1, PARTITION_CACHE_BLOCKS } from './records.ts';

/** What every block type offers the reader. */
export interface HourBlock {
  readonly key: string;
  readonly lo: number;
  readonly hi: number;
  readonly length: number;
  tsMin: number;
  tsMax: number;
  /** The view a selectively read block holds (null = every row of the file). */
  view?: string | null;
  trim(): void;
  bytesResident(): number;
}

/** How one stream's blocks are made and filled. */
export interface BlockKind<B extends HourBlock> {
  /** Typical bytes per line, to size a block before a cold fill. */
  bytesPerRow: number;
  create(key: string, lo: number, hi: number, rowsHint: number): B;
  /** Parses complete lines `buf[start, end)` into `block`; returns the number of lines consumed. */
  parse(buf: Uint8Array, start: number, end: number, block: B, firstLine: number, bad: BadLine): number;
  /**
   * Optional selective parse for a named subset (a "view", e.g. some engine metrics): parses only the
   * lines of `buf[start, end)` the view selects. Returns the number of lines walked (0 when it does not
   * count them), or -1 when the bytes do not allow it (the reader then falls back to the whole block).
   */
  parseView?(view: string, buf: Uint8Array, start: number, end: number, block: B, firstLine: number, bad: BadLine): number;
  /** A block over columns another thread parsed (see parseJob.ts); needed to share cold parses with a pool. */
  adopt?(key: string, lo: number, hi: number, data: ParsedColumns): B;
  /** A whole block as the columns a parse thread would hand over (what the partition cache persists). */
  export?(block: B): ParsedColumns;
  /**
   * Distinct views of one file read selectively before a further one reads the whole file instead
   * (which then serves every view): a few asks are cheaper as views, many are not. Default: no limit.
   */
  viewsBeforeWhole?: number;
}

export interface PartitionFile {
  /** `YYYYMMDD_HH`, or `legacy` for the flat v1 file `{stream}.jsonl`. */
  key: string;
  path: string;
  /** Path relative to the `dashboard/` directory (used in warnings). */
  rel: string;
  /** Hour bounds `[lo, hi)`; infinite for the legacy file. */
  lo: number;
  hi: number;
  /** Size at the last listing. */
  size: number;
}

interface CacheEntry<B> {
  block: B;
  offset: number;
  lines: number;
  /** File key this entry reads. */
  file: string;
  /** The view it holds (`null` = every line). */
  view: string | null;
  /** Inode of the file when it was first read (a replaced file is read again). */
  ino: number;
  /** The view's names, split once (for covering lookups). */
  names?: Set<string>;
}

export class PartitionReader<B extends HourBlock> implements BudgetOwner {
  readonly stream: PartitionedStream;
  private readonly dir: string;
  private readonly kind: BlockKind<B>;
  private readonly capacity: number;
  private readonly onBad: (file: string, line: number, message: string) => void;
  private readonly badLines = new Map<string, Map<number, string>>();
  private listing: PartitionFile[] = [];
  private readonly cache = new Map<string, CacheEntry<B>>();
  private firstStamps = new Map<string, number[]>();
  private lastStamps: { path: string; size: number; stamps: number[] } | null = null;
  /** Rows parsed from disk so far (re-parses after eviction count again). */
  rowsParsed = 0;
  /** Files read (cold or tail) so far; lets tests check laziness. */
  fills = 0;
  /** Cold files parsed by worker threads so far. */
  workerFills = 0;
  /** Where the worker threads that take a share of cold multi-file reads come from (started on first use); null: the main thread reads alone. */
  poolSource: (() => ParsePool | null) | null = null;

  get pool(): ParsePool | null {
    return this.poolSource?.() ?? null;
  }
  /** Where whole parses persist across processes (null: parse every cold file). */
  diskCache: PartitionCache | null = null;
  /** The parses the collector wrote beside the partitions (read only; null: none are looked for). */
  runParses: PersistedParses | null = null;
  /** The byte budget shared with the store's other streams (null: only the block count limits). */
  budget: MemoryBudget | null = null;
  /** Cold files served by the partition cache so far. */
  cacheFills = 0;
  /** Called after each chunk this thread parses during a shared cold read (hands work to idle workers). */
  private betweenChunks: (() => void) | null = null;

  constructor(
    dashboardDir: string,
    stream: PartitionedStream,
    kind: BlockKind<B>,
    onBad: (file: string, line: number, message: string) => void,
    capacity = PARTITION_CACHE_BLOCKS,
    private readonly io: TelemetryIo = nodeIo,
  ) {
    this.dir = dashboardDir;
    this.stream = stream;
    this.kind = kind;
    // every skipped line is remembered per file, so a persisted parse reports them again when loaded
    this.onBad = (file, line, message) => {
      let lines = this.badLines.get(file);
      if (lines === undefined) this.badLines.set(file, (lines = new Map()));
      lines.set(line, message);
      onBad(file, line, message);
    };
    this.capacity = capacity;
    this.refreshListing();
  }

  /** The clock partition names are checked against (far-future hours are refused). */
  now: () => number = Date.now;

  /** Re-lists the files and their sizes; returns the files not listed before. */
  refreshListing(): PartitionFile[] {
    const before = new Set(this.listing.map((f) => f.key));
    const files: PartitionFile[] = [];
    const legacy = join(this.dir, flatFile(this.stream));
    const legacyRefused = this.io.refusal?.(legacy) ?? null;
    if (legacyRefused !== null) this.onBad(flatFile(this.stream), 0, legacyRefused);
    const legacySize = this.io.stat(legacy)?.size ?? null;
    if (legacySize !== null) files.push({ key: 'legacy', path: legacy, rel: flatFile(this.stream), lo: -Infinity, hi: Infinity, size: legacySize });
    const names = this.io.list(join(this.dir, this.stream));
    const hours: PartitionFile[] = [];
    for (const name of names) {
      const key = partitionKeyOf(name);
      if (key === null) continue;
      const rel = partitionFile(this.stream, key);
      const lo = partitionHourStart(key, this.now());
      // Only a real hour is a partition: a copy under another name (`19700112_99`, a far-future hour) would
      // be read on top of the real one, doubling its points.
      if (typeof lo === 'string') {
        this.onBad(rel, 0, `${lo}: skipped`);
        continue;
      }
      const path = join(this.dir, rel);
      const refused = this.io.refusal?.(path) ?? null;
      if (refused !== null) {
        this.onBad(rel, 0, refused);
        continue;
      }
      const size = this.io.stat(path)?.size ?? null;
      if (size === null) continue;
      hours.push({ key, path, rel, lo, hi: lo + 3600, size });
    }
    hours.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    files.push(...hours);
    this.listing = files;
    return files.filter((f) => !before.has(f.key));
  }

  files(): readonly PartitionFile[] {
    return this.listing;
  }

  hasData(): boolean {
    return this.listing.some((f) => f.size > 0);
  }

  /** Blocks of the files overlapping `[t0, t1]` (legacy always), legacy first then hours ascending; rows unfiltered. */
  window(t0?: number | null, t1?: number | null, view: string | null = null): B[] {
    const files = this.overlapping(t0, t1);
    if (this.pool !== null && this.pool.size > 0) this.prefetch(files, () => view);
    const out: B[] = [];
    for (const f of files) {
      const b = view === null ? this.block(f) : this.viewBlock(f, view);
      if (b.length > 0) out.push(b);
    }
    return out;
  }

  /**
   * The same blocks as `window`, handed out one at a time for a single pass (a whole-run answer): cold
   * files are read a few at a time (one per parse thread), so what stays resident is bounded by the
   * memory budget rather than by the run's length.
   */
  *pass(t0?: number | null, t1?: number | null, view: string | null = null): Generator<B> {
    const files = this.overlapping(t0, t1);
    const batch = (this.pool?.size ?? 0) + 1;
    for (let i = 0; i < files.length; i += batch) {
      const group = files.slice(i, i + batch);
      if (this.pool !== null && this.pool.size > 0) this.prefetch(group, () => view);
      for (const f of group) {
        const b = view === null ? this.block(f) : this.viewBlock(f, view);
        if (b.length > 0) yield b;
      }
    }
  }

  /** The files overlapping `[t0, t1]` (legacy always), legacy first then hours ascending. */
  overlappingFiles(t0?: number | null, t1?: number | null): PartitionFile[] {
    return this.overlapping(t0, t1);
  }

  /**
   * The complete lines of `f` from byte `offset` parsed into a new block that is not kept, with the byte
   * span of each row's line and where the lines end (a rollup brought up to date folds them in).
   * Lines that do not parse are left out; their warnings come from the file's own read.
   */
  parseTail(f: PartitionFile, offset: number): { block: B; lines: { start: Float64Array; end: Float64Array }; end: number } {
    const block = this.kind.create(f.key, f.lo, f.hi, 1024);
    const start: number[] = [];
    const end: number[] = [];
    const r = this.io.readLines(f.path, offset, (chunk) => {
      for (let p = 0; p < chunk.end; ) {
        const nl = chunk.buf.indexOf(10, p);
        const before = block.length;
        this.kind.parse(chunk.buf, p, nl + 1, block, 0, () => {});
        if (block.length > before) {
          start.push(chunk.offset + p);
          end.push(chunk.offset + nl + 1);
        }
        p = nl + 1;
      }
    });
    block.trim();
    return { block, lines: { start: Float64Array.from(start), end: Float64Array.from(end) }, end: r.offset };
  }

  /** Bytes `[start, end)` of `f` (whole lines) parsed into a new block that is not kept. */
  parseRange(f: PartitionFile, start: number, end: number): B {
    const buf = this.io.readRange(f.path, start, end - start);
    const block = this.kind.create(f.key, f.lo, f.hi, Math.ceil(buf.length / this.kind.bytesPerRow));
    const last = buf.lastIndexOf(10);
    if (last >= 0) this.kind.parse(buf, 0, last + 1, block, 0, () => {});
    block.trim();
    return block;
  }

  /** The whole block of `key` if it is resident (no read, no LRU change), else null. */
  residentBlock(key: string): B | null {
    return this.cache.get(key)?.block ?? null;
  }

  /** Bytes of the file the resident whole block of `key` was parsed to, or null when it is not resident. */
  parsedOffset(key: string): number | null {
    return this.cache.get(key)?.offset ?? null;
  }

  /**
   * While set, the only files reads may touch (partition keys): a partial answer reads the hours already
   * folded and leaves the others out, rather than parsing them.
   */
  hourFilter: ReadonlySet<string> | null = null;

  /** The files overlapping `[t0, t1]` (legacy always), within `hourFilter` when one is set. */
  private overlapping(t0?: number | null, t1?: number | null): PartitionFile[] {
    const only = this.hourFilter;
    return this.listing.filter((f) => (only === null || only.has(f.key)) && !((t0 != null && f.hi <= t0) || (t1 != null && f.lo > t1) || (t1 != null && f.lo === t1 && this.startsAfter(f, t1))));
  }

  /**
   * Parses the cold files among `files` whole, on the parse threads and this thread at once (as `window`
   * does before handing its blocks out), for a caller that will ask for their blocks one at a time next.
   */
  prefetchWhole(files: readonly PartitionFile[]): void {
    if (this.pool !== null && this.pool.size > 0) this.prefetch(files, () => null);
  }

  /** Parse threads that can read files beside this one (0 without a pool). */
  get parallelism(): number {
    return this.pool?.size ?? 0;
  }

  /**
   * Reads several selective windows ahead at once (see `window`): each file overlapping any of them is
   * read once, for the union of the names asked of it, with every parse thread sharing the files. Later
   * `window` calls for any of these views are then served by the resident blocks.
   */
  readAhead(asks: readonly { t0?: number | null; t1?: number | null; view: string }[]): void {
    if (this.kind.parseView === undefined) return;
    const names = new Map<PartitionFile, Set<string>>();
    for (const a of asks) {
      for (const f of this.overlapping(a.t0, a.t1)) {
        let set = names.get(f);
        if (set === undefined) names.set(f, (set = new Set()));
        for (const n of a.view === '' ? [] : a.view.split('\n')) set.add(n);
      }
    }
    const views = new Map<PartitionFile, string>();
    for (const [f, set] of names) views.set(f, [...set].sort().join('\n'));
    if (this.pool !== null && this.pool.size > 0) this.prefetch([...views.keys()], (f) => views.get(f) ?? null);
    for (const [f, v] of views) this.viewBlock(f, v);
  }

  /**
   * Whether an hour file starting exactly at `t1` holds nothing at or before it: rows of an hour file are
   * stamped at or after its hour start and appended in time order, so its first line is its earliest.
   * Phases are filed by end hour (an interval in a later file can start earlier): never skipped.
   */
  private startsAfter(f: PartitionFile, t1: number): boolean {
    if (this.stream === 'phases' || f.size === 0) return false;
    const line = this.io.firstLine(f.path);
    if (line === null) return false;
    const stamps = this.stampsOf(line);
    return stamps.length > 0 && stamps[0] > t1;
  }

  /** Whether `f` already holds as many resident views as its kind reads before reading it whole. */
  private viewsSpent(f: PartitionFile): boolean {
    const limit = this.kind.viewsBeforeWhole;
    if (limit === undefined) return false;
    let n = 0;
    for (const e of this.cache.values()) if (e.file === f.key && e.view !== null) n++;
    return n >= limit;
  }

  /** A resident view of `f` holding every name of `view` (newline-separated names), most recent first. */
  private coveringView(f: PartitionFile, view: string): { key: string; e: CacheEntry<B> } | null {
    const exactKey = `${f.key}\u0000${view}`;
    const exact = this.cache.get(exactKey);
    if (exact !== undefined) return { key: exactKey, e: exact };
    let want: string[] | null = null;
    for (const [key, e] of this.cache) {
      if (e.file !== f.key || e.view === null) continue;
      want ??= view === '' ? [] : view.split('\n');
      e.names ??= new Set(e.view === '' ? [] : e.view.split('\n'));
      if (want.every((n) => e.names!.has(n))) return { key, e };
    }
    return null;
  }

  /**
   * The block of one file restricted to a view (see `BlockKind.parseView`): a resident view holding
   * every name asked for serves it; the whole block when it is resident anyway or when the view cannot
   * be read selectively.
   */
  viewBlock(f: PartitionFile, view: string): B {
    const whole = this.cache.get(f.key);
    if (whole !== undefined || this.kind.parseView === undefined) return this.block(f);
    const key = `${f.key}\u0000${view}`;
    const covering = this.coveringView(f, view);
    if (covering !== null) {
      this.cache.delete(covering.key);
      this.cache.set(covering.key, covering.e);
      this.used(covering.key, covering.e);
      return covering.e.block;
    }
    if (this.viewsSpent(f)) return this.block(f);
    const st = this.io.stat(f.path);
    const adopt = this.kind.adopt;
    const persisted = st !== null && adopt !== undefined ? this.persistedFor(f, st) : [];
    if (st !== null && adopt !== undefined && persisted.length > 0) {
      // a persisted whole parse serves the view (from its slices when the layout allows, else whole)
      let hit: CachedPartition | null = null;
      for (const p of persisted) if ((hit = p.loadView(this.stream, f.key, st, view)) !== null) break;
      if (hit === null) return this.block(f);
      const e: CacheEntry<B> = { block: adopt(f.key, f.lo, f.hi, hit.result.data), offset: hit.result.offset, lines: hit.result.lines, file: f.key, view, ino: hit.ino };
      if ('view' in e.block) e.block.view = view;
      this.cacheFills++;
      if (st.size > e.offset && !this.fillView(f, e)) return this.block(f);
      return this.keepView(key, e);
    }
    return this.coldView(f, key, view, st?.ino ?? 0);
  }

  /** A view read from the file's lines. */
  private coldView(f: PartitionFile, key: string, view: string, ino: number): B {
    const e: CacheEntry<B> = { block: this.kind.create(f.key, f.lo, f.hi, 1024), offset: 0, lines: 0, file: f.key, view, ino };
    if ('view' in e.block) e.block.view = view;
    if (!this.fillView(f, e)) return this.block(f);
    return this.keepView(key, e);
  }

  private keepView(key: string, e: CacheEntry<B>): B {
    this.cache.set(key, e);
    e.block.trim();
    this.used(key, e);
    this.evict();
    return e.block;
  }

  private fillView(f: PartitionFile, e: CacheEntry<B>): boolean {
    this.fills++;
    const before = e.block.length;
    let ok = true;
    const bad: BadLine = (line, message) => this.onBad(f.rel, line, message);
    const r = this.io.readLines(f.path, e.offset, (chunk) => {
      if (!ok) return;
      const n = this.kind.parseView!(e.view!, chunk.buf, 0, chunk.end, e.block, e.lines + 1, bad);
      if (n < 0) ok = false;
      else e.lines += n;
      this.betweenChunks?.();
    });
    if (!ok) return false;
    e.offset = r.offset;
    this.rowsParsed += e.block.length - before;
    return true;
  }

  private evict(): void {
    while (this.cache.size > this.capacity) {
      const oldest = this.cache.keys().next().value as string;
      this.drop(oldest);
    }
  }

  /** Removes a resident entry (and its place in the budget). */
  private drop(key: string): void {
    if (!this.cache.delete(key)) return;
    this.budget?.forget(this, key);
  }

  /** Records a use of a resident entry with the budget (which may drop older entries of any stream). */
  private used(key: string, e: CacheEntry<B>): void {
    this.budget?.touch(this, key, e.block.bytesResident());
  }

  /** The budget asks to drop an entry. */
  release(key: string): void {
    this.cache.delete(key);
  }

  /**
   * Parses the cold files among `files` on the pool's idle workers and this thread at once: workers
   * take the biggest files, this thread the smallest, and between its chunks it hands the next file to
   * any worker that finished (so no worker idles while files remain). Each lands in the cache exactly
   * as a serial read would have put it there; a file a worker failed on is read later on this thread.
   */
  private prefetch(files: readonly PartitionFile[], viewFor: (f: PartitionFile) => string | null): void {
    const pool = this.pool!;
    const adopt = this.kind.adopt;
    if (adopt === undefined) return;
    // Per file: read whole, or the view (unless a resident view covers it: then it is not cold).
    const viewOf = new Map<PartitionFile, string | null>();
    for (const f of files) {
      if (f.size === 0 || this.cache.has(f.key)) continue;
      // a persisted parse is read faster here than a worker parses the file
      const st = this.diskCache?.handles(this.stream) || this.runParses?.handles(this.stream) ? this.io.stat(f.path) : null;
      if (st !== null && this.persistedFor(f, st).length > 0) continue;
      const view = viewFor(f);
      if (view === null || this.kind.parseView === undefined) viewOf.set(f, null);
      else if (this.coveringView(f, view) === null) viewOf.set(f, this.viewsSpent(f) ? null : view);
    }
    const queue = [...viewOf.keys()];
    if (queue.length < 2) return;
    queue.sort((a, b) => b.size - a.size);
    const pending: { slot: number; f: PartitionFile; ino: number; done: boolean }[] = [];
    const collect = (p: (typeof pending)[number], r: ParseResult | 'failed' | null): void => {
      if (r === null) return;
      p.done = true;
      if (r !== 'failed') this.install(p.f, p.ino, r, adopt);
    };
    const feed = (): void => {
      for (const p of pending) if (!p.done) collect(p, pool.poll(p.slot));
      for (let slot = pool.idle(); slot >= 0 && queue.length > 0; slot = pool.idle()) {
        const f = queue.shift()!;
        pending.push({ slot, f, ino: this.io.stat(f.path)?.ino ?? 0, done: false });
        pool.submit(slot, { stream: this.stream, path: f.path, offset: 0, view: viewOf.get(f)!, rowsHint: Math.ceil(f.size / this.kind.bytesPerRow) });
      }
    };
    feed();
    this.betweenChunks = feed;
    try {
      while (queue.length > 0) {
        const f = queue.pop()!;
        const v = viewOf.get(f)!;
        if (v === null) this.block(f);
        else this.viewBlock(f, v);
        feed();
      }
    } finally {
      this.betweenChunks = null;
    }
    for (const p of pending) if (!p.done) collect(p, pool.wait(p.slot));
  }

  private install(f: PartitionFile, ino: number, r: ParseResult, adopt: NonNullable<BlockKind<B>['adopt']>): void {
    const key = r.view === null ? f.key : `${f.key}\u0000${r.view}`;
    if (this.cache.has(key)) return;
    // persisted before adopting: adopting maps the worker's ids onto this store's in place
    if (r.view === null) this.diskCache?.save(this.stream, f.key, ino, r);
    const block = adopt(f.key, f.lo, f.hi, r.data);
    if (r.view !== null && 'view' in block) block.view = r.view;
    for (const [line, message] of r.warnings) this.onBad(f.rel, line, message);
    const e = { block, offset: r.offset, lines: r.lines, file: f.key, view: r.view, ino };
    this.cache.set(key, e);
    if (r.view === null) for (const k of [...this.cache.keys()]) if (k.startsWith(`${f.key}\u0000`)) this.drop(k);
    if (r.offset > f.size) f.size = r.offset;
    this.fills++;
    this.workerFills++;
    this.rowsParsed += block.length;
    this.used(key, e);
    this.evict();
  }

  /** Whether the file's block is parsed and resident. */
  isCached(key: string): boolean {
    return this.cache.has(key);
  }

  cachedKeys(): string[] {
    return [...this.cache.keys()];
  }

  /**
   * The block of one file. A resident block is returned as is (appended bytes arrive through
   * `refreshCached`, i.e. `follow()`); a cold one is parsed up to the file's complete lines.
   */
  block(f: PartitionFile): B {
    let e = this.cache.get(f.key);
    if (e !== undefined) {
      this.cache.delete(f.key);
      this.cache.set(f.key, e);
      this.used(f.key, e);
      return e.block;
    }
    const st = this.io.stat(f.path);
    const size = st?.size ?? 0;
    const persisted = st !== null && this.kind.adopt !== undefined ? this.loadPersisted(f, st) : null;
    if (persisted !== null) {
      // the columns parsed by an earlier process; only bytes appended since are parsed now
      const r = persisted.result;
      for (const [line, message] of r.warnings) this.onBad(f.rel, line, message);
      e = { block: this.kind.adopt!(f.key, f.lo, f.hi, r.data), offset: r.offset, lines: r.lines, file: f.key, view: null, ino: persisted.ino };
      this.cacheFills++;
    } else {
      this.badLines.delete(f.rel);
      e = { block: this.kind.create(f.key, f.lo, f.hi, Math.ceil(size / this.kind.bytesPerRow)), offset: 0, lines: 0, file: f.key, view: null, ino: st?.ino ?? 0 };
    }
    this.cache.set(f.key, e);
    const added = this.fill(f, e);
    e.block.trim();
    if (persisted === null || added > 0) this.persist(f, e);
    // a whole block supersedes the file's views
    for (const k of [...this.cache.keys()]) if (k.startsWith(`${f.key}\u0000`)) this.drop(k);
    this.used(f.key, e);
    this.evict();
    return e.block;
  }

  /**
   * The places holding a valid persisted parse of `f` as it is now (the cache directory, the collector's
   * file beside the partition), the one covering most of the file first (the cache's on a tie).
   */
  private persistedFor(f: PartitionFile, st: FileStat): PersistedParses[] {
    const found: { p: PersistedParses; covered: number }[] = [];
    for (const p of [this.diskCache, this.runParses]) {
      if (p === null || !p.handles(this.stream)) continue;
      const covered = p.covered(this.stream, f.key, st);
      if (covered >= 0) found.push({ p, covered });
    }
    return found.sort((a, b) => b.covered - a.covered).map((x) => x.p);
  }

  /** The best persisted whole parse of `f` (see `persistedFor`); a damaged one gives way to the next. */
  private loadPersisted(f: PartitionFile, st: FileStat): CachedPartition | null {
    for (const p of this.persistedFor(f, st)) {
      const hit = p.load(this.stream, f.key, st);
      if (hit !== null) return hit;
    }
    return null;
  }

  /** The engine metric names a persisted parse of `f` records exactly (it covers the whole file), or null. */
  persistedMetricNames(f: PartitionFile, st: FileStat): string[] | null {
    for (const p of this.persistedFor(f, st)) {
      const names = p.metricNames(f.key, st);
      if (names !== null) return names;
    }
    return null;
  }

  private warningsOf(f: PartitionFile): [number, string][] {
    return [...(this.badLines.get(f.rel) ?? [])];
  }

  /** Persists the file's block if it is resident whole (and the cache takes this stream). */
  persistResident(f: PartitionFile): void {
    const e = this.cache.get(f.key);
    if (e !== undefined) this.persist(f, e);
  }

  /** Reads a file whole so its parse is persisted (a warm-up step; it stays resident only within the budget). */
  warm(f: PartitionFile): void {
    const e = this.cache.get(f.key);
    if (e !== undefined) this.persist(f, e);
    else this.block(f);
  }

  /** Writes a whole block to the partition cache (as the columns a parse thread would hand over). */
  private persist(f: PartitionFile, e: CacheEntry<B>): void {
    if (this.diskCache === null || this.kind.export === undefined || !this.diskCache.handles(this.stream)) return;
    this.diskCache.save(this.stream, f.key, e.ino, { data: this.kind.export(e.block), offset: e.offset, lines: e.lines, view: null, warnings: this.warningsOf(f) });
  }

  private fill(f: PartitionFile, e: CacheEntry<B>): number {
    this.fills++;
    const before = e.block.length;
    const bad: BadLine = (line, message) => this.onBad(f.rel, line, message);
    const r = this.io.readLines(f.path, e.offset, (chunk) => {
      e.lines += this.kind.parse(chunk.buf, 0, chunk.end, e.block, e.lines + 1, bad);
      this.betweenChunks?.();
    });
    e.offset = r.offset;
    if (r.size > f.size) f.size = r.size;
    const added = e.block.length - before;
    this.rowsParsed += added;
    return added;
  }

  /** Tails every resident block; never-read partitions stay lazy. Returns rows added. */
  refreshCached(): number {
    let added = 0;
    const byKey = new Map(this.listing.map((f) => [f.key, f]));
    for (const [key, e] of [...this.cache]) {
      const f = byKey.get(e.file);
      if (f === undefined) {
        this.drop(key);
        continue;
      }
      const st = this.io.stat(f.path);
      const size = st?.size ?? 0;
      f.size = size;
      if (size < e.offset || (st !== null && st.ino !== e.ino)) {
        // the file was replaced or rewritten shorter: forget it; the next read parses it again
        this.drop(key);
        if (e.view === null) added += this.block(f).length;
      } else if (size > e.offset) {
        if (e.view === null) added += this.fill(f, e);
        else {
          const before = e.block.length;
          if (this.fillView(f, e)) added += e.block.length - before;
          else this.drop(key);
        }
      }
    }
    return added;
  }

  /** Resident bytes of all cached blocks. */
  bytesResident(): number {
    let b = 0;
    for (const e of this.cache.values()) b += e.block.bytesResident();
    return b;
  }

  /**
   * Timestamps at the stream's edges without a scan: the first line of the oldest non-empty file and
   * the last complete line in the final 64 KiB of the newest one (undecodable lines ignored).
   */
  edgeStamps(): number[] {
    const nonEmpty = this.listing.filter((f) => f.size > 0);
    if (nonEmpty.length === 0) return [];
    const oldest = nonEmpty[0];
    const newest = nonEmpty[nonEmpty.length - 1];
    let first = this.firstStamps.get(oldest.path);
    if (first === undefined) {
      const line = this.io.firstLine(oldest.path);
      first = line === null ? [] : this.stampsOf(line);
      if (line !== null) this.firstStamps.set(oldest.path, first);
    }
    let last: number[];
    if (this.lastStamps && this.lastStamps.path === newest.path && this.lastStamps.size === newest.size) last = this.lastStamps.stamps;
    else {
      const line = this.io.lastLine(newest.path);
      last = line === null ? [] : this.stampsOf(line);
      this.lastStamps = { path: newest.path, size: newest.size, stamps: last };
    }
    return [...first, ...last];
  }

  private stampsOf(line: Buffer): number[] {
    let o: any;
    try {
      o = parsePythonJson(line.toString('utf8'));
    } catch {
      return [];
    }
    if (o === null || typeof o !== 'object') return [];
    if (this.stream === 'phases') {
      if (typeof o.t0 !== 'number' || typeof o.t1 !== 'number') return [];
      return o.t1 === OPEN_T1 ? [o.t0] : [o.t0, o.t1];
    }
    return typeof o.ts === 'number' ? [o.ts] : [];
  }
}

/** How far past the machine's clock an hour partition may be named (clocks of a cluster and a laptop differ). */
const FUTURE_SLACK_S = 7 * 86400;

/**
 * Start (epoch seconds) of the hour a partition stem names, or why it names none: `YYYYMMDD_HH` of a real
 * date and hour, not far in the future.
 */
export function partitionHourStart(key: string, nowMs: number): number | string {
  const lo = hourStart(key);
  if (lo === null || hourKey(lo) !== key) return 'not an hour partition name (YYYYMMDD_HH of a real hour)';
  if (lo > nowMs / 1000 + FUTURE_SLACK_S) return 'an hour partition in the future';
  return lo;
}
