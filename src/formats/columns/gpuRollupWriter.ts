// The gpu_util rollups a writer of the partitions keeps (the collector, the synthetic run): as it appends an hour's lines it folds them into that hour's cells
// (the same rollup the reader builds) and writes them beside the partition, so a server over a live run
// never makes a cold pass over the hours already written. Each rollup names the file it describes (its
// inode and the bytes it covers); the reader uses it only while both still hold. An hour this process
// did not write from its first byte, or one another writer also appended to, gets no rollup.
import { GpuUtilBlock, GpuUtilParser } from './gpuUtilBlock.ts';
import { encodeGpuRollup, foldGpuUtilRows, rowsOfColumns, type GpuUtilCells } from './gpuUtilRollup.ts';
import { LaneTable } from './interning.ts';
import { gpuRollupFile, hourStart, HOUR_SECONDS } from '../dashboard/index.ts';

/** What the rollups need of the collector's file system. */
export interface RollupFs {
  /** Replaces `rel` (relative to the dashboard directory) atomically with `data` (or its pieces, one after another). */
  replace(rel: string, data: Uint8Array | readonly Uint8Array[]): void;
  remove(rel: string): void;
}

interface HourState {
  ino: number;
  born: number;
  /** Bytes of the partition the cells cover, and its rows. */
  bytes: number;
  cells: GpuUtilCells | null;
  dirty: boolean;
  writtenAt: number;
  /** The hour cannot be rolled up (not written from its start by this process, or the rows did not fold). */
  broken: boolean;
}

/** How often the newest hour's rollup is rewritten while it grows, seconds (older hours: once, when complete). */
export const NEWEST_ROLLUP_EVERY_S = 60;

/** What the sidecar writers keep of each hour to decide when to write it. */
export interface SidecarHour {
  dirty: boolean;
  /** The hour gets no sidecar (not written from its start by this process, or a line did not fold). */
  broken: boolean;
  writtenAt: number;
}

/**
 * Writes the hours that changed, oldest first: every hour but the newest at once, the newest at most every
 * `NEWEST_ROLLUP_EVERY_S` (all of them when `final`); `ready` says an hour has something to write. A `write`
 * that throws leaves its hour dirty for the next call. `settled` then sees each hour written or unchanged,
 * with whether it is done growing (an older hour, or every hour at the final call).
 */
export function writeChangedHours<H extends SidecarHour>(
  hours: ReadonlyMap<string, H>,
  now: number,
  final: boolean,
  ready: (h: H) => boolean,
  write: (key: string, h: H) => void,
  settled?: (h: H, done: boolean) => void,
): void {
  const keys = [...hours.keys()].sort();
  const newest = keys.at(-1);
  for (const key of keys) {
    const h = hours.get(key)!;
    if (h.broken || !ready(h)) continue;
    if (h.dirty) {
      if (!final && key === newest && now - h.writtenAt < NEWEST_ROLLUP_EVERY_S) continue;
      try {
        write(key, h);
      } catch {
        continue; // kept dirty: written at the next call
      }
      h.dirty = false;
      h.writtenAt = now;
    }
    settled?.(h, final || key !== newest);
  }
}

export class CollectorGpuRollups {
  private readonly hours = new Map<string, HourState>();
  private readonly lanes = new LaneTable();
  private readonly parser = new GpuUtilParser(this.lanes);

  constructor(
    private readonly fs: RollupFs,
    private readonly now: () => number,
  ) {}

  /**
   * `data` (complete lines) was appended to hour `key`'s partition at byte `start`; `file` is the file's
   * identity (null when the file system cannot tell: no rollup).
   */
  appended(key: string, start: number, data: Uint8Array, file: { ino: number; born: number } | null): void {
    let h = this.hours.get(key);
    if (h === undefined) {
      h = { ino: file?.ino ?? -1, born: file?.born ?? 0, bytes: 0, cells: null, dirty: false, writtenAt: -Infinity, broken: false };
      this.hours.set(key, h);
      // an hour begun before this process (a restart): its earlier rows are not at hand
      if (start !== 0 || file === null) return this.drop(key, h);
    }
    if (h.broken) return;
    if (start !== h.bytes || file === null || file.ino !== h.ino) return this.drop(key, h);
    const lo = hourStart(key);
    if (lo === null) return this.drop(key, h);
    const block = new GpuUtilBlock(key, lo, lo + HOUR_SECONDS, 1024);
    let bad = 0;
    this.parser.parse(data, 0, data.length, block, 1, () => bad++);
    if (bad > 0) return this.drop(key, h);
    // byte span of each row: lines follow one another from `start`
    const n = block.length;
    const lineStart = new Float64Array(n);
    const lineEnd = new Float64Array(n);
    let row = 0;
    let from = 0;
    for (let i = 0; i < data.length && row < n; i++) {
      if (data[i] !== 10) continue;
      lineStart[row] = start + from;
      lineEnd[row++] = start + i + 1;
      from = i + 1;
    }
    if (row !== n) return this.drop(key, h);
    const rows = rowsOfColumns(block.columns());
    const cells = foldRows(h.cells, rows, this.lanes.places(), lo, { start: lineStart, end: lineEnd });
    if (cells === null) return this.drop(key, h);
    h.cells = cells;
    h.bytes = start + data.length;
    h.dirty = true;
  }

  /** Writes the rollups that changed (see `writeChangedHours`). */
  write(final = false): void {
    writeChangedHours(this.hours, this.now(), final, (h) => h.cells !== null, (key, h) => this.fs.replace(gpuRollupFile(key), encodeGpuRollup(h.cells!, { key, ino: h.ino, born: h.born, offset: h.bytes })));
  }

  private drop(key: string, h: HourState): void {
    h.broken = true;
    h.cells = null;
    try {
      this.fs.remove(gpuRollupFile(key));
    } catch {
      /* a stale rollup names bytes the file no longer matches: the reader ignores it */
    }
  }
}

/** Folds the new rows (all of `rows`, numbered after the cells' own) into `prev`. */
function foldRows(prev: GpuUtilCells | null, rows: ReturnType<typeof rowsOfColumns>, laneKeys: [string, number][], lo: number, bytes: { start: Float64Array; end: Float64Array }): GpuUtilCells | null {
  return foldGpuUtilRows(prev, rows, laneKeys, lo, lo + HOUR_SECONDS, 0, { rowBase: prev?.rows ?? 0, bytes });
}
