// One stream's hourly partitions read lazily: the listing (partitionListing.ts), whole blocks parsed on
// first use and tailed by byte offset, selective views (partitionViews.ts), resident blocks and persisted
// parses (partitionResidency.ts), cold files shared with the parse threads.
import type { TelemetryIo } from './io.ts';
import { nodeIo } from './io.ts';
import type { MemoryBudget } from './memoryBudget.ts';
import type { PartitionCache, PersistedParses } from './partitionCache.ts';
import type { FileStat } from './io.ts';
import type { BadLine } from '../../formats/columns/lineScan.ts';
import type { ParseResult } from '../../formats/columns/parsedColumns.ts';
import type { ParsePool } from './parsePool.ts';
import type { PartitionedStream } from './records.ts';
import { PARTITION_CACHE_BLOCKS } from './records.ts';
import type { BlockKind, HourBlock } from '../../formats/columns/hourBlock.ts';
import { boundsCover, type TimeBounds, UNBOUNDED } from '../../formats/columns/timeBounds.ts';
import { PartitionListing, type PartitionFile } from './partitionListing.ts';
import { loadPersisted, persistedFor, ResidentBlocks, viewKey, type CacheEntry } from './partitionResidency.ts';
import { fillView, viewBlock, type ViewReads } from './partitionViews.ts';

/** One piece of a cold file for a parse thread: bytes `[start, end)` (to the file's end without `end`), the `index`-th of its file. */
interface FilePiece {
  f: PartitionFile;
  view: string | null;
  bounds: TimeBounds;
  start: number;
  end: number | undefined;
  index: number;
}

/** The smallest piece a file is cut into for the parse threads (below it the job costs more than it spares). */
const MIN_PIECE_BYTES = 32 << 20;
/** How far past a cut point a line end is looked for. */
const CUT_SEARCH_BYTES = 64 << 10;
/** What a byte a bounded read passes over after its stamp costs, against a byte it reads (about a third, measured). */
const PASSED_BYTE_COST = 1 / 3;

/**
 * The parse cost of piece `p` in bytes read: the bytes of its hour outside its bounds (placed as if the hour's
 * rows came at an even rate) count at what passing over them costs. The newest hour's rows may stop anywhere
 * in it: bytes after its `to` are not guessed at.
 */
function pieceCost(p: FilePiece, newest: boolean): number {
  const { f, bounds, start } = p;
  const end = p.end ?? f.size;
  if (bounds === UNBOUNDED || !Number.isFinite(f.lo) || !Number.isFinite(f.hi)) return end - start;
  const at = (t: number): number => Math.min(1, Math.max(0, (t - f.lo) / (f.hi - f.lo))) * f.size;
  const inside = Math.max(0, Math.min(end, newest ? end : at(bounds.to)) - Math.max(start, at(bounds.from)));
  return inside + (end - start - inside) * PASSED_BYTE_COST;
}

export class PartitionReader<B extends HourBlock> implements ViewReads<B> {
  readonly stream: PartitionedStream;
  readonly kind: BlockKind<B>;
  /** Resident blocks (whole files and views) and their place in the budget. */
  readonly blocks: ResidentBlocks<B>;
  /** Notes a skipped line of a file (remembered per file, so a persisted parse reports it again when loaded). */
  readonly onBad: (file: string, line: number, message: string) => void;
  private readonly badLines = new Map<string, Map<number, string>>();
  private readonly listing: PartitionListing;
  /** Rows parsed from disk so far (re-parses after eviction count again). */
  rowsParsed = 0;
  /** Files read (cold or tail) so far; lets tests check laziness. */
  fills = 0;
  /** Cold files parsed by worker threads so far. */
  workerFills = 0;
  /** Pieces of cold files the worker threads parsed for `readOnThreads` (a file cut in pieces counts each). */
  workerPieces = 0;
  /** The smallest piece `readOnThreads` cuts a file into. */
  minPieceBytes = MIN_PIECE_BYTES;
  /** Where the worker threads that take a share of cold multi-file reads come from (started on first use); null: the main thread reads alone. */
  poolSource: (() => ParsePool | null) | null = null;

  get pool(): ParsePool | null {
    return this.poolSource?.() ?? null;
  }
  /** Where whole parses persist across processes (null: parse every cold file). */
  diskCache: PartitionCache | null = null;
  /** The parses the collector wrote beside the partitions (read only; null: none are looked for). */
  runParses: PersistedParses | null = null;
  /** Cold files served by the partition cache so far. */
  cacheFills = 0;
  /** Called after each chunk this thread parses during a shared cold read (hands work to idle workers). */
  betweenChunks: (() => void) | null = null;

  constructor(
    dashboardDir: string,
    stream: PartitionedStream,
    kind: BlockKind<B>,
    onBad: (file: string, line: number, message: string) => void,
    capacity = PARTITION_CACHE_BLOCKS,
    readonly io: TelemetryIo = nodeIo,
  ) {
    this.stream = stream;
    this.kind = kind;
    this.onBad = (file, line, message) => {
      let lines = this.badLines.get(file);
      if (lines === undefined) this.badLines.set(file, (lines = new Map()));
      lines.set(line, message);
      onBad(file, line, message);
    };
    this.blocks = new ResidentBlocks(capacity);
    this.listing = new PartitionListing(dashboardDir, stream, io, this.onBad, () => this.now());
    this.refreshListing();
  }

  /** The clock partition names are checked against (far-future hours are refused). */
  now: () => number = Date.now;

  /** The byte budget shared with the store's other streams (null: only the block count limits). */
  get budget(): MemoryBudget | null {
    return this.blocks.budget;
  }

  set budget(b: MemoryBudget | null) {
    this.blocks.budget = b;
  }

  /** Re-lists the files and their sizes; returns the files not listed before. */
  refreshListing(): PartitionFile[] {
    return this.listing.refresh();
  }

  files(): readonly PartitionFile[] {
    return this.listing.files();
  }

  hasData(): boolean {
    return this.listing.files().some((f) => f.size > 0);
  }

  /** Blocks of the files overlapping `[t0, t1]` (legacy always), legacy first then hours ascending; rows unfiltered. */
  window(t0?: number | null, t1?: number | null, view: string | null = null): B[] {
    const files = this.overlapping(t0, t1);
    const bounds = (f: PartitionFile): TimeBounds => this.viewBounds(f, t0, t1);
    if (this.pool !== null && this.pool.size > 0) this.prefetch(files, () => view, bounds);
    const out: B[] = [];
    for (const f of files) {
      const b = view === null ? this.block(f) : this.viewBlock(f, view, bounds(f));
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
    const bounds = (f: PartitionFile): TimeBounds => this.viewBounds(f, t0, t1);
    const batch = (this.pool?.size ?? 0) + 1;
    for (let i = 0; i < files.length; i += batch) {
      const group = files.slice(i, i + batch);
      if (this.pool !== null && this.pool.size > 0) this.prefetch(group, () => view, bounds);
      for (const f of group) {
        const b = view === null ? this.block(f) : this.viewBlock(f, view, bounds(f));
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
    return this.blocks.get(key)?.block ?? null;
  }

  /** Bytes of the file the resident whole block of `key` was parsed to, or null when it is not resident. */
  parsedOffset(key: string): number | null {
    return this.blocks.get(key)?.offset ?? null;
  }

  /**
   * While set, the only files reads may touch (partition keys): a partial answer reads the hours already
   * folded and leaves the others out, rather than parsing them.
   */
  hourFilter: ReadonlySet<string> | null = null;

  /**
   * The stamps a view of `f` read for the window `[t0, t1]` must keep: the window's, on the side where it cuts
   * the file's hour (a kind without bounded views, or an hour inside the window, is read whole).
   */
  private viewBounds(f: PartitionFile, t0: number | null | undefined, t1: number | null | undefined): TimeBounds {
    if (this.kind.boundedViews !== true) return UNBOUNDED;
    const from = t0 != null && t0 > f.lo ? t0 : -Infinity;
    const to = t1 != null && t1 < f.hi ? t1 : Infinity;
    return from === -Infinity && to === Infinity ? UNBOUNDED : { from, to };
  }

  /** The files overlapping `[t0, t1]` (legacy always), within `hourFilter` when one is set. */
  private overlapping(t0?: number | null, t1?: number | null): PartitionFile[] {
    return this.listing.overlapping(t0, t1, this.hourFilter);
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
   * The block of one file restricted to a view (see `BlockKind.parseView`): a resident view holding
   * every name asked for serves it; the whole block when it is resident anyway or when the view cannot
   * be read selectively.
   */
  viewBlock(f: PartitionFile, view: string, bounds: TimeBounds = UNBOUNDED): B {
    return viewBlock(this, f, view, bounds);
  }

  /**
   * Parses the cold files among `files` on the pool's idle workers and this thread at once: workers
   * take the biggest files, this thread the smallest, and between its chunks it hands the next file to
   * any worker that finished (so no worker idles while files remain). Each lands in the cache exactly
   * as a serial read would have put it there; a file a worker failed on is read later on this thread.
   */
  private prefetch(files: readonly PartitionFile[], viewFor: (f: PartitionFile) => string | null, boundsFor: (f: PartitionFile) => TimeBounds = () => UNBOUNDED): void {
    const pool = this.pool!;
    const adopt = this.kind.adopt;
    if (adopt === undefined) return;
    const viewOf = this.coldReads(files, viewFor, boundsFor);
    const queue = [...viewOf.keys()];
    if (queue.length < 2) return;
    queue.sort((a, b) => b.size - a.size);
    const pending: { slot: number; f: PartitionFile; ino: number; bounds: TimeBounds; done: boolean }[] = [];
    const collect = (p: (typeof pending)[number], r: ParseResult | 'failed' | null): void => {
      if (r === null) return;
      p.done = true;
      if (r !== 'failed') this.install(p.f, p.ino, r, adopt, true, p.bounds);
    };
    const feed = (): void => {
      for (const p of pending) if (!p.done) collect(p, pool.poll(p.slot));
      for (let slot = pool.idle(); slot >= 0 && queue.length > 0; slot = pool.idle()) {
        const f = queue.shift()!;
        const view = viewOf.get(f)!;
        const bounds = view === null ? UNBOUNDED : boundsFor(f);
        pending.push({ slot, f, ino: this.io.stat(f.path)?.ino ?? 0, bounds, done: false });
        pool.submit(slot, { stream: this.stream, path: f.path, offset: 0, view, bounds: jobBounds(bounds), rowsHint: Math.ceil(f.size / this.kind.bytesPerRow) });
      }
    };
    feed();
    this.betweenChunks = feed;
    try {
      while (queue.length > 0) {
        const f = queue.pop()!;
        const v = viewOf.get(f)!;
        if (v === null) this.block(f);
        else this.viewBlock(f, v, boundsFor(f));
        feed();
      }
    } finally {
      this.betweenChunks = null;
    }
    for (const p of pending) if (!p.done) collect(p, pool.wait(p.slot));
  }

  /**
   * The files among `files` a read would parse, each with what it would read of it: the whole file (null) or
   * the view (unless a resident view covers it, or a persisted parse serves it: then it is not cold).
   */
  private coldReads(files: readonly PartitionFile[], viewFor: (f: PartitionFile) => string | null, boundsFor: (f: PartitionFile) => TimeBounds): Map<PartitionFile, string | null> {
    const viewOf = new Map<PartitionFile, string | null>();
    for (const f of files) {
      if (f.size === 0 || this.blocks.has(f.key)) continue;
      // a persisted parse is read faster here than a worker parses the file
      const st = this.diskCache?.handles(this.stream) || this.runParses?.handles(this.stream) ? this.io.stat(f.path) : null;
      if (st !== null && this.persistedFor(f, st).length > 0) continue;
      const view = viewFor(f);
      if (view === null || this.kind.parseView === undefined) viewOf.set(f, null);
      else if (this.blocks.coveringView(f, view, boundsFor(f)) === null) viewOf.set(f, this.blocks.viewsSpent(f, this.kind.viewsBeforeWhole, view) ? null : view);
    }
    return viewOf;
  }

  /**
   * Parses the cold files `window(t0, t1, view)` would parse on the parse threads alone, this thread free for
   * other requests meanwhile (it only awaits them and adopts their columns); the blocks land as `window`
   * would put them. A big file is cut at line starts into pieces the threads share (see `pieces`), so one
   * hour is read by every thread at once. Without parse threads, or when none is free within `waitMs`, it
   * leaves the rest to the read that follows (which parses on this thread). A thread the warm-up holds frees
   * up within one file (while requests come the warm-up hands out at most one more, and its parses do not pause
   * while a read waits for a thread), so waiting for it keeps this thread free for the others.
   */
  async readOnThreads(t0: number | null | undefined, t1: number | null | undefined, view: string | null, waitMs = 30_000): Promise<void> {
    const pool = this.pool;
    const adopt = this.kind.adopt;
    if (pool === null || pool.size === 0 || adopt === undefined) return;
    const bounds = (f: PartitionFile): TimeBounds => this.viewBounds(f, t0, t1);
    const queue = this.pieces(this.coldReads(this.overlapping(t0, t1), () => view, bounds), pool.size, bounds);
    const files = new Map<PartitionFile, { results: (ParseResult | 'failed' | null)[]; left: number; ino: number; ends: (number | undefined)[] }>();
    for (const p of queue) {
      let entry = files.get(p.f);
      if (entry === undefined) files.set(p.f, (entry = { results: [], left: 0, ino: this.io.stat(p.f.path)?.ino ?? 0, ends: [] }));
      entry.results[p.index] = null;
      entry.ends[p.index] = p.end;
      entry.left++;
    }
    const pending: { slot: number; piece: FilePiece }[] = [];
    let lastProgress = performance.now();
    // while pieces wait for a thread the warm-up holds, its parse does not pause for this request
    let waiting = false;
    const wait = (on: boolean): void => {
      if (waiting !== on) pool.waitingForThread((waiting = on));
    };
    try {
      while (queue.length > 0 || pending.length > 0) {
        for (let i = pending.length - 1; i >= 0; i--) {
          const { slot, piece } = pending[i]!;
          const r = pool.poll(slot);
          if (r === null) continue;
          pending.splice(i, 1);
          lastProgress = performance.now();
          const entry = files.get(piece.f)!;
          entry.results[piece.index] = r;
          this.workerPieces++;
          if (--entry.left === 0) this.installPieces(piece.f, entry.ino, entry.results as (ParseResult | 'failed')[], entry.ends, adopt, piece.bounds);
        }
        for (let slot = pool.idle(); slot >= 0 && queue.length > 0; slot = pool.idle()) {
          const piece = queue.shift()!;
          pending.push({ slot, piece });
          const bytes = (piece.end ?? piece.f.size) - piece.start;
          pool.submit(slot, { stream: this.stream, path: piece.f.path, offset: piece.start, end: piece.end, view: piece.view, bounds: jobBounds(piece.bounds), rowsHint: Math.ceil(bytes / this.kind.bytesPerRow) });
          lastProgress = performance.now();
        }
        wait(queue.length > 0 && pool.idle() < 0);
        if (pending.length === 0 && queue.length > 0 && performance.now() - lastProgress > waitMs) return;
        await new Promise((resolve) => setTimeout(resolve, 3));
      }
    } finally {
      wait(false);
    }
  }

  /**
   * The cold reads as pieces for `threads` parse threads, costliest first (the cheap ones fill in last): a
   * selective read of a file of a kind whose blocks can be joined is cut at line starts into pieces of about a
   * third of each thread's share (at least `minPieceBytes`), so the threads finish together however the bytes
   * fall into files.
   */
  private pieces(cold: Map<PartitionFile, string | null>, threads: number, boundsFor: (f: PartitionFile) => TimeBounds): FilePiece[] {
    let total = 0;
    for (const f of cold.keys()) total += f.size;
    const target = Math.max(this.minPieceBytes, Math.ceil(total / (threads * 3)));
    const out: FilePiece[] = [];
    for (const [f, view] of cold) {
      const cuts: number[] = [];
      // a whole hour's columns are not cut: joining them would hold the hour twice for a moment
      const n = this.kind.join === undefined || view === null ? 1 : Math.round(f.size / target);
      for (let k = 1; k < n; k++) {
        const at = Math.floor((f.size * k) / n);
        // the piece starts just past the line end at or after `at` (no line end near it: no cut there)
        const nl = this.io.readRange(f.path, at, CUT_SEARCH_BYTES).indexOf(10);
        const cut = nl < 0 ? -1 : at + nl + 1;
        if (cut > (cuts.at(-1) ?? 0) && cut < f.size) cuts.push(cut);
      }
      const starts = [0, ...cuts];
      const bounds = view === null ? UNBOUNDED : boundsFor(f);
      starts.forEach((start, index) => out.push({ f, view, bounds, start, end: cuts[index], index }));
    }
    const newest = this.listing.files().at(-1);
    const cost = new Map(out.map((p) => [p, pieceCost(p, p.f === newest)]));
    return out.sort((a, b) => cost.get(b)! - cost.get(a)!);
  }

  /**
   * Takes in the pieces of one file parsed on the threads (each piece `k` read up to `ends[k]`) as one block;
   * nothing when a piece failed or stopped short of its end (the file changed under them): the read that
   * follows parses the file.
   */
  private installPieces(f: PartitionFile, ino: number, results: readonly (ParseResult | 'failed')[], ends: readonly (number | undefined)[], adopt: NonNullable<BlockKind<B>['adopt']>, bounds: TimeBounds): void {
    if (results.length === 1) {
      if (results[0] !== 'failed') this.install(f, ino, results[0]!, adopt, true, bounds);
      return;
    }
    const parts = results.filter((r): r is ParseResult => r !== 'failed');
    if (parts.length < results.length || parts.some((r, k) => r.view !== parts[0]!.view || (ends[k] !== undefined && r.offset !== ends[k]))) return;
    const view = parts[0]!.view;
    if (this.holds(f, view, bounds)) return;
    const blocks: B[] = [];
    const warnings: [number, string][] = [];
    let lines = 0;
    for (const r of parts) {
      blocks.push(adopt(f.key, f.lo, f.hi, r.data));
      for (const [line, message] of r.warnings) warnings.push([lines + line, message]);
      lines += r.lines;
    }
    const block = this.kind.join!(f.key, f.lo, f.hi, blocks);
    const offset = parts.at(-1)!.offset;
    this.install(f, ino, { data: null as never, offset, lines, view, warnings }, () => block, false, bounds);
    if (view === null) this.persistResident(f);
  }

  /** Whether the resident entry a parse of `f` for `view` over `bounds` would fill already holds what it would read. */
  private holds(f: PartitionFile, view: string | null, bounds: TimeBounds): boolean {
    const e = this.blocks.get(view === null ? f.key : viewKey(f.key, view));
    return e !== undefined && boundsCover(e.bounds ?? UNBOUNDED, view === null ? UNBOUNDED : bounds);
  }

  private install(f: PartitionFile, ino: number, r: ParseResult, adopt: NonNullable<BlockKind<B>['adopt']>, persist = true, bounds: TimeBounds = UNBOUNDED): void {
    const key = r.view === null ? f.key : viewKey(f.key, r.view);
    if (this.holds(f, r.view, bounds)) return;
    // persisted before adopting: adopting maps the worker's ids onto this store's in place
    if (r.view === null && persist) this.diskCache?.save(this.stream, f.key, ino, r);
    const block = adopt(f.key, f.lo, f.hi, r.data);
    if (r.view !== null && 'view' in block) block.view = r.view;
    for (const [line, message] of r.warnings) this.onBad(f.rel, line, message);
    const e: CacheEntry<B> = { block, offset: r.offset, lines: r.lines, file: f.key, view: r.view, ino };
    if (r.view !== null && bounds !== UNBOUNDED) e.bounds = bounds;
    this.blocks.set(key, e);
    if (r.view === null) this.blocks.dropViewsOf(f.key);
    if (r.offset > f.size) f.size = r.offset;
    this.fills++;
    this.workerFills++;
    this.rowsParsed += block.length;
    this.blocks.used(key, e);
    this.blocks.evict();
  }

  /** Whether the file's block is parsed and resident. */
  isCached(key: string): boolean {
    return this.blocks.has(key);
  }

  cachedKeys(): string[] {
    return [...this.blocks.keys()];
  }

  /**
   * The block of one file. A resident block is returned as is (appended bytes arrive through
   * `refreshCached`, i.e. `follow()`); a cold one is parsed up to the file's complete lines.
   */
  block(f: PartitionFile): B {
    let e = this.blocks.get(f.key);
    if (e !== undefined) {
      this.blocks.bump(f.key, e);
      return e.block;
    }
    const st = this.io.stat(f.path);
    const size = st?.size ?? 0;
    const persisted = st !== null && this.kind.adopt !== undefined ? loadPersisted(this.persistedFor(f, st), this.stream, f, st) : null;
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
    this.blocks.set(f.key, e);
    const added = this.fill(f, e);
    e.block.trim();
    if (persisted === null || added > 0) this.persist(f, e);
    // a whole block supersedes the file's views
    this.blocks.dropViewsOf(f.key);
    this.blocks.used(f.key, e);
    this.blocks.evict();
    return e.block;
  }

  /** The places holding a valid persisted parse of `f` as it is now, the one covering most of the file first. */
  persistedFor(f: PartitionFile, st: FileStat): PersistedParses[] {
    return persistedFor([this.diskCache, this.runParses], this.stream, f, st);
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
    const e = this.blocks.get(f.key);
    if (e !== undefined) this.persist(f, e);
  }

  /** Reads a file whole so its parse is persisted (a warm-up step; it stays resident only within the budget). */
  warm(f: PartitionFile): void {
    const e = this.blocks.get(f.key);
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
    const byKey = new Map(this.listing.files().map((f) => [f.key, f]));
    for (const [key, e] of this.blocks.snapshot()) {
      const f = byKey.get(e.file);
      if (f === undefined) {
        this.blocks.drop(key);
        continue;
      }
      const st = this.io.stat(f.path);
      const size = st?.size ?? 0;
      f.size = size;
      if (size < e.offset || (st !== null && st.ino !== e.ino)) {
        // the file was replaced or rewritten shorter: forget it; the next read parses it again
        this.blocks.drop(key);
        if (e.view === null) added += this.block(f).length;
      } else if (size > e.offset) {
        if (e.view === null) added += this.fill(f, e);
        else {
          const before = e.block.length;
          if (fillView(this, f, e)) added += e.block.length - before;
          else this.blocks.drop(key);
        }
      }
    }
    return added;
  }

  /** Resident bytes of all cached blocks. */
  bytesResident(): number {
    return this.blocks.bytesResident();
  }

  /**
   * Timestamps at the stream's edges without a scan: the first line of the oldest non-empty file and
   * the last complete line in the final 64 KiB of the newest one (undecodable lines ignored).
   */
  edgeStamps(): number[] {
    return this.listing.edgeStamps();
  }
}

/** A job's bounds as sent to a parse thread (none when unbounded). */
function jobBounds(bounds: TimeBounds): TimeBounds | undefined {
  return bounds === UNBOUNDED ? undefined : bounds;
}
