// gpu_util hour by hour for whole-window answers: each hour's rollup (10-s cells) when it has one that
// is up to date with its file, else its raw block. Rollups are found in memory, then in the partition
// cache; an hour without one is read once (parsed, or loaded from its persisted columns) and rolled up.
// Rollups stay resident within the store's memory budget; raw rows are read only for the columns an
// answer cannot take whole, as slices of the persisted columns when the hour is not resident.
import type { GpuUtilBlock } from '../../formats/columns/gpuUtilBlock.ts';
import { join } from 'node:path';
import { gpuRollupFile } from '../../formats/dashboard/layout.ts';
import { decodeGpuRollup, describesFile, foldGpuUtilRows, cellsBytes, extendable, rowsOfColumns, type GpuUtilCells, type GpuUtilRowsIn } from '../../formats/columns/gpuUtilRollup.ts';
import type { LaneTable } from '../../formats/columns/interning.ts';
import type { FileStat, TelemetryIo } from './io.ts';
import type { BudgetOwner, MemoryBudget } from './memoryBudget.ts';
import type { PartitionCache } from './partitionCache.ts';
import type { PartitionFile } from './partitionListing.ts';
import type { PartitionReader } from './partitionReader.ts';

/** Rows of an hour with store-wide lane ids (compact: `memPower`; wide: `mem` and `power`). */
export type GpuUtilRows = GpuUtilRowsIn;

/** One hour of gpu_util for a single pass. */
export interface GpuUtilHour {
  readonly key: string;
  readonly lo: number;
  readonly hi: number;
  /** The hour's cells, or null (legacy flat file, rows outside the hour): then read `block()`. */
  readonly cells: GpuUtilCells | null;
  /** Store lane id of each rollup lane (`cells.laneKeys`). */
  readonly laneIds: Uint16Array;
  /** The rows of rollup column `c` (and possibly rows of other columns written among them), in file order. */
  column(c: number): GpuUtilRows;
  /** The hour's whole raw block (parsed or loaded when not resident). */
  block(): GpuUtilBlock;
}

interface Resident {
  ino: number;
  offset: number;
  cells: GpuUtilCells;
  laneIds: Uint16Array;
}

/** Bytes of an unread file tail that may still be a partial last line, checked before re-reading an hour. */
const TAIL_PROBE = 64 * 1024;

export class GpuUtilHours implements BudgetOwner {
  private readonly resident = new Map<string, Resident>();
  /** Store lane ids of a persisted parse's lane table (the table object stays the same while its file does). */
  private readonly laneMaps = new WeakMap<object, number[]>();
  /** Hours rolled up from raw rows by this process, and hours whose rollup came from the cache (diagnostics, tests). */
  built = 0;
  loaded = 0;

  constructor(
    private readonly dashboardDir: string,
    private readonly reader: PartitionReader<GpuUtilBlock>,
    private readonly lanes: LaneTable,
    private readonly io: TelemetryIo,
    private readonly disk: PartitionCache | null,
    private readonly budget: MemoryBudget | null,
  ) {}

  release(key: string): void {
    this.resident.delete(key);
  }

  /** The hours overlapping `[t0, t1]` in file order (legacy file first), one at a time. */
  *pass(t0?: number | null, t1?: number | null): Generator<GpuUtilHour> {
    const files = this.reader.overlappingFiles(t0, t1);
    // hours to be rolled up from their rows are parsed a few at a time, on every parse thread at once
    const batch = this.reader.parallelism + 1;
    for (let i = 0; i < files.length; i++) {
      const f = files[i]!;
      if (batch > 1 && i % batch === 0) this.reader.prefetchWhole(files.slice(i, i + batch).filter((g) => g.key !== 'legacy' && g.size > 0 && !this.rollupAtHand(g)));
      if (f.size === 0) continue;
      const r = f.key === 'legacy' ? null : this.rollupOf(f);
      const reader = this.reader;
      const block = (): GpuUtilBlock => reader.block(f);
      if (r === null) {
        yield { key: f.key, lo: f.lo, hi: f.hi, cells: null, laneIds: new Uint16Array(0), column: () => rowsOfBlock(block(), 0, block().length), block };
        continue;
      }
      yield { key: f.key, lo: f.lo, hi: f.hi, cells: r.cells, laneIds: r.laneIds, column: (c) => this.columnOf(f, r, c), block };
    }
  }

  /** Whether hour `f` has a rollup to read without its rows: resident, written by the collector, or persisted. */
  private rollupAtHand(f: PartitionFile): boolean {
    const st = this.io.stat(f.path);
    if (st === null) return true; // nothing to parse
    const mem = this.resident.get(f.key);
    if (mem !== undefined && mem.ino === st.ino && mem.offset === st.size) return true;
    if (this.io.stat(join(this.dashboardDir, gpuRollupFile(f.key))) !== null) return true;
    return this.disk?.hasRollup(f.key, st) ?? false;
  }

  /** Makes sure hour `f` has an up-to-date rollup (a warm-up step). */
  rollUp(f: PartitionFile): void {
    if (f.key !== 'legacy') this.rollupOf(f);
  }

  /** The up-to-date rollup of `f`, building it when missing; null when the hour cannot be rolled up. */
  private rollupOf(f: PartitionFile): Resident | null {
    const st = this.io.stat(f.path);
    if (st === null) return null;
    const mem = this.resident.get(f.key);
    if (mem !== undefined && mem.ino === st.ino && this.current(f, mem.offset, st.size)) return this.use(f.key, mem);
    const written = this.collectorRollup(f, st, mem);
    if (written !== null) return written;
    const disk = this.disk?.loadRollup(f.key, st, null) ?? null;
    if (disk !== null && this.current(f, disk.offset, st.size)) {
      this.loaded++;
      return this.use(f.key, this.resident_(st.ino, disk.offset, disk.cells));
    }
    // read the hour (a grown one is extended from its persisted columns); its save folds the new rows in
    const b = this.reader.block(f);
    const offset = this.reader.parsedOffset(f.key) ?? st.size;
    const saved = this.disk?.loadRollup(f.key, st, offset) ?? null;
    if (saved !== null) {
      this.loaded++;
      return this.use(f.key, this.resident_(st.ino, offset, saved.cells));
    }
    const columns = b.columns();
    const rows = rowsOfColumns(columns);
    const laneKeys = this.lanes.places();
    let cells: GpuUtilCells | null;
    if (this.disk !== null) {
      cells = this.disk.saveRollup(f.key, st.ino, offset, columns, laneKeys, b.length, mem?.ino === st.ino ? mem.cells : null);
    } else {
      const prev = mem !== undefined && mem.ino === st.ino && extendable(mem.cells, rows, f.lo, f.hi) ? mem.cells : null;
      cells = foldGpuUtilRows(prev, rows, laneKeys, f.lo, f.hi, prev?.rows ?? 0);
    }
    if (cells === null) return this.forget(f.key);
    this.built++;
    return this.use(f.key, this.resident_(st.ino, offset, cells));
  }

  /**
   * The rollup the collector wrote beside the partition, when it describes this file (same inode), brought
   * up to date by folding in the lines appended since it was written (only the tail is parsed).
   */
  private collectorRollup(f: PartitionFile, st: FileStat, mem: Resident | undefined): Resident | null {
    let base: { cells: GpuUtilCells; offset: number };
    if (mem !== undefined && mem.ino === st.ino && mem.cells.byteLo !== null && mem.offset <= st.size) {
      base = { cells: mem.cells, offset: mem.offset };
    } else {
      const path = join(this.dashboardDir, gpuRollupFile(f.key));
      const rst = this.io.stat(path);
      if (rst === null) return null;
      const r = decodeGpuRollup(this.io.readRange(path, 0, rst.size), f.key);
      if (r === null || !describesFile(r.source, st) || r.source.offset > st.size || r.cells.byteLo === null) return null;
      base = { cells: r.cells, offset: r.source.offset };
      this.loaded++;
    }
    if (base.offset === st.size) return this.use(f.key, this.resident_(st.ino, base.offset, base.cells));
    const tail = this.reader.parseTail(f, base.offset);
    const laneKeys = this.lanes.places();
    const cells = foldGpuUtilRows(base.cells, rowsOfBlock(tail.block, 0, tail.block.length), laneKeys, f.lo, f.hi, 0, { rowBase: base.cells.rows, bytes: tail.lines });
    if (cells === null) return this.forget(f.key);
    return this.use(f.key, this.resident_(st.ino, tail.end, cells));
  }

  /** Whether a rollup parsed to `offset` covers the file of `size` bytes: nothing after it but a partial line. */
  private current(f: PartitionFile, offset: number, size: number): boolean {
    if (offset === size) return true;
    if (offset > size || size - offset > TAIL_PROBE) return false;
    return !this.io.readRange(f.path, offset, size - offset).includes(10);
  }

  private resident_(ino: number, offset: number, cells: GpuUtilCells): Resident {
    const laneIds = new Uint16Array(cells.lanes);
    cells.laneKeys.forEach(([node, gpu], l) => (laneIds[l] = this.lanes.id(node, gpu)));
    return { ino, offset, cells, laneIds };
  }

  /** Drops a resident rollup a failed fold may have changed part of (it is built again from the rows). */
  private forget(key: string): null {
    this.resident.delete(key);
    this.budget?.forget(this, key);
    return null;
  }

  private use(key: string, r: Resident): Resident {
    this.resident.set(key, r);
    this.budget?.touch(this, key, cellsBytes(r.cells));
    return r;
  }

  /** The rows of column `c` of `f`: from its resident block, else its persisted columns, else the column's bytes of the file, else its parsed block. */
  private columnOf(f: PartitionFile, r: Resident, c: number): GpuUtilRows {
    const cells = r.cells;
    const from = cells.rowLo[c];
    const to = cells.rowHi[c];
    const resident = this.reader.residentBlock(f.key);
    if (resident !== null && resident.length >= to) return rowsOfBlock(resident, from, to);
    const st = this.io.stat(f.path);
    if (st === null || st.ino !== r.ino) return rowsOfBlock(this.reader.block(f), from, to);
    const persisted = this.disk?.gpuRows(f.key, st, from, to) ?? null;
    if (persisted !== null) {
      let ids = this.laneMaps.get(persisted.lanes);
      if (ids === undefined) this.laneMaps.set(persisted.lanes, (ids = persisted.lanes.map(([node, gpu]) => this.lanes.id(node, gpu))));
      const lane = persisted.rows.lane;
      for (let i = 0; i < lane.length; i++) lane[i] = ids[lane[i]];
      return persisted.rows;
    }
    if (cells.byteLo !== null && cells.byteHi![c] <= st.size) {
      const b = this.reader.parseRange(f, cells.byteLo[c], cells.byteHi![c]);
      return rowsOfBlock(b, 0, b.length);
    }
    return rowsOfBlock(this.reader.block(f), from, to);
  }
}

/** Rows `[from, to)` of a block as views over its columns. */
export function rowsOfBlock(b: GpuUtilBlock, from: number, to: number): GpuUtilRows {
  const r = rowsOfColumns(b.columns());
  const cut = <T extends { subarray(a: number, b: number): T }>(a: T | undefined): T | undefined => a?.subarray(from, to);
  return { length: to - from, ts: cut(r.ts)!, lane: cut(r.lane)!, util: cut(r.util)!, memPower: cut(r.memPower), mem: cut(r.mem), power: cut(r.power) };
}
