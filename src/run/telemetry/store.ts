// The telemetry store of one run's `dashboard/` directory: flat streams parsed eagerly, hourly
// partitions parsed lazily into columnar blocks, everything tailed by byte offset through `follow()`.
//
// How queries reach the data (all ids are store-wide and stable for the store's life):
// * lane index ............ `laneIndex()` → `LaneEntry[]` sorted by (node string, gpu), `index` = position;
//                           `laneIndexVersion` changes whenever it does.
// * gpu_util rows ......... `gpuUtilBlocks(t0, t1, laneKeys?)` → `GpuUtilBlock[]` (one per hour file overlapping the
//                           window, legacy flat file first; rows NOT filtered by ts). Per block:
//                           `ts: Float64Array`, `lane: Uint16Array` (lane id → `lanes.node(id)`,
//                           `lanes.gpu(id)`, `lanes.key(id)`; `lanes.find(node, gpu)` the reverse),
//                           `util: Uint8Array | Float64Array`, `memMb(i)`, `powerW(i)`, `length`,
//                           `tsMin`/`tsMax`, `laneRows()` (rows grouped per lane id, cached per length).
//                           Passing lane keys reads cold hours selectively (a few lanes of a big run
//                           cost a fraction of a whole parse); rows of other lanes may still be present.
// * engine_series rows .... `engineSeriesBlocks(t0, t1, metrics?)` → `EngineSeriesBlock[]`: `ts`, `series:
//                           Uint32Array`, `value: Float64Array`; `engineSeries.key(seriesId)` →
//                           `{addr, metric, labelsJson, addrId, metricId, labelsId}` (`labelsJson` =
//                           `JSON.stringify(labels)` in file key order, nulls dropped);
//                           `engineSeries.metrics.find(name)` → metric id or -1. Passing `metrics`
//                           reads cold hours selectively (much faster for one series over a long run);
//                           rows of other metrics may still be present, so filter by metric id.
// * phase events .......... `phaseEvents(t0, t1)` → raw `PhaseEvent[]` (open markers included, window
//                           `(-inf, t1 + 4 h]` since phases are filed by end hour), or `phaseBlocks(t0, t1)`
//                           for the columnar form (`PhaseBlock`, strings via `strings.str(id)`).
// * engine metric names ... `engineMetricsPresent()` → distinct raw metric names without parsing blocks
//                           (exact for resident hours, first/last MiB of the others).
// * trajectory events ..... `trajectoryEvents(t0, t1)` → `TrajectoryEvent[]` with `t0 <= ts <= t1`, file order.
// * gpu_processes rows .... `gpuProcessRows(t0, t1)` → `GpuProcessSample[]` with `t0 <= ts <= t1`, file order.
// * time range ............ `timeRange()` → `[min, max] | null` (flat records + partition edge stamps).
// * topology windows ...... `topologyWindows()` → `[{t0, t1, engines}]`, last `t1 = null`.
// * meta .................. `meta()` → `RunMeta | null`.
// * cache keys ............ `streamVersion(stream)` changes whenever that stream's data may have changed;
//                           blocks only ever grow at their end (until evicted), so a per-block cache
//                           keyed on `(block object, block.length)` stays valid. A selectively read
//                           block has `view` set (the lanes/metrics it holds); whole blocks have
//                           `view === null` — never key a cache on `block.key` alone.
import { join } from 'node:path';
import type { EngineSeriesBlock } from '../../formats/columns/engineSeriesBlock.ts';
import { FlatStreams } from './flatStreams.ts';
import type { GpuUtilBlock } from '../../formats/columns/gpuUtilBlock.ts';
import { GpuUtilHours, type GpuUtilHour } from './gpuUtilHours.ts';
export { rowsOfBlock } from './gpuUtilHours.ts';
import { EngineSeriesTable, LaneTable, StringTable } from '../../formats/columns/interning.ts';
import type { TelemetryIo } from './io.ts';
import { nodeIo } from './io.ts';
import { LaneIndex } from './laneIndex.ts';
import { MemoryBudget } from './memoryBudget.ts';
import { EngineMetricPresence } from './metricPresence.ts';
import { PartitionCache, PersistedParses, openThrough } from './partitionCache.ts';
import { COLLECTOR_FILE, FLAT_STREAMS, WAL_DIR, columnsFile, flatFile, gpuRollupFile, isColumnsStream } from '../../formats/dashboard/layout.ts';
import { WARMED, WarmUp, type WarmUpProgress } from './warmUp.ts';
import type { FoldedView, WarmedStream } from './records.ts';
import type { PartitionReaders } from './partitionKinds.ts';
import { partitionReaders } from './partitionKinds.ts';
import type { PartitionReader } from './partitionReader.ts';
import type { PhaseBlock } from '../../formats/columns/phaseBlock.ts';
import { ParsePool, defaultParseWorkers } from './parsePool.ts';
import { UnterminatedTails } from './unterminated.ts';
import { foreground } from '../foreground.ts';
import type {
  DataBufferSample,
  GpuProcessSample,
  LaneEntry,
  MetricsRecord,
  PartitionedStream,
  PhaseEvent,
  RunMeta,
  StreamName,
  TelemetryWarning,
  TopologySnapshot,
  TopologyWindow,
  TrajectoryEvent,
} from './records.ts';
import { PARTITION_CACHE_BLOCKS, PHASE_LOOKAHEAD_S } from './records.ts';

export type { PartitionFile } from './partitionListing.ts';
export type { GpuUtilHour, GpuUtilRows } from './gpuUtilHours.ts';
export type { GpuUtilCells } from '../../formats/columns/gpuUtilRollup.ts';
export { UTIL_CELL_S, rowMem, rowPower } from '../../formats/columns/gpuUtilRollup.ts';
export { GpuUtilBlock } from '../../formats/columns/gpuUtilBlock.ts';
export { EngineSeriesBlock } from '../../formats/columns/engineSeriesBlock.ts';
export { PhaseBlock } from '../../formats/columns/phaseBlock.ts';
export { RecordBlock } from '../../formats/columns/recordBlock.ts';
export { EngineSeriesTable, LaneTable, StringTable } from '../../formats/columns/interning.ts';
export type { EngineSeriesKey } from '../../formats/columns/interning.ts';
export * from './records.ts';

export interface TelemetryStoreOptions {
  /** Parsed partition blocks kept per stream (LRU); default 24. */
  cacheBlocks?: number;
  /**
   * Worker threads that parse cold hour files alongside the main thread (default: one per core, at most
   * 2). They start only once the partitions hold `parallelFromBytes` (default 256 MiB).
   */
  parseWorkers?: number;
  parallelFromBytes?: number;
  /**
   * While the warm-up runs, a whole-window answer whose unread hours hold fewer bytes than this reads them
   * and answers complete (a moment's parse) instead of answering partial (default `PARTIAL_FROM_BYTES`).
   */
  partialFromBytes?: number;
  /** The file operations (default: the real file system); tests hand in one they control. */
  io?: TelemetryIo;
  /** Where parsed partitions persist across processes (never inside the run); default: nowhere. */
  cacheDir?: string;
  /** Bytes the raw partition columns of all streams may hold together (default `DEFAULT_MEMORY_BUDGET`). */
  memoryBudget?: number;
}

/** The parse threads boot ahead of need this long after the store opens (sooner once a first request is answered), at the first lull of POOL_BOOT_QUIET_MS. */
const POOL_BOOT_LATEST_MS = 1000;
/** How long no request must have been in flight before the parse threads boot ahead of need. */
const POOL_BOOT_QUIET_MS = 100;

/** Unread bytes from which a whole-window answer asked during the warm-up is partial: ~0.1 s of parsing below it. */
export const PARTIAL_FROM_BYTES = 32 * 2 ** 20;

/**
 * Default byte budget of the resident raw columns: two whole gpu_util hours of 1,024 GPUs as they are held
 * (about 140 MiB with their per-lane row index) fit beside the run's 10-s rollup cells, so an hour's window
 * and a whole-run pass do not push each other out (each re-read leaves the pushed-out hour's columns as
 * garbage beside the new ones until a collection), and the rest of a server keeps its share of 512 MiB.
 */
export const DEFAULT_MEMORY_BUDGET = 160 * 2 ** 20;

/** What one `follow()` (or the initial load) brought in: what a live client should be told. */
export interface FollowReport {
  /** New records/rows parsed: flat streams plus appended rows of resident blocks. */
  rows: number;
  /** The same, per stream. */
  byStream: Partial<Record<StreamName, number>>;
  /** Partition files that appeared (they stay unparsed until a query needs them). */
  newPartitions: { stream: PartitionedStream; key: string }[];
  newMetricKeys: string[];
  newStepKeys: string[];
  /** Lanes whose `(node, gpu)` was not in the lane index before. */
  newLanes: LaneEntry[];
  /** The lane index changed in any way (new lane, rank, role or engine). */
  lanesChanged: boolean;
  topologyChanged: boolean;
  metaChanged: boolean;
  timeRange: [number, number] | null;
  /** `timeRange` differs from the one before this follow. */
  timeRangeChanged: boolean;
  /** Warnings (skipped lines) found by this follow. */
  warnings: TelemetryWarning[];
}

export class TelemetryStore {
  /** The `dashboard/` directory this store reads. */
  readonly dir: string;
  private readonly io: TelemetryIo;
  /** Interned phase names, nodes and roles (ids in `PhaseBlock` columns). */
  readonly strings = new StringTable();
  /** Lane ids of `GpuUtilBlock.lane`. */
  readonly lanes = new LaneTable();
  /** Series ids of `EngineSeriesBlock.series`. */
  readonly engineSeries = new EngineSeriesTable();
  readonly partitions: PartitionReaders;

  private readonly flat: FlatStreams;
  private readonly budget: MemoryBudget;
  private readonly warm: WarmUp | null;
  private readonly laneIdx: LaneIndex;
  private readonly metricPresence: EngineMetricPresence;
  private readonly gpuHours: GpuUtilHours;
  private range: [number, number] | null = null;
  private readonly warningList: TelemetryWarning[] = [];
  private readonly warningSeen = new Set<string>();
  private pendingWarnings: TelemetryWarning[] = [];
  private readonly tails: UnterminatedTails;
  /** `follow()` calls so far: more than the one at open means the run is followed (live). */
  private follows = 0;
  private versions = new Map<StreamName, number>();
  private pool: ParsePool | null = null;
  /** The partitions are big enough for parse threads to pay (they start on first use). */
  private poolWanted = false;
  private readonly parseWorkers: number;
  private readonly parallelFromBytes: number;
  private readonly partialFromBytes: number;

  private constructor(dashboardDir: string, opts: TelemetryStoreOptions = {}) {
    this.dir = dashboardDir;
    const io = opts.io ?? nodeIo;
    this.io = io;
    this.parseWorkers = opts.parseWorkers ?? defaultParseWorkers();
    this.parallelFromBytes = opts.parallelFromBytes ?? 256 * 2 ** 20;
    this.partialFromBytes = opts.partialFromBytes ?? PARTIAL_FROM_BYTES;
    const warn = (file: string, line: number, message: string): void => this.warn(file, line, message);
    this.partitions = partitionReaders(dashboardDir, this, io, warn, opts.cacheBlocks ?? PARTITION_CACHE_BLOCKS);
    const budget = new MemoryBudget(opts.memoryBudget ?? DEFAULT_MEMORY_BUDGET);
    const disk = opts.cacheDir ? new PartitionCache(opts.cacheDir, dashboardDir) : null;
    // the parsed columns rlsight's collector writes beside engine_series and phases hours (read only)
    const collectorParses = new PersistedParses((stream, key) => (isColumnsStream(stream) ? join(dashboardDir, columnsFile(stream, key)) : null), openThrough(io));
    for (const r of Object.values(this.partitions) as PartitionReader<any>[]) {
      r.budget = budget;
      r.diskCache = disk;
      r.runParses = collectorParses;
    }
    this.budget = budget;
    this.warm =
      disk === null
        ? null
        : new WarmUp(
            this.partitions as unknown as Record<PartitionedStream, PartitionReader<any>>,
            disk,
            io,
            () => this.ensurePool(),
            (f) => this.gpuHours.rollUp(f),
            // a gpu_util hour the collector rolled up answers from its cells (and the rows a window cuts) unparsed
            (stream, f) => stream === 'gpu_util' && io.stat(join(dashboardDir, gpuRollupFile(f.key))) !== null,
          );
    this.flat = new FlatStreams(dashboardDir, io, warn);
    this.tails = new UnterminatedTails(io, () => this.now());
    const p = this.partitions;
    this.laneIdx = new LaneIndex(dashboardDir, io, warn, {
      lanes: this.lanes,
      strings: this.strings,
      topologySnapshots: () => this.flat.topologySnapshots(),
      gpuFiles: () => p.gpu_util.files(),
      gpuBlock: (f) => p.gpu_util.block(f),
      phaseFiles: () => p.phases.files(),
      phaseBlock: (f) => p.phases.block(f),
    });
    this.metricPresence = new EngineMetricPresence(p.engine_series, this.engineSeries, io);
    this.gpuHours = new GpuUtilHours(dashboardDir, p.gpu_util, this.lanes, io, disk, budget);
  }

  /**
   * Opens a run's `dashboard/` directory: reads `meta.json`, `lane_catalog.json` and the three flat
   * streams, lists the partitions and reads their edge lines. No partition is parsed. A missing
   * directory is an empty store.
   */
  static open(dashboardDir: string, opts: TelemetryStoreOptions = {}): TelemetryStore {
    const store = new TelemetryStore(dashboardDir, opts);
    store.follow();
    return store;
  }

  // ---------------------------------------------------------------- follow

  /** The clock the freshness of an unterminated last line is judged by (tests set it). */
  now: () => number = Date.now;

  /**
   * Picks up everything appended since the last call: complete lines of the flat streams, appended
   * bytes of every resident block, new partition files (listed, not parsed), a rewritten `meta.json`
   * or `lane_catalog.json`. Returns what changed.
   */
  follow(): FollowReport {
    const report: FollowReport = {
      rows: 0,
      byStream: {},
      newPartitions: [],
      newMetricKeys: [],
      newStepKeys: [],
      newLanes: [],
      lanesChanged: false,
      topologyChanged: false,
      metaChanged: false,
      timeRange: null,
      timeRangeChanged: false,
      warnings: [],
    };
    const lanesBefore = this.laneIdx.known();
    const rangeBefore = this.range;
    const flat = this.flat.follow();
    report.metaChanged = flat.metaChanged;
    report.newMetricKeys = flat.newMetricKeys;
    report.newStepKeys = flat.newStepKeys;
    for (const [stream, n] of Object.entries(flat.added) as [StreamName, number][]) {
      report.byStream[stream] = n;
      report.rows += n;
      this.bump(stream);
      if (stream === 'topology') report.topologyChanged = true;
    }
    this.laneIdx.readCatalog();
    for (const stream of Object.keys(this.partitions) as PartitionedStream[]) {
      const reader = this.partitions[stream] as PartitionReader<any>;
      const sizes = reader.files().map((f) => `${f.key}:${f.size}`).join(',');
      for (const f of reader.refreshListing()) report.newPartitions.push({ stream, key: f.key });
      const n = reader.refreshCached();
      if (n > 0) {
        report.byStream[stream] = n;
        report.rows += n;
      }
      if (reader.files().map((f) => `${f.key}:${f.size}`).join(',') !== sizes || n > 0) this.bump(stream);
    }
    this.startPoolIfBig();
    if (report.newPartitions.length > 0 || report.rows > 0) this.warm?.replan();
    this.range = this.computeTimeRange();
    report.timeRange = this.range;
    report.timeRangeChanged = !sameRange(rangeBefore, this.range);
    if (lanesBefore !== null || this.laneIdx.hasCatalog()) {
      const after = this.laneIndex();
      if (lanesBefore === null || after !== lanesBefore) {
        const known = new Set((lanesBefore ?? []).map((l) => `${l.node}:${l.gpu}`));
        report.newLanes = after.filter((l) => !known.has(`${l.node}:${l.gpu}`));
        // laneIndex() keeps its entries object while the content is equal, so a new object is a change.
        report.lanesChanged = lanesBefore === null ? after.length > 0 : true;
      }
    }
    // Only a store read once (not followed) reports unterminated last lines; a followed one reads them once they end.
    if (++this.follows === 1) this.checkTails();
    report.warnings = this.pendingWarnings;
    this.pendingWarnings = [];
    return report;
  }

  /** Looks at the end of every stream file: a read of its last byte when it ends with a newline. */
  private checkTails(): void {
    const paths = new Set<string>();
    for (const stream of FLAT_STREAMS) {
      const path = join(this.dir, flatFile(stream));
      paths.add(path);
      this.tails.check(path, flatFile(stream), this.flat.linesRead(stream) + 1);
    }
    for (const reader of Object.values(this.partitions) as PartitionReader<any>[]) {
      for (const f of reader.files()) {
        paths.add(f.path);
        this.tails.check(f.path, f.rel, 0, f.size);
      }
    }
    this.tails.keep(paths);
  }

  /** Wants the parse workers (started on first use) once the partitions are big enough for parallel cold reads to pay. */
  private startPoolIfBig(): void {
    if (this.poolWanted || this.parseWorkers <= 0) return;
    let bytes = 0;
    for (const r of Object.values(this.partitions) as PartitionReader<any>[]) for (const f of r.files()) bytes += f.size;
    if (bytes < this.parallelFromBytes) return;
    this.poolWanted = true;
    for (const r of Object.values(this.partitions) as PartitionReader<any>[]) r.poolSource = () => this.ensurePool();
    // hours still to parse (no cache, or one the warm-up has not filled): the threads boot once the first answer
    // is out (a server's start keeps both cores), ready for the window reads after it; over a filled cache they
    // start only if a read needs them (a thread's memory is not spent for nothing)
    if (this.warm !== null && !this.warm.progress().running) return;
    const opened = performance.now();
    const boot = (): void => {
      // never while requests are being asked: they need the cores now (a read of its own boots them at once)
      if (foreground.quietForMs() >= POOL_BOOT_QUIET_MS && (foreground.answeredAny() || performance.now() - opened >= POOL_BOOT_LATEST_MS)) this.ensurePool();
      else setTimeout(boot, 5).unref();
    };
    setTimeout(boot, 0).unref();
  }

  private ensurePool(): ParsePool | null {
    if (this.pool === null && this.poolWanted) this.pool = new ParsePool(this.parseWorkers, foreground.inFlight);
    return this.pool;
  }

  /**
   * One bounded step of the background warm-up (persisting every hour not yet in `cacheDir`, newest
   * first); returns whether work remains. Without a cache directory there is nothing to warm.
   */
  warmUpStep(maxThreads = Infinity): boolean {
    return this.warm?.step(maxThreads) ?? false;
  }

  /** Takes in the warm-up's finished thread parses without starting new ones (while requests are answered). */
  warmUpCollect(): void {
    this.warm?.collect();
  }

  /** Hours persisted of all, for a progress bar (`null` without a cache directory). */
  warmUpProgress(): WarmUpProgress | null {
    return this.warm?.progress() ?? null;
  }

  /**
   * While the warm-up still has hours of `[t0, t1]` (null: the run's edge) of `streams` (those an answer reads)
   * to read, a way to answer over the hours it finished — `run(fn)` calls `fn` with a view of this store whose
   * reads of those streams see only those hours (nothing is parsed for the others) — and how much that covers. Null when
   * every hour of the window is read: answer from the store itself. The hours left are moved to the front of
   * the warm-up. The view is a new object each time, so caches keyed on the store never keep its answers.
   */
  foldedView(t0: number | null, t1: number | null, streams: readonly WarmedStream[] = WARMED as WarmedStream[]): FoldedView<TelemetryStore> | null {
    if (this.warm === null) return null;
    const open = this.warm.openHours(streams);
    if (open.size === 0) return null;
    const readers = streams.map((st) => this.partitions[st] as PartitionReader<any>);
    const hours = new Map<string, { lo: number; hi: number }>();
    let unreadBytes = 0;
    readers.forEach((r, k) => {
      // the bytes still to read are this stream's files of its own open hours (another stream's hour may be done)
      const openHere = this.warm!.openHours([streams[k]!]);
      for (const f of r.overlappingFiles(t0, t1)) {
        if (f.size > 0 && !hours.has(f.key)) hours.set(f.key, { lo: f.lo, hi: f.hi });
        if (openHere.has(f.key)) unreadBytes += f.size;
      }
    });
    const unreadKeys = new Set([...hours.keys()].filter((k) => open.has(k)));
    // what is left to read is a moment's parse: the answer reads it and is complete
    if (unreadKeys.size === 0 || unreadBytes < this.partialFromBytes) return null;
    this.warm.prefer(unreadKeys, streams);
    const range = this.range;
    const lo = t0 ?? range?.[0] ?? -Infinity;
    const hi = t1 ?? range?.[1] ?? Infinity;
    const unread: [number, number][] = [];
    for (const h of [...unreadKeys].map((k) => hours.get(k)!).sort((a, b) => a.lo - b.lo)) {
      const a = Math.max(h.lo, lo);
      const b = Math.min(h.hi, hi);
      if (!(b > a)) continue;
      const last = unread.at(-1);
      if (last !== undefined && last[1] >= a) last[1] = Math.max(last[1], b);
      else unread.push([a, b]);
    }
    const folded = new Set<string>();
    for (const r of readers) for (const f of r.files()) if (!open.has(f.key)) folded.add(f.key);
    const coverage = { hours_done: hours.size - unreadKeys.size, hours_total: hours.size, unread };
    return {
      coverage,
      run: <T>(fn: (view: TelemetryStore) => T): T => {
        const view = Object.create(this) as TelemetryStore;
        for (const r of readers) r.hourFilter = folded;
        try {
          return fn(view);
        } finally {
          for (const r of readers) r.hourFilter = null;
        }
      },
    };
  }

  /** Whether the parse threads have been started (by a read that needed them, or booted ahead of one). */
  get parseThreadsStarted(): boolean {
    return this.pool !== null;
  }

  /** Waits (at most `timeoutMs`) for the parse workers to start; returns how many are ready (0 without a pool). */
  parseWorkersReady(timeoutMs = 30_000): number {
    return this.ensurePool()?.waitReady(timeoutMs) ?? 0;
  }

  /** Stops the parse workers (they never keep the process alive; this frees them early). */
  close(): void {
    this.pool?.close();
    this.pool = null;
    this.poolWanted = false;
    for (const r of Object.values(this.partitions) as PartitionReader<any>[]) r.poolSource = null;
  }

  private bump(stream: StreamName): void {
    this.versions.set(stream, (this.versions.get(stream) ?? 0) + 1);
  }

  private warn(file: string, line: number, message: string): void {
    const key = `${file}\u0000${line}`;
    if (this.warningSeen.has(key)) return;
    this.warningSeen.add(key);
    const w = { file, line, message };
    this.warningList.push(w);
    this.pendingWarnings.push(w);
  }

  private computeTimeRange(): [number, number] | null {
    let [lo, hi] = this.flat.stampRange();
    for (const reader of Object.values(this.partitions) as PartitionReader<any>[]) {
      for (const t of reader.edgeStamps()) {
        if (t < lo) lo = t;
        if (t > hi) hi = t;
      }
    }
    return lo <= hi ? [lo, hi] : null;
  }

  // ---------------------------------------------------------------- simple facts

  meta(): RunMeta | null {
    return this.flat.meta();
  }

  /**
   * Whether rlsight's collector is recording the run: `running` while its `collector.json` is there, `stopped`
   * once it removed it on the way out (its write-ahead log stays); null when no rlsight collector wrote it.
   */
  recorder(): 'running' | 'stopped' | null {
    if (this.io.stat(join(this.dir, COLLECTOR_FILE)) !== null) return 'running';
    return this.io.list(join(this.dir, WAL_DIR)).length > 0 ? 'stopped' : null;
  }

  /**
   * Skipped lines so far (file relative to `dashboard/`, 1-based line, reason), in discovery order; then, on
   * a store not followed, each stream file whose last line has no newline and that was not modified within
   * the freshness window (line 0 where the file's lines were not counted).
   */
  warnings(): readonly TelemetryWarning[] {
    if (this.follows > 1) return this.warningList;
    const tails = this.tails.warnings();
    return tails.length === 0 ? this.warningList : [...this.warningList, ...tails];
  }

  /** `[min, max]` over every flat record and the partitions' edge lines; null without data. As of the last `follow()`. */
  timeRange(): [number, number] | null {
    return this.range;
  }

  /** Partitioned: any non-empty file; flat: any record. */
  /** Where engine_series data starts (the oldest non-empty hour) and its newest scrape stamp; null without any. */
  engineSeriesBounds(): { firstHour: number; newestStamp: number | null } | null {
    const files = this.partitions.engine_series.files().filter((f) => f.size > 0);
    if (files.length === 0) return null;
    const stamps = this.partitions.engine_series.edgeStamps();
    return { firstHour: files[0].lo, newestStamp: stamps.length ? Math.max(...stamps) : null };
  }

  hasStream(stream: StreamName): boolean {
    if (stream === 'metrics' || stream === 'topology' || stream === 'data_buffer') return this.flat.has(stream);
    return this.partitions[stream].hasData();
  }

  /** A token that changes whenever the stream's data may have changed (for caches of derived answers). */
  streamVersion(stream: StreamName): number {
    return this.versions.get(stream) ?? 0;
  }

  metricsRecords(): readonly MetricsRecord[] {
    return this.flat.metricsRecords();
  }

  /** Sorted union of every metrics record's keys. */
  metricKeys(): string[] {
    return this.flat.metricKeys();
  }

  /** Sorted distinct non-null step keys. */
  stepKeys(): string[] {
    return this.flat.stepKeys();
  }

  topologySnapshots(): readonly TopologySnapshot[] {
    return this.flat.topologySnapshots();
  }

  /** Snapshots sorted by ts; each holds until the next one (`t1`), the last until `null`. */
  topologyWindows(): TopologyWindow[] {
    return this.flat.topologyWindows();
  }

  dataBufferSamples(): readonly DataBufferSample[] {
    return this.flat.dataBufferSamples();
  }

  latestDataBufferLength(): number | null {
    return this.flat.latestDataBufferLength();
  }

  // ---------------------------------------------------------------- lanes

  /**
   * `[{node, gpu, ranks, engine_addrs, roles, index}]` in lane order. From `lane_catalog.json` when
   * present; else folded from gpu_util rows, phase events and topology (that fallback reads every
   * gpu_util and phases partition once).
   */
  laneIndex(): readonly LaneEntry[] {
    return this.laneIdx.entries();
  }

  /** Changes whenever `laneIndex()` does. */
  get laneIndexVersion(): number {
    return this.laneIdx.version;
  }

  /** Whether lanes come from `lane_catalog.json` (true) or the stream scan fallback (false). */
  hasLaneCatalog(): boolean {
    return this.laneIdx.hasCatalog();
  }

  /** The scan fallback's lane index, whatever the catalog says (the two agree on a healthy run). */
  scannedLaneIndex(): LaneEntry[] {
    return this.laneIdx.scanned();
  }

  // ---------------------------------------------------------------- partitioned streams

  /**
   * gpu_util blocks of the hour files overlapping `[t0, t1]` (rows not filtered by ts). With `lanes`
   * (`"<node>:<gpu>"` keys, e.g. a `resolveLanes` selection), an hour not already parsed whole is read
   * selectively: its block holds (at least) the rows of those lanes stamped within `[t0, t1]` (an hour the
   * window cuts is read for the window's part of it). Callers still filter by lane and time.
   */
  gpuUtilBlocks(t0?: number | null, t1?: number | null, lanes?: Iterable<string> | null): GpuUtilBlock[] {
    if (lanes == null) return this.partitions.gpu_util.window(t0, t1);
    const view = viewOf(lanes);
    return this.partitions.gpu_util.window(t0, t1, view);
  }

  /**
   * The blocks of `gpuUtilBlocks(t0, t1, lanes)` one at a time, for one pass over a long window: an
   * hour may be dropped from memory once the pass moved on, so a whole-run answer over any number of
   * hours stays within the memory budget. Do not keep the blocks past the pass.
   */
  gpuUtilPass(t0?: number | null, t1?: number | null, lanes?: Iterable<string> | null): Iterable<GpuUtilBlock> {
    return this.partitions.gpu_util.pass(t0, t1, lanes == null ? null : viewOf(lanes));
  }

  /**
   * The gpu_util hours overlapping `[t0, t1]`, one at a time, each with its rollup (10-s cells per lane:
   * count, util/mem/power maxima, util sums, each column's row range) when it has one, so a whole-window
   * answer reads cells and only the rows of the columns it cannot take whole. Hours without a rollup
   * (the legacy flat file, rows outside their hour) offer their raw block. Do not keep hours past the pass.
   */
  gpuUtilHours(t0?: number | null, t1?: number | null): Iterable<GpuUtilHour> {
    return this.gpuHours.pass(t0, t1);
  }

  /** Rollups built from rows and loaded from the cache by this store so far (diagnostics, tests). */
  gpuRollupStats(): { built: number; loaded: number } {
    return { built: this.gpuHours.built, loaded: this.gpuHours.loaded };
  }

  /**
   * engine_series blocks of the hour files overlapping `[t0, t1]` (rows not filtered by ts). With
   * `metrics`, an hour not already parsed whole is read selectively: its block holds (at least) the
   * rows of those metrics — a fraction of the parse cost for one series over a long run. Callers
   * still filter rows by metric.
   */
  engineSeriesBlocks(t0?: number | null, t1?: number | null, metrics?: readonly string[]): EngineSeriesBlock[] {
    if (metrics === undefined) return this.partitions.engine_series.window(t0, t1);
    const view = viewOf(metrics);
    return this.partitions.engine_series.window(t0, t1, view);
  }

  /**
   * The blocks of `engineSeriesBlocks(t0, t1, metrics)` one at a time, for one pass over a long window:
   * an hour may be dropped from memory once the pass moved on. Do not keep the blocks past the pass.
   */
  engineSeriesPass(t0?: number | null, t1?: number | null, metrics?: readonly string[]): Iterable<EngineSeriesBlock> {
    return this.partitions.engine_series.pass(t0, t1, metrics === undefined ? null : viewOf(metrics));
  }

  /**
   * Reads engine_series ahead for several selective windows at once: each cold hour overlapping any of
   * them is read once, for every metric asked of it, on all parse threads. The `engineSeriesBlocks`
   * calls that follow for those windows and metrics then parse nothing.
   */
  engineSeriesReadAhead(asks: readonly { t0?: number | null; t1?: number | null; metrics: readonly string[] }[]): void {
    this.partitions.engine_series.readAhead(asks.map((a) => ({ t0: a.t0, t1: a.t1, view: viewOf(a.metrics) })));
  }

  /** Phase blocks that can hold an interval overlapping `[t0, t1]`: every hour up to `t1 + 4 h` (phases are filed by end hour, open markers by start hour). */
  phaseBlocks(_t0?: number | null, t1?: number | null): PhaseBlock[] {
    return this.partitions.phases.window(null, t1 == null ? null : t1 + PHASE_LOOKAHEAD_S);
  }

  /** Raw phase events (open markers included) of `phaseBlocks(t0, t1)`, in file order; not filtered by time. */
  phaseEvents(t0?: number | null, t1?: number | null): PhaseEvent[] {
    const out: PhaseEvent[] = [];
    for (const b of this.phaseBlocks(t0, t1)) for (let i = 0; i < b.length; i++) out.push(b.event(i));
    return out;
  }

  bytesPerHour(stream: 'gpu_util' | 'engine_series' | 'phases'): number {
    const sizes = this.partitions[stream].files().filter((f) => f.key !== 'legacy' && f.size > 0).map((f) => f.size);
    return sizes.length === 0 ? 0 : sizes.reduce((a, b) => a + b, 0) / sizes.length;
  }

  /** See `TelemetrySource.readOnThreads`: phases read as `phaseBlocks` reads them (every hour up to `t1 + 4 h`). */
  readOnThreads(stream: 'gpu_util' | 'phases' | 'trajectories', t0?: number | null, t1?: number | null, lanes?: Iterable<string> | null): Promise<void> {
    if (stream === 'gpu_util') return this.partitions.gpu_util.readOnThreads(t0, t1, lanes == null ? null : viewOf(lanes));
    if (stream === 'phases') return this.partitions.phases.readOnThreads(null, t1 == null ? null : t1 + PHASE_LOOKAHEAD_S, null);
    return this.partitions.trajectories.readOnThreads(t0, t1, null);
  }

  /**
   * Distinct engine metric names, cheaply: exact for every hour whose whole block is resident, and
   * for the others the names on the complete lines of the file's first and last MiB. Never parses a block.
   */
  engineMetricsPresent(): string[] {
    return this.metricPresence.names();
  }

  /** Trajectory events with `t0 <= ts <= t1`, file order. */
  trajectoryEvents(t0?: number | null, t1?: number | null): TrajectoryEvent[] {
    const out: TrajectoryEvent[] = [];
    for (const b of this.partitions.trajectories.window(t0, t1)) {
      for (const r of b.rows) if ((t0 == null || r.ts >= t0) && (t1 == null || r.ts <= t1)) out.push(r);
    }
    return out;
  }

  /** gpu_processes samples with `t0 <= ts <= t1`, file order (lane filtering is the query's). */
  gpuProcessRows(t0?: number | null, t1?: number | null): GpuProcessSample[] {
    const out: GpuProcessSample[] = [];
    for (const b of this.partitions.gpu_processes.window(t0, t1)) {
      for (const r of b.rows) if ((t0 == null || r.ts >= t0) && (t1 == null || r.ts <= t1)) out.push(r);
    }
    return out;
  }

  /** Resident bytes and rows parsed per partitioned stream (for benchmarks and diagnostics). */
  stats(): Record<PartitionedStream, { bytesResident: number; rowsParsed: number; cachedBlocks: number; files: number }> {
    const out = {} as Record<PartitionedStream, { bytesResident: number; rowsParsed: number; cachedBlocks: number; files: number }>;
    for (const [stream, r] of Object.entries(this.partitions) as [PartitionedStream, PartitionReader<any>][]) {
      out[stream] = { bytesResident: r.bytesResident(), rowsParsed: r.rowsParsed, cachedBlocks: r.cachedKeys().length, files: r.files().length };
    }
    return out;
  }
}

/** The view key of a selective read: the distinct names (lane keys or metrics), sorted, one per line. */
function viewOf(names: Iterable<string>): string {
  return [...new Set(names)].sort().join('\n');
}

function sameRange(a: [number, number] | null, b: [number, number] | null): boolean {
  return a === b || (a !== null && b !== null && a[0] === b[0] && a[1] === b[1]);
}
