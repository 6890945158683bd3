// Parsed partitions persisted under `--cache-dir`, so no hour of history is parsed twice: each file's
// columns (exactly what a parse thread hands over) as one columnar frame, keyed by the source file's
// identity (inode) and the byte offset parsed to. A file that grew since is extended from that offset,
// a replaced or shortened one is parsed again; the cache is never trusted past what it recorded.
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { decodeFrame, encodeFrame, type FrameColumn } from '../../formats/columnFrame.ts';
import type { FileStat } from './io.ts';
import type { ParsedColumns, ParseResult } from './parseJob.ts';
import type { PartitionedStream } from './records.ts';

/** Bumped whenever the persisted layout or a parser's output changes: older files are ignored. */
export const PARTITION_CACHE_VERSION = 1;

/** Streams persisted (the low-volume record streams are cheap to parse and are not). */
const CACHED: ReadonlySet<PartitionedStream> = new Set(['gpu_util', 'engine_series', 'phases']);

interface CacheHeader {
  version: number;
  stream: PartitionedStream;
  key: string;
  ino: number;
  /** Bytes of the source file parsed (complete lines), and lines consumed. */
  offset: number;
  lines: number;
  warnings: [number, string][];
  length: number;
  tsMin: number | null;
  tsMax: number | null;
  /** Stream extras: the id tables the columns refer to, counts. */
  extra: Record<string, unknown>;
}

export interface CachedPartition {
  result: ParseResult;
  ino: number;
}

export class PartitionCache {
  private readonly root: string;
  /** Loads served and files written (diagnostics and tests). */
  hits = 0;
  writes = 0;

  /** `cacheDir` may hold caches of several runs: each run's sit under a digest of its `dashboard/` path. */
  constructor(cacheDir: string, dashboardDir: string) {
    const digest = createHash('sha256').update(dashboardDir).digest('hex').slice(0, 16);
    this.root = join(cacheDir, 'telemetry', digest);
  }

  handles(stream: PartitionedStream): boolean {
    return CACHED.has(stream);
  }

  private pathOf(stream: PartitionedStream, key: string): string {
    return join(this.root, stream, `${key}.rlc`);
  }

  /**
   * The persisted parse of `key` if it belongs to the file as it is now (same inode, not longer than
   * the file); null otherwise. A damaged cache file reads as absent.
   */
  load(stream: PartitionedStream, key: string, st: FileStat): CachedPartition | null {
    if (!CACHED.has(stream)) return null;
    let bytes: Buffer;
    try {
      bytes = readFileSync(this.pathOf(stream, key));
    } catch {
      return null;
    }
    try {
      const { header, columns } = decodeFrame<CacheHeader>(bytes);
      if (header.version !== PARTITION_CACHE_VERSION || header.stream !== stream || header.key !== key) return null;
      if (header.ino !== st.ino || header.offset > st.size) return null;
      const data = unpack(stream, header, columns);
      this.hits++;
      return { ino: header.ino, result: { data, offset: header.offset, lines: header.lines, view: null, warnings: header.warnings } };
    } catch {
      return null;
    }
  }

  /** Persists a whole-file parse (atomically: a reader never sees half a file). Failures are ignored: the cache is an optimisation. */
  save(stream: PartitionedStream, key: string, ino: number, r: ParseResult): void {
    if (!CACHED.has(stream) || r.view !== null) return;
    const { extra, columns } = pack(r.data);
    const header: CacheHeader = {
      version: PARTITION_CACHE_VERSION,
      stream,
      key,
      ino,
      offset: r.offset,
      lines: r.lines,
      warnings: r.warnings,
      length: (r.data as { columns?: { length: number } }).columns?.length ?? 0,
      tsMin: null,
      tsMax: null,
      extra,
    };
    const c = (r.data as { columns?: { tsMin: number; tsMax: number } }).columns;
    if (c) {
      header.tsMin = Number.isFinite(c.tsMin) ? c.tsMin : null;
      header.tsMax = Number.isFinite(c.tsMax) ? c.tsMax : null;
    }
    const path = this.pathOf(stream, key);
    const tmp = `${path}.${process.pid}.tmp`;
    try {
      mkdirSync(join(this.root, stream), { recursive: true });
      writeFileSync(tmp, encodeFrame(header as unknown as Record<string, unknown>, columns));
      renameSync(tmp, path);
      this.writes++;
    } catch {
      rmSync(tmp, { force: true });
    }
  }
}

function pack(d: ParsedColumns): { extra: Record<string, unknown>; columns: [string, FrameColumn][] } {
  if (d.stream === 'gpu_util' || d.stream === 'engine_series' || d.stream === 'phases') {
    const columns = Object.entries(d.columns.cols as Record<string, FrameColumn>).map(([n, c]) => [n, c.subarray(0, d.columns.length)] as [string, FrameColumn]);
    if (d.stream === 'gpu_util') return { extra: { lanes: d.lanes }, columns };
    if (d.stream === 'engine_series') return { extra: { series: d.series }, columns };
    columns.push(['gpuList', d.columns.gpuList.subarray(0, d.columns.gpuLen)]);
    return { extra: { strings: d.strings, openCount: d.columns.openCount }, columns };
  }
  throw new Error(`${d.stream} is not persisted`);
}

function unpack(stream: PartitionedStream, h: CacheHeader, columns: Record<string, FrameColumn>): ParsedColumns {
  const base = { length: h.length, tsMin: h.tsMin ?? NaN, tsMax: h.tsMax ?? NaN };
  const cols = { ...columns };
  if (stream === 'gpu_util') return { stream, columns: { ...base, cols: cols as any }, lanes: h.extra.lanes as [string, number][] };
  if (stream === 'engine_series') return { stream, columns: { ...base, cols: cols as any }, series: h.extra.series as [string, string, string][] };
  if (stream === 'phases') {
    const gpuList = cols.gpuList as Int32Array;
    delete cols.gpuList;
    return { stream, columns: { ...base, cols: cols as any, openCount: h.extra.openCount as number, gpuLen: gpuList.length, gpuList }, strings: h.extra.strings as string[] };
  }
  throw new Error(`${stream} is not persisted`);
}
