// Parsed partitions persisted under `--cache-dir`, so no hour of history is parsed twice: each file's
// columns (exactly what a parse thread hands over) as one columnar frame, keyed by the source file's
// identity (inode) and the byte offset parsed to. A file that grew since is extended from that offset,
// a replaced or shortened one is parsed again; the cache is never trusted past what it recorded.
// The collector writes the same form beside the engine_series and phases hours it writes (read-only
// here: `PersistedParses` over the run directory, see `collectorColumns`).
import { createHash } from 'node:crypto';
import { closeSync, fstatSync, mkdirSync, statSync, openSync, readFileSync, readSync, renameSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { tempPathBeside } from '../../formats/fileAccess.ts';
import { columnArrayType, decodeFrame, frameHeaderLength, frameLayout, type FrameColumn } from '../../formats/columnFrame.ts';
import { decodePersistedParse, encodePersistedParse, inFileOrder, validHeader, type CachedPartition, type CacheHeader } from '../../formats/columns/colsFile.ts';
import type { GpuUtilColumns } from '../../formats/columns/gpuUtilBlock.ts';
import { hourStart, partitionFile } from '../../formats/dashboard/layout.ts';
import { GPU_ROLLUP_VERSION, decodeGpuRollup, describesFile, encodeGpuRollup, extendable, foldGpuUtilRows, rowsOfColumns, type GpuRollupHeader, type GpuUtilCells, type GpuUtilRowsIn } from '../../formats/columns/gpuUtilRollup.ts';
import type { FileStat, TelemetryIo } from './io.ts';
import type { ParsedColumns, ParseResult } from '../../formats/columns/parsedColumns.ts';
import type { PartitionedStream } from './records.ts';

/** Streams persisted (the low-volume record streams are cheap to parse and are not). */
const CACHED: ReadonlySet<PartitionedStream> = new Set(['gpu_util', 'engine_series', 'phases']);

/** Writes `pieces` one after another to a new file at `path`. */
function writePieces(path: string, pieces: readonly Uint8Array[]): void {
  const fd = openSync(path, 'w');
  try {
    for (const p of pieces) for (let off = 0; off < p.length; ) off += writeSync(fd, p, off, p.length - off);
  } finally {
    closeSync(fd);
  }
}

/** Opens a persisted file for reading (null when it cannot be). */
export type PersistedOpen = (path: string) => number | null;

const openForRead: PersistedOpen = (path) => {
  try {
    return openSync(path, 'r');
  } catch {
    return null;
  }
};

/**
 * Opens a file the run's `io` can see (a file it refuses, e.g. a symlink out of the run, reads as
 * missing), checking the opened file is the one it saw.
 */
export function openThrough(io: TelemetryIo): PersistedOpen {
  return (path) => {
    const st = io.stat(path);
    if (st === null) return null;
    const fd = openForRead(path);
    if (fd === null) return null;
    let same = false;
    try {
      same = fstatSync(fd).ino === st.ino;
    } finally {
      if (!same) closeSync(fd);
    }
    return same ? fd : null;
  };
}

/**
 * Persisted parses read from one place: the cache directory (`PartitionCache`), or the collector's files
 * beside the partitions. Every read checks the frame names the file as it is now (inode, creation time,
 * not past its end); a damaged or foreign file reads as absent.
 */
export class PersistedParses {
  /** Loads served (diagnostics and tests). */
  hits = 0;

  constructor(
    /** Where the persisted parse of hour `key` of `stream` lives, or null when this place keeps none of the stream. */
    protected readonly fileOf: (stream: PartitionedStream, key: string) => string | null,
    private readonly openFile: PersistedOpen = openForRead,
  ) {}

  handles(stream: PartitionedStream): boolean {
    return CACHED.has(stream) && this.fileOf(stream, '') !== null;
  }

  /**
   * The persisted parse of `key` if it belongs to the file as it is now (same inode, not longer than
   * the file); null otherwise. A damaged file reads as absent.
   */
  load(stream: PartitionedStream, key: string, st: FileStat): CachedPartition | null {
    const hit = this.withFile(stream, key, (fd) => {
      const size = fstatSync(fd).size;
      const bytes = Buffer.alloc(size);
      if (readSync(fd, bytes, 0, size, 0) !== size) return null;
      return decodePersistedParse(bytes, stream, key, st);
    });
    if (hit !== null) this.hits++;
    return hit;
  }

  /** The header of a valid persisted parse of `key` (read alone), or null. */
  protected headerOf(stream: PartitionedStream, key: string, st: FileStat, fd: number): ReturnType<typeof frameLayout<CacheHeader>> | null {
    // headers are parsed once per file as it is (an engine hour's series table is ~200 KB of JSON, and
    // /api/meta and the warm-up plan ask for every hour's)
    const f = fstatSync(fd);
    const file = `${f.ino}:${f.size}:${f.mtimeMs}`;
    const id = `${stream}/${key}`;
    let layout = this.headers.get(id)?.file === file ? this.headers.get(id)!.layout : null;
    if (layout === null) {
      const first = Buffer.alloc(8);
      if (readSync(fd, first, 0, 8, 0) !== 8) return null;
      const head = Buffer.alloc(8 + frameHeaderLength(first));
      if (readSync(fd, head, 0, head.length, 0) !== head.length) return null;
      layout = frameLayout<CacheHeader>(head);
      this.headers.set(id, { file, layout });
    }
    return validHeader(layout.header, stream, key, st) ? layout : null;
  }

  /** `read` over the open persisted file of `key`; null when it is missing or unreadable. */
  protected withFile<T>(stream: PartitionedStream, key: string, read: (fd: number) => T | null): T | null {
    if (!CACHED.has(stream)) return null;
    const path = this.fileOf(stream, key);
    const fd = path === null ? null : this.openFile(path);
    if (fd === null) return null;
    try {
      return read(fd);
    } catch {
      return null;
    } finally {
      closeSync(fd);
    }
  }

  /** Parsed headers by `stream/key`, while their file is unchanged (its inode, size and mtime). */
  private readonly headers = new Map<string, { file: string; layout: ReturnType<typeof frameLayout<CacheHeader>> }>();

  /** Whether a valid persisted parse of `key` exists (reads its header only). */
  has(stream: PartitionedStream, key: string, st: FileStat): boolean {
    return this.covered(stream, key, st) >= 0;
  }

  /** Bytes of the file a valid persisted parse of `key` covers (reads its header only); -1 when there is none. */
  covered(stream: PartitionedStream, key: string, st: FileStat): number {
    return this.withFile(stream, key, (fd) => this.headerOf(stream, key, st, fd)?.header.offset ?? null) ?? -1;
  }
  /** The engine metric names of a persisted engine_series parse (exact, from its header), or null. */
  metricNames(key: string, st: FileStat): string[] | null {
    return this.withFile('engine_series', key, (fd) => {
      const layout = this.headerOf('engine_series', key, st, fd);
      // a file that grew since may have brought new names: only an up-to-date parse answers
      return layout === null || layout.header.offset !== st.size ? null : Object.keys(layout.header.extra.segments as Record<string, unknown>);
    });
  }

  /**
   * The rows of some engine metrics (a view, newline-separated names) from the persisted parse, read
   * as slices: engine_series files persist their rows grouped by metric, so one metric of a long run
   * costs its own bytes only. Rows come back in file order. Null when no valid persisted parse exists.
   */
  loadView(stream: PartitionedStream, key: string, st: FileStat, view: string): CachedPartition | null {
    if (stream !== 'engine_series') return null;
    return this.withFile(stream, key, (fd) => {
      const layout = this.headerOf(stream, key, st, fd);
      if (layout === null) return null;
      const { header, offsets } = layout;
      const segments = header.extra.segments as Record<string, [number, number]>;
      const ranges = (view === '' ? [] : view.split('\n')).map((m) => segments[m]).filter((r): r is [number, number] => r !== undefined);
      let total = 0;
      for (const [a, b] of ranges) total += b - a;
      const read = (name: string): FrameColumn => {
        const info = header.columns.find((c) => c.name === name)!;
        const T = columnArrayType(info.type);
        const out = new T(total);
        const bytes = new Uint8Array(out.buffer);
        let at = 0;
        for (const [a, b] of ranges) {
          const n = (b - a) * T.BYTES_PER_ELEMENT;
          if (readSync(fd, bytes, at, n, offsets[name] + a * T.BYTES_PER_ELEMENT) !== n) throw new Error('short read');
          at += n;
        }
        return out;
      };
      const picked = { ts: read('ts') as Float64Array, series: read('series') as Uint32Array, value: read('value') as Float64Array, row: read('row') as Uint32Array };
      const data: ParsedColumns = { stream, columns: inFileOrder(picked, total, ranges.map(([a, b]) => b - a)), series: header.extra.series as [string, string, string][] };
      this.hits++;
      return { ino: header.ino, result: { data, offset: header.offset, lines: header.lines, view, warnings: [] } };
    });
  }
}

/** The reader's own persisted parses and gpu_util rollups, under `--cache-dir`. */
export class PartitionCache extends PersistedParses {
  private readonly root: string;
  /** Files written (diagnostics and tests). */
  writes = 0;
  /** gpu_util rollups written, and rows folded into them (a grown hour folds only its new rows). */
  rollupWrites = 0;
  rollupRowsFolded = 0;

  /** `cacheDir` may hold caches of several runs: each run's sit under a digest of its `dashboard/` path. */
  constructor(
    readonly cacheDir: string,
    readonly dashboardDir: string,
  ) {
    const root = join(cacheDir, 'telemetry', createHash('sha256').update(dashboardDir).digest('hex').slice(0, 16));
    super((stream, key) => join(root, stream, `${key}.rlc`));
    this.root = root;
  }

  /** Persists a whole-file parse (atomically: a reader never sees half a file). Failures are ignored: the cache is an optimisation. */
  save(stream: PartitionedStream, key: string, ino: number, r: ParseResult, consume = false): void {
    if (!CACHED.has(stream) || r.view !== null) return;
    const path = this.fileOf(stream, key)!;
    const tmp = tempPathBeside(path);
    try {
      mkdirSync(join(this.root, stream), { recursive: true });
      writePieces(tmp, encodePersistedParse(stream, key, { ino, born: this.bornOf(stream, key, ino) }, r, consume));
      renameSync(tmp, path);
      this.writes++;
    } catch {
      rmSync(tmp, { force: true });
    }
    if (r.data.stream === 'gpu_util') this.saveRollup(key, ino, r.offset, r.data.columns, r.data.lanes, r.data.columns.length);
  }

  /** Creation time of hour `key`'s file of `stream` if it is still the file with inode `ino` (0 when unknown). */
  private bornOf(stream: PartitionedStream, key: string, ino: number): number {
    try {
      const st = statSync(join(this.dashboardDir, partitionFile(stream, key)));
      return st.ino === ino ? st.birthtimeMs : 0;
    } catch {
      return 0;
    }
  }

  private rollupPath(key: string): string {
    return join(this.root, 'gpu_util', `${key}.cells.rlc`);
  }

  /**
   * The persisted rollup of gpu_util hour `key` as of `offset` source bytes (any offset when null), or
   * null when there is none for the file's inode. A damaged rollup reads as absent.
   */
  loadRollup(key: string, st: { ino: number; bornMs?: number }, offset: number | null): { cells: GpuUtilCells; offset: number } | null {
    let bytes: Buffer;
    try {
      bytes = readFileSync(this.rollupPath(key));
    } catch {
      return null;
    }
    const r = decodeGpuRollup(bytes, key);
    if (r === null || !describesFile(r.source, st) || (offset !== null && r.source.offset !== offset)) return null;
    return { cells: r.cells, offset: r.source.offset };
  }

  /** Whether a persisted rollup of `key` exists for the file with inode `ino` as it is now (`size` bytes parsed); reads its header only. */
  hasRollup(key: string, st: FileStat): boolean {
    let fd: number;
    try {
      fd = openSync(this.rollupPath(key), 'r');
    } catch {
      return false;
    }
    try {
      const first = Buffer.alloc(8);
      if (readSync(fd, first, 0, 8, 0) !== 8) return false;
      const head = Buffer.alloc(8 + frameHeaderLength(first));
      if (readSync(fd, head, 0, head.length, 0) !== head.length) return false;
      const h = frameLayout<GpuRollupHeader & { key: string; ino: number; born?: number; offset: number }>(head).header;
      return h.key === key && describesFile({ ...h, born: Number(h.born) || 0 }, st) && h.offset <= st.size && h.version === GPU_ROLLUP_VERSION;
    } catch {
      return false;
    } finally {
      closeSync(fd);
    }
  }

  /**
   * Persists the rollup of hour `key` (parsed up to `offset`, `rows` rows). When a rollup of the same
   * file exists for a prefix of these rows, only the rows after it are folded in (a grown hour is
   * extended, not redone); a replaced file's rollup is rebuilt. `hi` is the hour's end.
   */
  saveRollup(key: string, ino: number, offset: number, columns: GpuUtilColumns, lanes: readonly (readonly [string, number])[], rows: number, prev?: GpuUtilCells | null): GpuUtilCells | null {
    const rowsIn = { ...rowsOfColumns(columns), length: rows };
    const lo = hourStart(key);
    if (lo === null) return null;
    const born = this.bornOf('gpu_util', key, ino);
    let base = prev ?? this.loadRollup(key, { ino, bornMs: born }, null)?.cells ?? null;
    if (base !== null && !extendable(base, rowsIn, lo, lo + 3600)) base = null;
    const from = base?.rows ?? 0;
    const cells = foldGpuUtilRows(base, rowsIn, lanes, lo, lo + 3600, from);
    if (cells !== null) this.rollupRowsFolded += cells.rows - from;
    if (cells === null) {
      rmSync(this.rollupPath(key), { force: true });
      return null;
    }
    const path = this.rollupPath(key);
    const tmp = tempPathBeside(path);
    try {
      mkdirSync(join(this.root, 'gpu_util'), { recursive: true });
      writeFileSync(tmp, encodeGpuRollup(cells, { key, ino, born, offset }));
      renameSync(tmp, path);
      this.rollupWrites++;
    } catch {
      rmSync(tmp, { force: true });
    }
    return cells;
  }

  /**
   * Rows `[from, to)` of the persisted gpu_util parse of `key` (read as slices of its columns), lane
   * ids indexing the returned `lanes`; null when no persisted parse of the file as it is holds them.
   */
  gpuRows(key: string, st: FileStat, from: number, to: number): { rows: GpuUtilRowsIn; lanes: [string, number][] } | null {
    return this.withFile('gpu_util', key, (fd) => {
      const layout = this.headerOf('gpu_util', key, st, fd);
      if (layout === null || !(to <= layout.header.length) || !(from <= to)) return null;
      const n = to - from;
      const read = (name: string): FrameColumn | undefined => {
        const info = layout.header.columns.find((c) => c.name === name);
        if (info === undefined) return undefined;
        const T = columnArrayType(info.type);
        const out = new T(n);
        const bytes = new Uint8Array(out.buffer);
        const len = n * T.BYTES_PER_ELEMENT;
        if (len > 0 && readSync(fd, bytes, 0, len, layout.offsets[name] + from * T.BYTES_PER_ELEMENT) !== len) throw new Error('short read');
        return out;
      };
      const rows: GpuUtilRowsIn = {
        length: n,
        ts: read('ts') as Float64Array,
        lane: read('lane') as Uint16Array,
        util: read('util') as Uint8Array | Float64Array,
        memPower: read('memPower') as Uint32Array | undefined,
        mem: read('mem') as Float64Array | undefined,
        power: read('power') as Float64Array | undefined,
      };
      return { rows, lanes: layout.header.extra.lanes as [string, number][] };
    });
  }
}
