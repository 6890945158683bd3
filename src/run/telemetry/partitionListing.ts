// The hourly partition files of one stream: `{stream}/{YYYYMMDD_HH}.jsonl` (+ the legacy flat file), listed
// with their sizes, found by time window, and the stream's edge timestamps read without a scan.
import { join } from 'node:path';
import type { TelemetryIo } from './io.ts';
import { parsePythonJson } from '../../formats/columns/lineScan.ts';
import type { PartitionedStream } from './records.ts';
import { OPEN_T1 } from './records.ts';
import { flatFile, hourKey, hourStart, partitionFile, partitionKeyOf } from '../../formats/dashboard/layout.ts';

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

export class PartitionListing {
  private listing: PartitionFile[] = [];
  private readonly firstStamps = new Map<string, number[]>();
  private lastStamps: { path: string; size: number; stamps: number[] } | null = null;

  constructor(
    private readonly dir: string,
    private readonly stream: PartitionedStream,
    private readonly io: TelemetryIo,
    private readonly onBad: (file: string, line: number, message: string) => void,
    /** The clock partition names are checked against (far-future hours are refused). */
    private readonly now: () => number,
  ) {}

  /** Re-lists the files and their sizes; returns the files not listed before. */
  refresh(): PartitionFile[] {
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

  /** The files overlapping `[t0, t1]` (legacy always), legacy first then hours ascending; only those in `only` when given. */
  overlapping(t0?: number | null, t1?: number | null, only: ReadonlySet<string> | null = null): PartitionFile[] {
    return this.listing.filter((f) => (only === null || only.has(f.key)) && !((t0 != null && f.hi <= t0) || (t1 != null && f.lo > t1) || (t1 != null && f.lo === t1 && this.startsAfter(f, t1))));
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
