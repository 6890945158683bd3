// What a partition reader keeps: its resident blocks (whole files and views of them) in least-recently-used
// order under a block count and the store's byte budget, and the persisted parses (partition cache, the
// collector's files) that spare a cold parse.
import type { BudgetOwner, MemoryBudget } from './memoryBudget.ts';
import type { FileStat } from './io.ts';
import type { PersistedParses } from './partitionCache.ts';
import type { CachedPartition } from '../../formats/columns/colsFile.ts';
import type { PartitionFile } from './partitionListing.ts';
import type { HourBlock } from '../../formats/columns/hourBlock.ts';
import { boundsCover, type TimeBounds, UNBOUNDED } from '../../formats/columns/timeBounds.ts';
import type { PartitionedStream } from './records.ts';

export interface CacheEntry<B> {
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
  /** A view read for these stamps only (absent: the whole file): it may lack the rows outside them. */
  bounds?: TimeBounds;
}

/** The cache key of a view of a file (a whole file's key is its own). */
export function viewKey(fileKey: string, view: string): string {
  return `${fileKey}\u0000${view}`;
}

export class ResidentBlocks<B extends HourBlock> implements BudgetOwner {
  private readonly entries = new Map<string, CacheEntry<B>>();
  /** The byte budget shared with the store's other streams (null: only the block count limits). */
  budget: MemoryBudget | null = null;

  constructor(private readonly capacity: number) {}

  get(key: string): CacheEntry<B> | undefined {
    return this.entries.get(key);
  }

  has(key: string): boolean {
    return this.entries.has(key);
  }

  set(key: string, e: CacheEntry<B>): void {
    this.entries.set(key, e);
  }

  keys(): IterableIterator<string> {
    return this.entries.keys();
  }

  /** A copy of the entries (safe to drop from while walking it). */
  snapshot(): [string, CacheEntry<B>][] {
    return [...this.entries];
  }

  /** Marks a resident entry the most recently used. */
  bump(key: string, e: CacheEntry<B>): void {
    this.entries.delete(key);
    this.entries.set(key, e);
    this.used(key, e);
  }

  /** Drops the views of a file (a whole block supersedes them). */
  dropViewsOf(fileKey: string): void {
    for (const k of [...this.entries.keys()]) if (k.startsWith(`${fileKey}\u0000`)) this.drop(k);
  }

  evict(): void {
    while (this.entries.size > this.capacity) {
      const oldest = this.entries.keys().next().value as string;
      this.drop(oldest);
    }
  }

  /** Removes a resident entry (and its place in the budget). */
  drop(key: string): void {
    if (!this.entries.delete(key)) return;
    this.budget?.forget(this, key);
  }

  /** Records a use of a resident entry with the budget (which may drop older entries of any stream). */
  used(key: string, e: CacheEntry<B>): void {
    this.budget?.touch(this, key, e.block.bytesResident());
  }

  /** The budget asks to drop an entry. */
  release(key: string): void {
    this.entries.delete(key);
  }

  /** Whether `f` already holds `limit` resident views besides `view` (which a read would replace; undefined: no limit). */
  viewsSpent(f: PartitionFile, limit: number | undefined, view?: string): boolean {
    if (limit === undefined) return false;
    let n = 0;
    for (const e of this.entries.values()) if (e.file === f.key && e.view !== null && e.view !== view) n++;
    return n >= limit;
  }

  /** A resident view of `f` holding every name of `view` (newline-separated names) for every stamp of `bounds`, most recent first. */
  coveringView(f: PartitionFile, view: string, bounds: TimeBounds = UNBOUNDED): { key: string; e: CacheEntry<B> } | null {
    const exactKey = viewKey(f.key, view);
    const exact = this.entries.get(exactKey);
    if (exact !== undefined && boundsCover(exact.bounds ?? UNBOUNDED, bounds)) return { key: exactKey, e: exact };
    let want: string[] | null = null;
    for (const [key, e] of this.entries) {
      if (e.file !== f.key || e.view === null || !boundsCover(e.bounds ?? UNBOUNDED, bounds)) continue;
      want ??= view === '' ? [] : view.split('\n');
      e.names ??= new Set(e.view === '' ? [] : e.view.split('\n'));
      if (want.every((n) => e.names!.has(n))) return { key, e };
    }
    return null;
  }

  /** Resident bytes of all cached blocks. */
  bytesResident(): number {
    let b = 0;
    for (const e of this.entries.values()) b += e.block.bytesResident();
    return b;
  }
}

/**
 * The places holding a valid persisted parse of `f` as it is now (the cache directory, the collector's
 * file beside the partition), the one covering most of the file first (the cache's on a tie).
 */
export function persistedFor(places: readonly (PersistedParses | null)[], stream: PartitionedStream, f: PartitionFile, st: FileStat): PersistedParses[] {
  const found: { p: PersistedParses; covered: number }[] = [];
  for (const p of places) {
    if (p === null || !p.handles(stream)) continue;
    const covered = p.covered(stream, f.key, st);
    if (covered >= 0) found.push({ p, covered });
  }
  return found.sort((a, b) => b.covered - a.covered).map((x) => x.p);
}

/** The best persisted whole parse of `f` (see `persistedFor`); a damaged one gives way to the next. */
export function loadPersisted(places: readonly PersistedParses[], stream: PartitionedStream, f: PartitionFile, st: FileStat): CachedPartition | null {
  for (const p of places) {
    const hit = p.load(stream, f.key, st);
    if (hit !== null) return hit;
  }
  return null;
}
