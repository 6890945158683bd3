// Where each telemetry stream lives under `{dump-details}/dashboard/`: the one definition of the
// directory layout that the writers (collector, demo) and the reader share.

/** Streams kept in hourly files `{stream}/{YYYYMMDD_HH}.jsonl`. */
export const PARTITIONED_STREAMS = ['gpu_util', 'engine_series', 'phases', 'trajectories', 'gpu_processes'] as const;
/** Streams kept in one append-only file `{stream}.jsonl`. */
export const FLAT_STREAMS = ['metrics', 'topology', 'data_buffer'] as const;
export const STREAMS = [...FLAT_STREAMS, ...PARTITIONED_STREAMS] as const;
export type PartitionedStream = (typeof PARTITIONED_STREAMS)[number];
export type FlatStream = (typeof FLAT_STREAMS)[number];
export type StreamName = PartitionedStream | FlatStream;

export function isStreamName(s: string): s is StreamName {
  return (STREAMS as readonly string[]).includes(s);
}

export function isPartitioned(s: StreamName): s is PartitionedStream {
  return (PARTITIONED_STREAMS as readonly string[]).includes(s);
}

/** The directory under `{dump-details}` that holds the telemetry. */
export const DASHBOARD_DIR = 'dashboard';
/** Run header, rewritten by every collector start. */
export const META_FILE = 'meta.json';
export const LANE_CATALOG_FILE = 'lane_catalog.json';
/** Written beside the catalog and renamed over it, so a reader never sees half a catalog. */
export const LANE_CATALOG_TMP = 'lane_catalog.json.tmp';
/** The collector's address and token (mode 0600); never served. */
export const COLLECTOR_FILE = 'collector.json';
/** The collector's write-ahead log (segments and the flush mark; never read by a server). */
export const WAL_DIR = 'wal';
/** Read-side caches (the reader's, never a stream). */
export const CACHE_DIR = 'cache';

export const HOUR_SECONDS = 3600;
const JSONL = '.jsonl';

/** `{stream}.jsonl`: a flat stream's file, and the legacy v1 flat file of a partitioned stream. */
export function flatFile(stream: StreamName): string {
  return stream + JSONL;
}

/** `{stream}/{key}.jsonl`, relative to the dashboard directory. */
export function partitionFile(stream: PartitionedStream, key: string): string {
  return `${stream}/${key}${JSONL}`;
}

/**
 * `gpu_util/{key}.cells.rlc`: rlsight's rollup of a gpu_util hour, written by its collector beside the
 * partition (a columnar frame; the reference reads only `*.jsonl` and ignores it).
 */
export function gpuRollupFile(key: string): string {
  return `gpu_util/${key}.cells.rlc`;
}

/** Streams whose hours rlsight's collector also writes as parsed columns beside the partition. */
export const COLUMNS_STREAMS = ['engine_series', 'phases'] as const;
export type ColumnsStream = (typeof COLUMNS_STREAMS)[number];

export function isColumnsStream(s: string): s is ColumnsStream {
  return (COLUMNS_STREAMS as readonly string[]).includes(s);
}

/**
 * `{stream}/{key}.cols.rlc`: rlsight's parsed columns of an engine_series or phases hour, written by its
 * collector beside the partition (the frame a reader's partition cache holds for that hour; the
 * reference reads only `*.jsonl` and ignores it).
 */
export function columnsFile(stream: ColumnsStream, key: string): string {
  return `${stream}/${key}.cols.rlc`;
}

/** The partition key of a file name in a stream's directory (`20250821_18.jsonl` → `20250821_18`), or null. */
export function partitionKeyOf(fileName: string): string | null {
  return fileName.endsWith(JSONL) && fileName.length > JSONL.length ? fileName.slice(0, -JSONL.length) : null;
}

/** UTC hour key `YYYYMMDD_HH` of an epoch-seconds timestamp: `time.strftime("%Y%m%d_%H", time.gmtime(ts))`. */
export function hourKey(ts: number): string {
  const d = new Date(Math.floor(ts) * 1000);
  const p = (n: number, w = 2): string => String(n).padStart(w, '0');
  return `${p(d.getUTCFullYear(), 4)}${p(d.getUTCMonth() + 1)}${p(d.getUTCDate())}_${p(d.getUTCHours())}`;
}

/** Start (epoch seconds) of the hour named by a `YYYYMMDD_HH` key, or null if the key is not one. */
export function hourStart(key: string): number | null {
  const m = /^(\d{4})(\d{2})(\d{2})_(\d{2})$/.exec(key);
  if (!m) return null;
  return Date.UTC(+m[1], +m[2] - 1, +m[3], +m[4]) / 1000;
}

/** `t1` of a phase still running. */
export const OPEN_T1 = -1.0;

/** Partition timestamp of a phase: `t1` when closed, `t0` for an open marker (filed by its start). */
export function phasePartitionTs(e: { t0: number; t1: number }): number {
  return e.t1 === OPEN_T1 ? e.t0 : e.t1;
}

/** The timestamp that files a record of a partitioned stream into its hour. */
export function partitionTs(stream: PartitionedStream, record: { ts?: number; t0?: number; t1?: number }): number {
  return stream === 'phases' ? phasePartitionTs(record as { t0: number; t1: number }) : (record.ts as number);
}
