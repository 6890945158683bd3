// The parsed columns of engine_series and phases hours a writer of the partitions keeps (the collector,
// the synthetic run): as it appends an hour's lines it
// parses them with the reader's own parsers and writes the hour's columns beside the partition, in the
// form the reader's partition cache holds (`{stream}/{hour}.cols.rlc`), so a server over a collected run
// reads columns instead of parsing the hours' JSONL. The rules are the gpu_util rollups' (gpuRollups.ts):
// each file names the partition by inode and creation time and the bytes it covers; an hour this process
// did not write from its first byte, or one another writer also appended to, gets none.
// Only the growing (newest) hour's columns stay in memory: an older hour is written once and let go; if
// lines still arrive for it, its columns are read back from the file written.
import type { EngineSeriesBlock, EngineSeriesColumns } from './engineSeriesBlock.ts';
import { EngineSeriesTable, StringTable } from './interning.ts';
import { decodePersistedParse, encodePersistedParse } from './colsFile.ts';
import type { ParsedColumns } from './parsedColumns.ts';
import type { PhaseBlock } from './phaseBlock.ts';
import { type ColumnsKind, engineSeriesColumnsKind, phaseColumnsKind } from './columnsKind.ts';
import type { HourBlock } from './hourBlock.ts';
import { columnsFile, hourStart, HOUR_SECONDS, type ColumnsStream } from '../dashboard/index.ts';
import { type RollupFs, writeChangedHours } from './gpuRollupWriter.ts';

/** What the columns need of the collector's file system: the rollups' operations and reading back a file written. */
export interface ColumnsFs extends RollupFs {
  /** The bytes of `rel` (relative to the dashboard directory); throws when it cannot be read. */
  read(rel: string): Uint8Array;
}

/** How one stream's hour is parsed, handed over and taken back. */
interface HourKind<B extends { length: number }> {
  create(key: string, lo: number): B;
  /** Parses complete lines `data` into `block`; returns the lines consumed. */
  parse(data: Uint8Array, block: B, firstLine: number, bad: () => void): number;
  /** The columns a reader's parse of the same lines hands over (ids into this process's tables). */
  export(block: B): ParsedColumns;
  /** A block over columns read back from a file this process wrote. */
  adopt(key: string, lo: number, data: ParsedColumns): B;
}

interface HourState<B> {
  ino: number;
  born: number;
  /** Bytes of the partition parsed (all of it this process appended), and lines. */
  bytes: number;
  lines: number;
  /** The parsed rows; null once written and let go (read back from the file if the hour grows again). */
  block: B | null;
  dirty: boolean;
  writtenAt: number;
  /** The hour gets no file (not written from its start by this process, or a line did not parse). */
  broken: boolean;
}

/** The collector's view of the reader's own kind of a columnar stream (one hour per block). */
function hourKind<B extends HourBlock>(kind: ColumnsKind<B>, exportBlock = kind.export): HourKind<B> {
  return {
    create: (key, lo) => kind.create(key, lo, lo + HOUR_SECONDS, 1024),
    parse: (data, block, firstLine, bad) => kind.parse(data, 0, data.length, block, firstLine, bad),
    export: exportBlock,
    adopt: (key, lo, d) => kind.adopt(key, lo, lo + HOUR_SECONDS, d),
  };
}

function engineKind(): HourKind<EngineSeriesBlock> {
  const table = new EngineSeriesTable();
  // the growing block is handed over as views over its live rows (`columns()` would trim it, only for it to grow again)
  return hourKind(engineSeriesColumnsKind(table), (block) => ({
    stream: 'engine_series',
    columns: { length: block.length, tsMin: block.tsMin, tsMax: block.tsMax, cols: { ts: block.ts, series: block.series, value: block.value } as EngineSeriesColumns['cols'] },
    series: table.rows(),
  }));
}

const phaseKind = (): HourKind<PhaseBlock> => hourKind(phaseColumnsKind(new StringTable()));

/** The parsed columns of one stream's hours, written beside the partitions this collector writes. */
export class CollectorHourColumns {
  private readonly hours = new Map<string, HourState<{ length: number }>>();
  private readonly kind: HourKind<{ length: number }>;
  /** Files written, lines parsed, and hours read back from their file (diagnostics, tests). */
  writes = 0;
  linesParsed = 0;
  reloads = 0;

  constructor(
    readonly stream: ColumnsStream,
    private readonly fs: ColumnsFs,
    private readonly now: () => number,
  ) {
    this.kind = (stream === 'engine_series' ? engineKind() : phaseKind()) as unknown as HourKind<{ length: number }>;
  }

  /**
   * `data` (complete lines) was appended to hour `key`'s partition at byte `start`; `file` is the file's
   * identity (null when the file system cannot tell: no columns).
   */
  appended(key: string, start: number, data: Uint8Array, file: { ino: number; born: number } | null): void {
    let h = this.hours.get(key);
    if (h === undefined) {
      h = { ino: file?.ino ?? -1, born: file?.born ?? 0, bytes: 0, lines: 0, block: null, dirty: false, writtenAt: -Infinity, broken: false };
      this.hours.set(key, h);
      // an hour begun before this process (a restart): its earlier lines are not at hand
      if (start !== 0 || file === null) return this.drop(key, h);
    }
    if (h.broken) return;
    if (start !== h.bytes || file === null || file.ino !== h.ino || file.born !== h.born) return this.drop(key, h);
    const lo = hourStart(key);
    if (lo === null) return this.drop(key, h);
    if (h.block === null) h.block = h.bytes === 0 ? this.kind.create(key, lo) : this.readBack(key, lo, h);
    if (h.block === null) return this.drop(key, h);
    let bad = 0;
    const n = this.kind.parse(data, h.block, h.lines + 1, () => bad++);
    // a line the reader would skip (or warn about) makes the hour the reader's to parse
    if (bad > 0) return this.drop(key, h);
    h.lines += n;
    this.linesParsed += n;
    h.bytes = start + data.length;
    h.dirty = true;
  }

  /** Writes the hours that changed (see `writeChangedHours`), then lets the rows of every hour done growing go. */
  write(final = false): void {
    writeChangedHours(
      this.hours,
      this.now(),
      final,
      (h) => h.block !== null,
      (key, h) => {
        const data = this.kind.export(h.block!);
        this.fs.replace(columnsFile(this.stream, key), encodePersistedParse(this.stream, key, { ino: h.ino, born: h.born }, { data, offset: h.bytes, lines: h.lines, view: null, warnings: [] }));
        this.writes++;
      },
      (h, done) => {
        if (done) h.block = null;
      },
    );
  }

  /** Hours whose rows are held (the growing ones), for tests and diagnostics. */
  resident(): string[] {
    return [...this.hours].filter(([, h]) => h.block !== null).map(([k]) => k);
  }

  /** The rows of an hour written and let go, read back from its file (null when it no longer describes what was appended). */
  private readBack(key: string, lo: number, h: HourState<{ length: number }>): { length: number } | null {
    let bytes: Uint8Array;
    try {
      bytes = this.fs.read(columnsFile(this.stream, key));
    } catch {
      return null;
    }
    const r = decodePersistedParse(bytes, this.stream, key, { ino: h.ino, bornMs: h.born, size: h.bytes, mtimeMs: 0 });
    if (r === null || r.result.offset !== h.bytes || r.result.lines !== h.lines) return null;
    this.reloads++;
    try {
      return this.kind.adopt(key, lo, r.result.data);
    } catch {
      return null;
    }
  }

  private drop(key: string, h: HourState<{ length: number }>): void {
    h.broken = true;
    h.block = null;
    try {
      this.fs.remove(columnsFile(this.stream, key));
    } catch {
      /* a stale file names bytes the partition no longer matches: the reader ignores it */
    }
  }
}
