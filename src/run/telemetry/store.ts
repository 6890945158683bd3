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
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { readCompleteLines, readRange } from '../../formats/jsonlTail.ts';
import { EngineSeriesBlock, EngineSeriesParser } from './engineSeriesBlock.ts';
import { GpuUtilBlock, GpuUtilParser } from './gpuUtilBlock.ts';
import { EngineSeriesTable, LaneTable, StringTable } from './interning.ts';
import { LaneScan, laneEntries, parseLaneCatalog, strAsc } from './laneCatalog.ts';
import type { LaneFacts } from './laneCatalog.ts';
import { decodeLine, hasExactKeys, isInt, isNum, lineEnd, parsePythonJson, UNDECODED } from './lineScan.ts';
import { PartitionReader } from './partitionReader.ts';
import type { PartitionFile } from './partitionReader.ts';
import { PhaseBlock, PhaseParser } from './phaseBlock.ts';
import type { ParsedColumns } from './parseJob.ts';
import { ParsePool, defaultParseWorkers } from './parsePool.ts';
import { RecordBlock, gpuProcessOf, parseRecordLines, trajectoryEventOf } from './recordBlock.ts';
import type { RecordValidator } from './recordBlock.ts';
import type {
  DataBufferSample,
  EngineInfo,
  FlatStream,
  GpuProcessSample,
  LaneEntry,
  MetricsRecord,
  MetricValue,
  PartitionedStream,
  PhaseEvent,
  RunMeta,
  StreamName,
  TelemetryWarning,
  TopologySnapshot,
  TopologyWindow,
  TrajectoryEvent,
} from './records.ts';
import { MAX_WINDOW_S, PARTITION_CACHE_BLOCKS } from './records.ts';

export type { PartitionFile } from './partitionReader.ts';
export { GpuUtilBlock } from './gpuUtilBlock.ts';
export { EngineSeriesBlock } from './engineSeriesBlock.ts';
export { PhaseBlock } from './phaseBlock.ts';
export { RecordBlock } from './recordBlock.ts';
export { EngineSeriesTable, LaneTable, StringTable } from './interning.ts';
export type { EngineSeriesKey } from './interning.ts';
export * from './records.ts';

export interface TelemetryStoreOptions {
  /** Parsed partition blocks kept per stream (LRU); default 24. */
  cacheBlocks?: number;
  /**
   * Worker threads that parse cold hour files alongside the main thread (default: cores - 1, at most
   * 2). They start only once the partitions hold `parallelFromBytes` (default 256 MiB).
   */
  parseWorkers?: number;
  parallelFromBytes?: number;
}

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

interface FlatTail {
  stream: FlatStream;
  path: string;
  rel: string;
  offset: number;
  lines: number;
}

const META_KEYS = ['run_name', 'start_ts', 'args', 'schema_version'];

export class TelemetryStore {
  /** The `dashboard/` directory this store reads. */
  readonly dir: string;
  /** Interned phase names, nodes and roles (ids in `PhaseBlock` columns). */
  readonly strings = new StringTable();
  /** Lane ids of `GpuUtilBlock.lane`. */
  readonly lanes = new LaneTable();
  /** Series ids of `EngineSeriesBlock.series`. */
  readonly engineSeries = new EngineSeriesTable();
  readonly partitions: {
    gpu_util: PartitionReader<GpuUtilBlock>;
    engine_series: PartitionReader<EngineSeriesBlock>;
    phases: PartitionReader<PhaseBlock>;
    trajectories: PartitionReader<RecordBlock<TrajectoryEvent>>;
    gpu_processes: PartitionReader<RecordBlock<GpuProcessSample>>;
  };

  private _meta: RunMeta | null = null;
  private metaStamp = '';
  private catalogStamp = '';
  private catalogFacts: LaneFacts[] | null = null;
  private readonly scan = new LaneScan();
  private readonly scanFolded = new Map<string, { size: number; rows: number }>();
  private laneCache: { key: string; entries: LaneEntry[] } | null = null;
  private laneVersion = 0;
  private readonly metrics: MetricsRecord[] = [];
  private readonly topology: TopologySnapshot[] = [];
  private readonly dataBuffer: DataBufferSample[] = [];
  private readonly metricKeySet = new Set<string>();
  private readonly stepKeySet = new Set<string>();
  private flatMin = Infinity;
  private flatMax = -Infinity;
  private range: [number, number] | null = null;
  private readonly tails: FlatTail[];
  private readonly warningList: TelemetryWarning[] = [];
  private readonly warningSeen = new Set<string>();
  private pendingWarnings: TelemetryWarning[] = [];
  private versions = new Map<StreamName, number>();
  private pool: ParsePool | null = null;
  private readonly parseWorkers: number;
  private readonly parallelFromBytes: number;

  private constructor(dashboardDir: string, opts: TelemetryStoreOptions = {}) {
    this.dir = dashboardDir;
    this.parseWorkers = opts.parseWorkers ?? defaultParseWorkers();
    this.parallelFromBytes = opts.parallelFromBytes ?? 256 * 2 ** 20;
    const cap = opts.cacheBlocks ?? PARTITION_CACHE_BLOCKS;
    const warn = (file: string, line: number, message: string): void => this.warn(file, line, message);
    const gpuParser = new GpuUtilParser(this.lanes);
    const engineParser = new EngineSeriesParser(this.engineSeries);
    const phaseParser = new PhaseParser(this.strings);
    // the low-volume streams (trajectories, gpu_processes) are kept as validated records
    const records = <T extends { ts: number }>(stream: 'trajectories' | 'gpu_processes', bytesPerRow: number, validate: RecordValidator<T>): PartitionReader<RecordBlock<T>> =>
      new PartitionReader<RecordBlock<T>>(
        dashboardDir,
        stream,
        {
          bytesPerRow,
          create: (k, lo, hi) => new RecordBlock<T>(k, lo, hi),
          parse: (b, s, e, blk, l, bad) => parseRecordLines(validate, b, s, e, blk, l, bad),
          adopt: (k, lo, hi, d) => RecordBlock.adopt<T>(k, lo, hi, as(d, stream).rows as T[]),
        },
        warn,
        cap,
      );
    this.partitions = {
      gpu_util: new PartitionReader<GpuUtilBlock>(
        dashboardDir,
        'gpu_util',
        {
          bytesPerRow: 80,
          // a lane view costs about half a whole parse: a second distinct selection reads the hour whole
          viewsBeforeWhole: 1,
          create: (k, lo, hi, n) => new GpuUtilBlock(k, lo, hi, n),
          parse: (b, s, e, blk, l, bad) => gpuParser.parse(b, s, e, blk, l, bad),
          parseView: (view, b, s, e, blk, l, bad) => gpuParser.parseView(view, b, s, e, blk, l, bad),
          adopt: (k, lo, hi, d) => GpuUtilBlock.adopt(k, lo, hi, as(d, 'gpu_util').columns, as(d, 'gpu_util').lanes.map(([n, g]) => this.lanes.id(n, g))),
        },
        warn,
        cap,
      ),
      engine_series: new PartitionReader<EngineSeriesBlock>(
        dashboardDir,
        'engine_series',
        {
          bytesPerRow: 150,
          // a metric view costs about a fifth of a whole parse: the fourth distinct ask reads the hour whole
          viewsBeforeWhole: 3,
          create: (k, lo, hi, n) => new EngineSeriesBlock(k, lo, hi, n),
          parse: (b, s, e, blk, l, bad) => engineParser.parse(b, s, e, blk, l, bad),
          parseView: (view, b, s, e, blk) => engineParser.parseView(view, b, s, e, blk),
          adopt: (k, lo, hi, d) =>
            EngineSeriesBlock.adopt(k, lo, hi, as(d, 'engine_series').columns, as(d, 'engine_series').series.map(([a, m, l]) => this.engineSeries.id(a, m, l))),
        },
        warn,
        cap,
      ),
      phases: new PartitionReader<PhaseBlock>(
        dashboardDir,
        'phases',
        {
          bytesPerRow: 110,
          create: (k, lo, hi, n) => new PhaseBlock(k, lo, hi, this.strings, n),
          parse: (b, s, e, blk, l, bad) => phaseParser.parse(b, s, e, blk, l, bad),
          adopt: (k, lo, hi, d) => PhaseBlock.adopt(k, lo, hi, this.strings, as(d, 'phases').columns, as(d, 'phases').strings.map((x) => this.strings.id(x))),
        },
        warn,
        cap,
      ),
      trajectories: records('trajectories', 120, trajectoryEventOf),
      gpu_processes: records('gpu_processes', 100, gpuProcessOf),
    };
    this.tails = (['metrics', 'topology', 'data_buffer'] as const).map((stream) => ({ stream, path: join(dashboardDir, `${stream}.jsonl`), rel: `${stream}.jsonl`, offset: 0, lines: 0 }));
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
    const lanesBefore = this.laneCache?.entries ?? null;
    const rangeBefore = this.range;
    report.metaChanged = this.readMeta();
    this.readCatalog();
    const newKeys: string[] = [];
    const newSteps: string[] = [];
    for (const t of this.tails) {
      const n = this.tailFlat(t, newKeys, newSteps);
      if (n > 0) {
        report.byStream[t.stream] = n;
        report.rows += n;
        this.bump(t.stream);
        if (t.stream === 'topology') report.topologyChanged = true;
      }
    }
    report.newMetricKeys = newKeys.sort();
    report.newStepKeys = newSteps.sort();
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
    this.range = this.computeTimeRange();
    report.timeRange = this.range;
    report.timeRangeChanged = !sameRange(rangeBefore, this.range);
    if (lanesBefore !== null || this.catalogFacts !== null) {
      const after = this.laneIndex();
      if (lanesBefore === null || after !== lanesBefore) {
        const known = new Set((lanesBefore ?? []).map((l) => `${l.node}:${l.gpu}`));
        report.newLanes = after.filter((l) => !known.has(`${l.node}:${l.gpu}`));
        // laneIndex() keeps its entries object while the content is equal, so a new object is a change.
        report.lanesChanged = lanesBefore === null ? after.length > 0 : true;
      }
    }
    report.warnings = this.pendingWarnings;
    this.pendingWarnings = [];
    return report;
  }

  /** Starts the parse workers once the partitions are big enough for parallel cold reads to pay. */
  private startPoolIfBig(): void {
    if (this.pool !== null || this.parseWorkers <= 0) return;
    let bytes = 0;
    for (const r of Object.values(this.partitions) as PartitionReader<any>[]) for (const f of r.files()) bytes += f.size;
    if (bytes < this.parallelFromBytes) return;
    this.pool = new ParsePool(this.parseWorkers);
    for (const r of Object.values(this.partitions) as PartitionReader<any>[]) r.pool = this.pool;
  }

  /** Waits (at most `timeoutMs`) for the parse workers to start; returns how many are ready (0 without a pool). */
  parseWorkersReady(timeoutMs = 30_000): number {
    return this.pool?.waitReady(timeoutMs) ?? 0;
  }

  /** Stops the parse workers (they never keep the process alive; this frees them early). */
  close(): void {
    this.pool?.close();
    this.pool = null;
    for (const r of Object.values(this.partitions) as PartitionReader<any>[]) r.pool = null;
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

  private readMeta(): boolean {
    const path = join(this.dir, 'meta.json');
    const stamp = stampOf(path);
    if (stamp === this.metaStamp) return false;
    this.metaStamp = stamp;
    if (stamp === '') {
      const had = this._meta !== null;
      this._meta = null;
      return had;
    }
    try {
      const o = parsePythonJson(readFileSync(path, 'utf8')) as any;
      // Unlike the reference (strict `Meta(**json)`), keys a newer writer adds are ignored, not fatal.
      if (o === null || typeof o !== 'object' || typeof o.run_name !== 'string' || !isNum(o.start_ts)) {
        throw new Error(`expected the keys ${META_KEYS.join(', ')}`);
      }
      this._meta = { run_name: o.run_name, start_ts: o.start_ts, args: o.args && typeof o.args === 'object' ? o.args : {}, schema_version: isInt(o.schema_version) ? o.schema_version : 1 };
    } catch (err) {
      this.warn('meta.json', 1, `unreadable run header: ${(err as Error).message}`);
      this._meta = null;
    }
    return true;
  }

  private readCatalog(): void {
    const path = join(this.dir, 'lane_catalog.json');
    const stamp = stampOf(path);
    if (stamp === this.catalogStamp) return;
    this.catalogStamp = stamp;
    if (stamp === '') {
      this.catalogFacts = null;
      return;
    }
    try {
      this.catalogFacts = parseLaneCatalog(readFileSync(path, 'utf8'));
    } catch (err) {
      this.warn('lane_catalog.json', 1, `unreadable lane catalog, lanes are scanned from the streams instead: ${(err as Error).message}`);
      this.catalogFacts = null;
    }
  }

  private tailFlat(t: FlatTail, newKeys: string[], newSteps: string[]): number {
    let added = 0;
    const r = readCompleteLines(t.path, t.offset, (chunk) => {
      const buf = chunk.buf;
      let p = 0;
      while (p < chunk.end) {
        const nl = lineEnd(buf, p, chunk.end);
        t.lines++;
        const o = decodeLine(buf, p, nl, t.lines, (line, message) => this.warn(t.rel, line, message), parsePythonJson);
        p = nl + 1;
        if (o === UNDECODED) continue;
        const problem = this.addFlat(t.stream, o, newKeys, newSteps);
        if (problem !== null) this.warn(t.rel, t.lines, problem);
        else added++;
      }
    });
    t.offset = r.offset;
    return added;
  }

  private addFlat(stream: FlatStream, o: any, newKeys: string[], newSteps: string[]): string | null {
    if (o === null || typeof o !== 'object' || Array.isArray(o)) return `${stream} record must be an object`;
    if (stream === 'metrics') {
      if (!hasExactKeys(o, ['ts', 'step_key', 'step', 'metrics'])) return 'metrics record must have exactly the keys ts, step_key, step, metrics';
      if (!isNum(o.ts) || !(o.step_key === null || typeof o.step_key === 'string') || !(o.step === null || typeof o.step === 'number') || o.metrics === null || typeof o.metrics !== 'object' || Array.isArray(o.metrics)) {
        return 'metrics record has a value of the wrong type';
      }
      const metrics: Record<string, MetricValue> = {};
      for (const [k, v] of Object.entries(o.metrics as Record<string, unknown>)) {
        if (typeof v === 'number' || typeof v === 'string' || typeof v === 'boolean') metrics[k] = v;
        if (!this.metricKeySet.has(k)) {
          this.metricKeySet.add(k);
          newKeys.push(k);
        }
      }
      if (o.step_key !== null && !this.stepKeySet.has(o.step_key)) {
        this.stepKeySet.add(o.step_key);
        newSteps.push(o.step_key);
      }
      this.metrics.push({ ts: o.ts, step_key: o.step_key, step: o.step, metrics });
      this.stamp(o.ts);
      return null;
    }
    if (stream === 'topology') {
      if (!hasExactKeys(o, ['ts', 'engines'])) return 'topology record must have exactly the keys ts, engines';
      if (!isNum(o.ts) || !Array.isArray(o.engines)) return 'topology record has a value of the wrong type';
      const engines: EngineInfo[] = [];
      for (const e of o.engines) {
        if (!hasExactKeys(e, ['addr', 'worker_type', 'engine_rank', 'gpus', 'gpu_uuids'])) {
          return 'topology engine must have exactly the keys addr, worker_type, engine_rank, gpus, gpu_uuids';
        }
        if (
          typeof e.addr !== 'string' ||
          typeof e.worker_type !== 'string' ||
          !isInt(e.engine_rank) ||
          !Array.isArray(e.gpus) ||
          !e.gpus.every((g: unknown) => Array.isArray(g) && g.length === 2 && typeof g[0] === 'string' && isInt(g[1])) ||
          !Array.isArray(e.gpu_uuids)
        ) {
          return 'topology engine has a value of the wrong type';
        }
        engines.push({ addr: e.addr, worker_type: e.worker_type, engine_rank: e.engine_rank, gpus: e.gpus, gpu_uuids: e.gpu_uuids });
      }
      const snap = { ts: o.ts, engines };
      this.topology.push(snap);
      this.scan.addTopology(snap);
      this.stamp(o.ts);
      return null;
    }
    if (!hasExactKeys(o, ['ts', 'length'])) return 'data_buffer record must have exactly the keys ts, length';
    if (!isNum(o.ts) || !isInt(o.length)) return 'data_buffer record has a value of the wrong type';
    this.dataBuffer.push({ ts: o.ts, length: o.length });
    this.stamp(o.ts);
    return null;
  }

  private stamp(ts: number): void {
    if (ts < this.flatMin) this.flatMin = ts;
    if (ts > this.flatMax) this.flatMax = ts;
  }

  private computeTimeRange(): [number, number] | null {
    let lo = this.flatMin;
    let hi = this.flatMax;
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
    return this._meta;
  }

  /** Skipped lines so far (file relative to `dashboard/`, 1-based line, reason), in discovery order. */
  warnings(): readonly TelemetryWarning[] {
    return this.warningList;
  }

  /** `[min, max]` over every flat record and the partitions' edge lines; null without data. As of the last `follow()`. */
  timeRange(): [number, number] | null {
    return this.range;
  }

  /** Partitioned: any non-empty file; flat: any record. */
  hasStream(stream: StreamName): boolean {
    if (stream === 'metrics') return this.metrics.length > 0;
    if (stream === 'topology') return this.topology.length > 0;
    if (stream === 'data_buffer') return this.dataBuffer.length > 0;
    return this.partitions[stream].hasData();
  }

  /** A token that changes whenever the stream's data may have changed (for caches of derived answers). */
  streamVersion(stream: StreamName): number {
    return this.versions.get(stream) ?? 0;
  }

  metricsRecords(): readonly MetricsRecord[] {
    return this.metrics;
  }

  /** Sorted union of every metrics record's keys. */
  metricKeys(): string[] {
    return [...this.metricKeySet].sort(strAsc);
  }

  /** Sorted distinct non-null step keys. */
  stepKeys(): string[] {
    return [...this.stepKeySet].sort(strAsc);
  }

  topologySnapshots(): readonly TopologySnapshot[] {
    return this.topology;
  }

  /** Snapshots sorted by ts; each holds until the next one (`t1`), the last until `null`. */
  topologyWindows(): TopologyWindow[] {
    const snaps = this.topology.map((s, i) => ({ s, i })).sort((a, b) => a.s.ts - b.s.ts || a.i - b.i).map((x) => x.s);
    return snaps.map((s, i) => ({ t0: s.ts, t1: i + 1 < snaps.length ? snaps[i + 1].ts : null, engines: s.engines }));
  }

  dataBufferSamples(): readonly DataBufferSample[] {
    return this.dataBuffer;
  }

  latestDataBufferLength(): number | null {
    return this.dataBuffer.length ? this.dataBuffer[this.dataBuffer.length - 1].length : null;
  }

  // ---------------------------------------------------------------- lanes

  /**
   * `[{node, gpu, ranks, engine_addrs, roles, index}]` sorted by `(node, gpu)` with node as a string.
   * From `lane_catalog.json` when present; else folded from gpu_util rows, phase events and topology
   * (that fallback reads every gpu_util and phases partition once).
   */
  laneIndex(): readonly LaneEntry[] {
    let key: string;
    let facts: Iterable<LaneFacts>;
    if (this.catalogFacts !== null) {
      key = `catalog:${this.catalogStamp}`;
      facts = this.catalogFacts;
    } else {
      this.foldScan();
      key = `scan:${this.scan.version}`;
      facts = this.scan.facts();
    }
    if (this.laneCache === null || this.laneCache.key !== key) {
      const entries = laneEntries(facts);
      if (this.laneCache === null || JSON.stringify(entries) !== JSON.stringify(this.laneCache.entries)) {
        this.laneCache = { key, entries };
        this.laneVersion++;
      } else {
        this.laneCache = { key, entries: this.laneCache.entries };
      }
    }
    return this.laneCache.entries;
  }

  /** Changes whenever `laneIndex()` does. */
  get laneIndexVersion(): number {
    this.laneIndex();
    return this.laneVersion;
  }

  /** Whether lanes come from `lane_catalog.json` (true) or the stream scan fallback (false). */
  hasLaneCatalog(): boolean {
    return this.catalogFacts !== null;
  }

  /** The scan fallback's lane index, whatever the catalog says (the two agree on a healthy run). */
  scannedLaneIndex(): LaneEntry[] {
    this.foldScan();
    return laneEntries(this.scan.facts());
  }

  private foldScan(): void {
    const fold = <B extends { length: number }>(stream: 'gpu_util' | 'phases', reader: PartitionReader<any>, each: (b: B, from: number) => void): void => {
      for (const f of reader.files() as PartitionFile[]) {
        const id = `${stream}/${f.key}`;
        const seen = this.scanFolded.get(id);
        if (seen !== undefined && seen.size === f.size) continue;
        const b = reader.block(f) as B;
        each(b, seen?.rows ?? 0);
        this.scanFolded.set(id, { size: f.size, rows: b.length });
      }
    };
    fold<GpuUtilBlock>('gpu_util', this.partitions.gpu_util, (b, from) => {
      const lane = b.lane;
      const seen = new Uint8Array(this.lanes.size);
      for (let i = from; i < b.length; i++) {
        const id = lane[i];
        if (seen[id]) continue;
        seen[id] = 1;
        this.scan.addGpu(this.lanes.node(id), this.lanes.gpu(id));
      }
    });
    fold<PhaseBlock>('phases', this.partitions.phases, (b, from) => {
      for (let i = from; i < b.length; i++) {
        this.scan.addPhase(this.strings.str(b.node[i]), b.gpuList.subarray(b.gpuStart[i], b.gpuStart[i + 1]), b.rank[i], this.strings.str(b.role[i]));
      }
    });
  }

  // ---------------------------------------------------------------- partitioned streams

  /**
   * gpu_util blocks of the hour files overlapping `[t0, t1]` (rows not filtered by ts). With `lanes`
   * (`"<node>:<gpu>"` keys, e.g. a `resolveLanes` selection), an hour not already parsed whole is read
   * selectively: its block holds (at least) the rows of those lanes. Callers still filter by lane.
   */
  gpuUtilBlocks(t0?: number | null, t1?: number | null, lanes?: Iterable<string> | null): GpuUtilBlock[] {
    if (lanes == null) return this.partitions.gpu_util.window(t0, t1);
    const view = [...new Set(lanes)].sort().join('\n');
    return this.partitions.gpu_util.window(t0, t1, view);
  }

  /**
   * engine_series blocks of the hour files overlapping `[t0, t1]` (rows not filtered by ts). With
   * `metrics`, an hour not already parsed whole is read selectively: its block holds (at least) the
   * rows of those metrics — a fraction of the parse cost for one series over a long run. Callers
   * still filter rows by metric.
   */
  engineSeriesBlocks(t0?: number | null, t1?: number | null, metrics?: readonly string[]): EngineSeriesBlock[] {
    if (metrics === undefined) return this.partitions.engine_series.window(t0, t1);
    const view = [...new Set(metrics)].sort().join('\n');
    return this.partitions.engine_series.window(t0, t1, view);
  }

  /**
   * Reads engine_series ahead for several selective windows at once: each cold hour overlapping any of
   * them is read once, for every metric asked of it, on all parse threads. The `engineSeriesBlocks`
   * calls that follow for those windows and metrics then parse nothing.
   */
  engineSeriesReadAhead(asks: readonly { t0?: number | null; t1?: number | null; metrics: readonly string[] }[]): void {
    this.partitions.engine_series.readAhead(asks.map((a) => ({ t0: a.t0, t1: a.t1, view: [...new Set(a.metrics)].sort().join('\n') })));
  }

  /** Phase blocks that can hold an interval overlapping `[t0, t1]`: every hour up to `t1 + 4 h` (phases are filed by end hour, open markers by start hour). */
  phaseBlocks(_t0?: number | null, t1?: number | null): PhaseBlock[] {
    return this.partitions.phases.window(null, t1 == null ? null : t1 + MAX_WINDOW_S);
  }

  /** Raw phase events (open markers included) of `phaseBlocks(t0, t1)`, in file order; not filtered by time. */
  phaseEvents(t0?: number | null, t1?: number | null): PhaseEvent[] {
    const out: PhaseEvent[] = [];
    for (const b of this.phaseBlocks(t0, t1)) for (let i = 0; i < b.length; i++) out.push(b.event(i));
    return out;
  }

  private readonly metricSamples = new Map<string, { size: number; names: Set<string> }>();
  private readonly metricSeen = new WeakMap<EngineSeriesBlock, { n: number; names: Set<string> }>();

  /**
   * Distinct engine metric names, cheaply: exact for every hour whose whole block is resident, and
   * for the others the names on the complete lines of the file's first and last MiB (each holds
   * whole scrape ticks, and a scraper reports the same families every tick). Never parses a block.
   */
  engineMetricsPresent(): string[] {
    const reader = this.partitions.engine_series;
    const out = new Set<string>();
    const table = this.engineSeries;
    for (const f of reader.files()) {
      const whole = reader.isCached(f.key) ? reader.block(f) : null;
      if (whole !== null) {
        let seen = this.metricSeen.get(whole);
        if (seen === undefined) this.metricSeen.set(whole, (seen = { n: 0, names: new Set() }));
        const series = whole.series;
        for (let i = seen.n; i < whole.length; i++) seen.names.add(table.key(series[i]).metric);
        seen.n = whole.length;
        for (const m of seen.names) out.add(m);
        continue;
      }
      let sample = this.metricSamples.get(f.key);
      if (sample === undefined || sample.size !== f.size) {
        const names = new Set<string>();
        const MIB = 1 << 20;
        const head = readRange(f.path, 0, Math.min(MIB, f.size));
        metricNamesIn(head, 0, head.lastIndexOf(10) + 1, names);
        if (f.size > MIB) {
          const from = Math.max(MIB, f.size - MIB);
          const tail = readRange(f.path, from, f.size - from);
          metricNamesIn(tail, tail.indexOf(10) + 1, tail.lastIndexOf(10) + 1, names);
        }
        this.metricSamples.set(f.key, (sample = { size: f.size, names }));
      }
      for (const m of sample.names) out.add(m);
    }
    return [...out].sort(strAsc);
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

const METRIC_MARK = Buffer.from('"metric":"');

/** Adds the metric names of the lines in `buf[start, end)` (decoded like JSON strings). */
function metricNamesIn(buf: Buffer, start: number, end: number, into: Set<string>): void {
  let at = buf.indexOf(METRIC_MARK, start);
  let last = '';
  while (at >= 0 && at < end) {
    const s = at + METRIC_MARK.length;
    let e = s;
    while (e < end && buf[e] !== 34 && buf[e] !== 10) e += buf[e] === 92 ? 2 : 1;
    if (buf[e] === 34) {
      const raw = buf.toString('utf8', s, e);
      if (raw !== last) {
        try {
          into.add(raw.includes('\\') ? (JSON.parse(`"${raw}"`) as string) : raw);
        } catch {
          // not a JSON string: the line is corrupt, a whole read reports it
        }
        last = raw;
      }
    }
    at = buf.indexOf(METRIC_MARK, e);
  }
}

/** The parsed columns of one stream (a worker result always matches the reader that asked). */
function as<S extends ParsedColumns['stream']>(d: ParsedColumns, stream: S): Extract<ParsedColumns, { stream: S }> {
  if (d.stream !== stream) throw new Error(`parse worker answered ${d.stream} for ${stream}`);
  return d as Extract<ParsedColumns, { stream: S }>;
}

function stampOf(path: string): string {
  try {
    const st = statSync(path);
    return `${st.size}:${st.mtimeMs}:${st.ino}`;
  } catch {
    return '';
  }
}

function sameRange(a: [number, number] | null, b: [number, number] | null): boolean {
  return a === b || (a !== null && b !== null && a[0] === b[0] && a[1] === b[1]);
}


