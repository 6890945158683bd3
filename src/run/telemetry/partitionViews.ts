// Selective reads of a partition file: a view (some names of a stream, e.g. a few engine metrics) parsed
// from the file's lines or sliced from a persisted parse, served by any resident view that covers it.
import type { FileStat, TelemetryIo } from './io.ts';
import type { BadLine } from '../../formats/columns/lineScan.ts';
import type { PersistedParses } from './partitionCache.ts';
import type { CachedPartition } from '../../formats/columns/colsFile.ts';
import type { BlockKind, HourBlock } from '../../formats/columns/hourBlock.ts';
import { type TimeBounds, UNBOUNDED } from '../../formats/columns/timeBounds.ts';
import type { PartitionFile } from './partitionListing.ts';
import { viewKey, type CacheEntry, type ResidentBlocks } from './partitionResidency.ts';
import type { PartitionedStream } from './records.ts';

/** What a selective read needs of the partition reader it serves. */
export interface ViewReads<B extends HourBlock> {
  readonly stream: PartitionedStream;
  readonly kind: BlockKind<B>;
  readonly io: TelemetryIo;
  readonly blocks: ResidentBlocks<B>;
  fills: number;
  rowsParsed: number;
  cacheFills: number;
  readonly onBad: (file: string, line: number, message: string) => void;
  /** Called after each chunk parsed during a shared cold read (null outside one). */
  readonly betweenChunks: (() => void) | null;
  persistedFor(f: PartitionFile, st: FileStat): PersistedParses[];
  /** The whole block of a file (what a view falls back to). */
  block(f: PartitionFile): B;
}

/**
 * The block of one file restricted to a view (see `BlockKind.parseView`) and, for a kind with bounded views,
 * to the rows stamped within `bounds`: a resident view holding every name asked for over those stamps serves
 * it; the whole block when it is resident anyway or when the view cannot be read selectively.
 */
export function viewBlock<B extends HourBlock>(r: ViewReads<B>, f: PartitionFile, view: string, bounds: TimeBounds = UNBOUNDED): B {
  const whole = r.blocks.get(f.key);
  if (whole !== undefined || r.kind.parseView === undefined) return r.block(f);
  const key = viewKey(f.key, view);
  const covering = r.blocks.coveringView(f, view, bounds);
  if (covering !== null) {
    r.blocks.bump(covering.key, covering.e);
    return covering.e.block;
  }
  // the same view over narrower stamps is replaced, not counted as another view
  if (r.blocks.viewsSpent(f, r.kind.viewsBeforeWhole, view)) return r.block(f);
  const st = r.io.stat(f.path);
  const adopt = r.kind.adopt;
  const persisted = st !== null && adopt !== undefined ? r.persistedFor(f, st) : [];
  if (st !== null && adopt !== undefined && persisted.length > 0) {
    // a persisted whole parse serves the view (from its slices when the layout allows, else whole)
    let hit: CachedPartition | null = null;
    for (const p of persisted) if ((hit = p.loadView(r.stream, f.key, st, view)) !== null) break;
    if (hit === null) return r.block(f);
    const e: CacheEntry<B> = { block: adopt(f.key, f.lo, f.hi, hit.result.data), offset: hit.result.offset, lines: hit.result.lines, file: f.key, view, ino: hit.ino };
    if ('view' in e.block) e.block.view = view;
    r.cacheFills++;
    if (st.size > e.offset && !fillView(r, f, e)) return r.block(f);
    return keepView(r, key, e);
  }
  return coldView(r, f, key, view, st?.ino ?? 0, r.kind.boundedViews === true ? bounds : UNBOUNDED);
}

/** A view read from the file's lines (for the stamps within `bounds`). */
function coldView<B extends HourBlock>(r: ViewReads<B>, f: PartitionFile, key: string, view: string, ino: number, bounds: TimeBounds): B {
  const e: CacheEntry<B> = { block: r.kind.create(f.key, f.lo, f.hi, 1024), offset: 0, lines: 0, file: f.key, view, ino };
  if (bounds !== UNBOUNDED) e.bounds = bounds;
  if ('view' in e.block) e.block.view = view;
  if (!fillView(r, f, e)) return r.block(f);
  return keepView(r, key, e);
}

function keepView<B extends HourBlock>(r: ViewReads<B>, key: string, e: CacheEntry<B>): B {
  r.blocks.set(key, e);
  e.block.trim();
  r.blocks.used(key, e);
  r.blocks.evict();
  return e.block;
}

/** Parses the view's lines of `f` past what `e` holds; false when the bytes do not allow a selective parse. */
export function fillView<B extends HourBlock>(r: ViewReads<B>, f: PartitionFile, e: CacheEntry<B>): boolean {
  r.fills++;
  const before = e.block.length;
  let ok = true;
  const bad: BadLine = (line, message) => r.onBad(f.rel, line, message);
  const read = r.io.readLines(f.path, e.offset, (chunk) => {
    if (!ok) return;
    const n = r.kind.parseView!(e.view!, chunk.buf, 0, chunk.end, e.block, e.lines + 1, bad, e.bounds);
    if (n < 0) ok = false;
    else e.lines += n;
    r.betweenChunks?.();
  });
  if (!ok) return false;
  e.offset = read.offset;
  r.rowsParsed += e.block.length - before;
  return true;
}
