// The collector: the only writer of a run's `dashboard/` directory. Producers push batches of
// records; they are checked, encoded and held per stream, then appended to the stream files every
// flush interval. Holding is bounded (oldest dropped, counted); a failed write keeps the records and
// says so on every attempt; the lane catalog is folded from what arrives and replaced atomically.
import {
  isStreamName,
  flatFile,
  hourKey,
  HOUR_SECONDS,
  isPartitioned,
  LANE_CATALOG_FILE,
  LaneCatalogFold,
  META_FILE,
  parseLaneCatalogJson,
  partitionFile,
  partitionTs,
  encodeMeta,
  encodeTopology,
  STREAMS,
  type EngineInfo,
  type EngineSample,
  type GpuSample,
  type PhaseEvent,
  type RunMeta,
  type StreamName,
  type StreamRecord,
  type TopologySnapshot,
  OPEN_T1,
} from '../formats/dashboard/index.ts';
import { DashboardWriter, nodeCollectorFs, type CollectorFs } from '../formats/dashboard/writer.ts';
import { CollectorSidecars } from '../formats/columns/sidecarWriter.ts';
import { isExactStep, roundedStepNote } from '../formats/roundedStep.ts';
import { ingestBatch, type IngestProblem, type IngestRecord } from './ingest.ts';
import { StreamBuffer } from './streamBuffer.ts';
import { BATCH_WINDOW, MAX_PRODUCERS, PRODUCER_IDLE_S, WriteAheadLog, type WalBatch, type WalIo } from './writeAheadLog.ts';
import { SAMPLES_OVER_ENTRY, SAMPLES_STREAM, SampleSteps } from './sampleSteps.ts';
import { DEFAULT_BUFFER_CAP } from './usage.ts';
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { WAL_DIR } from '../formats/dashboard/layout.ts';

export type LogLevel = 'info' | 'warn' | 'error';
export type Logger = (level: LogLevel, message: string) => void;

export const stderrLogger: Logger = (level, message) => {
  process.stderr.write(`${new Date().toISOString()} rlsight collect ${level}: ${message}\n`);
};

export interface CollectorOptions {
  /** The run's `dashboard/` directory (created if missing). */
  dashboardDir: string;
  /** `meta.json` run name; default: the existing header's, else `rlsight-run`. */
  runName?: string;
  /** `meta.json` args snapshot. */
  args?: Record<string, unknown>;
  bufferCap?: number;
  log?: Logger;
  fs?: CollectorFs;
  /** Epoch seconds (tests pin it). */
  now?: () => number;
  /**
   * Keep a write-ahead log in `dashboard/wal/` (the collector service always does): a batch counts as
   * taken once it is on disk there, and a restart replays what a killed collector had not written.
   */
  writeAheadLog?: boolean;
  /** The write-ahead log's writes and fsyncs (tests make them fail). */
  walIo?: WalIo;
  /** Compresses the pages of collected sample files (zstd; uncompressed without it). */
  zstd?: (input: Uint8Array) => Uint8Array;
  /**
   * Seconds after which an engine only the scraper knows (an `external` one), not seen since, leaves the next
   * topology snapshot, so an engine back on a new address reads as one leaving and one joining. Default 30.
   */
  externalEngineMaxAgeS?: number;
}

/** The default of `externalEngineMaxAgeS` (the collector service passes the longer of this and 3 scrape intervals). */
export const EXTERNAL_ENGINE_MAX_AGE_S = 30;

/** What producers send: a dashboard stream, or rollout samples. */
export type IngestStream = StreamName | typeof SAMPLES_STREAM;

/** Counters a health exposition reads; they only grow (except `buffered`). */
export interface StreamHealth {
  received: number;
  dropped: number;
  /** Lines left out of their batch as invalid. */
  rejected: number;
  written: number;
  buffered: number;
}

/** The rollout samples' counters (they only grow, except `stepsArriving`). */
export interface SamplesHealth {
  received: number;
  /** Sample lines left out of their batch as invalid. */
  rejected: number;
  stepsWritten: number;
  /** Step files that could not be written (kept, and written again with the step's next line or at the next start). */
  writeErrors: number;
  /** Steps whose samples are still arriving. */
  stepsArriving: number;
}

export interface CollectorHealth {
  streams: Record<StreamName, StreamHealth>;
  samples: SamplesHealth;
  flushErrors: number;
  /** Epoch seconds of the last flush that wrote everything it held (null before the first). */
  lastFlushOk: number | null;
  tornTailsCut: number;
}

export type IngestOutcome =
  | {
      ok: true;
      accepted: number;
      /** Invalid lines left out (the first few named in `problems`). */
      rejected: number;
      problems: IngestProblem[];
      /** A retry of a batch this collector already has (nothing taken again). */
      duplicate: boolean;
      /** Settles once the batch is on disk (at once without a write-ahead log). */
      durable: Promise<void>;
    }
  | { ok: false; problem: IngestProblem }
  /** A batch number this collector cannot tell from one it logged (older than the numbers it remembers): a 409. */
  | { ok: false; conflict: string }
  /** Nothing taken: the write-ahead log keeps failing and as many batches as are held for it wait already (a 503). */
  | { ok: false; unavailable: string };

/** Who sent a batch and its number among that producer's batches (unique to the batch; a retry reuses it). */
export interface BatchId {
  producer: string;
  seq: number;
}

const DURABLE: Promise<void> = Promise.resolve();

/**
 * Batches whose log write failed (answered 503) are held, with their bodies, to be logged when sent again or by the
 * next log rotation, up to this many and this many bytes of bodies. While the store is full (the log and its
 * rotations keep failing), a new batch is refused with a 503 before anything of it is taken, so its retry is taken
 * once the log works again. A held batch is never let go before a rotation logs it: a retry of it would be taken twice.
 */
export const UNLOGGED_MAX_BATCHES = 4096;
export const UNLOGGED_MAX_BYTES = 64 << 20;
/** Problems named in an answer; the rest are counted. */
const PROBLEMS_SHOWN = 5;

/** The latest values a live exposition shows, each with when it was taken so a stale one can be left out. */
export interface LatestValues {
  /** node → gpu → sample, and when the collector received it (its clock: a producer's skew does not age it). */
  gpus: Map<string, Map<number, GpuSample & { received: number }>>;
  /**
   * engine addr → running requests summed over dp ranks of its latest scrape tick (`ts`, the tick's start);
   * `failed` once a later scrape of it failed (its value is then no longer the engine's).
   */
  runningRequests: Map<string, { ts: number; value: number; failed?: boolean }>;
  /** phase name → seconds of its latest closed interval. */
  phaseSeconds: Map<string, number>;
}

export class Collector {
  readonly dir: string;
  readonly meta: RunMeta;
  private readonly writer: DashboardWriter;
  /** gpu_util rollups and engine_series/phases columns written beside the hours this collector writes. */
  private readonly sidecars: CollectorSidecars;
  private readonly log: Logger;
  private readonly now: () => number;
  private readonly buffers: Record<StreamName, StreamBuffer>;
  private readonly counters: Record<StreamName, { received: number; dropped: number; rejected: number; written: number }>;
  private readonly wal: WriteAheadLog | null = null;
  /** Rollout samples: held per step until complete, then written to `samples/` beside the dashboard. */
  readonly samples: SampleSteps;
  /** The previous flush's sizes, kept while its log rotation has not succeeded (its appends are not yet settled). */
  private unsettledSizes: Record<string, number> | null = null;
  /**
   * Batches taken whose log entry failed (answered 503 "send it again"), by `producer/seq`: a retry is logged
   * again without taking its records twice. The next log rotation holds their records, so they are logged then.
   */
  private readonly unlogged = new Map<string, { id: BatchId; stream: IngestStream; body: string | Uint8Array; accepted: number; rejected: number; problems: IngestProblem[] }>();
  /** Bytes of the bodies in `unlogged`. */
  private unloggedBytes = 0;
  private readonly catalog = new LaneCatalogFold();
  private flushErrors = 0;
  private tornTailsCut = 0;
  private lastFlushOk: number | null = null;
  private timer: NodeJS.Timeout | null = null;
  private renewal: NodeJS.Immediate | null = null;
  private lastTopology: EngineInfo[] | null = null;
  /** Whether a metrics step beyond 2^53 was said (once per collector: metrics.jsonl is one file). */
  private roundedStepSaid = false;
  /** Engines some producer registered (never synthesized as external). */
  private readonly actorEngines = new Set<string>();
  /** Engines the scraper has seen samples of → when it last saw one (the collector's clock). */
  private readonly scrapedEngines = new Map<string, number>();
  private readonly externalEngineMaxAgeS: number;
  readonly latest: LatestValues = { gpus: new Map(), runningRequests: new Map(), phaseSeconds: new Map() };

  constructor(opts: CollectorOptions) {
    this.dir = opts.dashboardDir;
    this.log = opts.log ?? stderrLogger;
    this.now = opts.now ?? (() => Date.now() / 1000);
    this.externalEngineMaxAgeS = opts.externalEngineMaxAgeS ?? EXTERNAL_ENGINE_MAX_AGE_S;
    const fs = opts.fs ?? nodeCollectorFs;
    this.writer = new DashboardWriter(this.dir, fs);
    this.sidecars = new CollectorSidecars(
      { replace: (rel, data) => this.writer.replace(rel, data), remove: (rel) => this.writer.remove(rel), read: (rel) => readFileSync(join(this.dir, rel)) },
      this.now,
    );
    this.writer.onAppended = (rel, start, data, file) => this.sidecars.appended(rel, start, data, file);
    const cap = opts.bufferCap ?? DEFAULT_BUFFER_CAP;
    this.buffers = Object.fromEntries(STREAMS.map((s) => [s, new StreamBuffer(cap, isPartitioned(s))])) as Record<StreamName, StreamBuffer>;
    this.counters = Object.fromEntries(STREAMS.map((s) => [s, { received: 0, dropped: 0, rejected: 0, written: 0 }])) as Record<StreamName, { received: number; dropped: number; rejected: number; written: number }>;
    fs.mkdirp(this.dir);
    this.samples = new SampleSteps(
      dirname(this.dir),
      { mkdirp: fs.mkdirp, replace: (path, tmp, data, mode) => fs.replace(path, tmp, data, mode), remove: fs.remove, touch: (path, text) => writeFileSync(path, text) },
      opts.zstd,
      this.log,
    );
    const previous = this.readMeta();
    // A restarted collector continues the same run: its start (the `initialize` band) stays put.
    this.meta = {
      run_name: opts.runName ?? previous?.run_name ?? 'rlsight-run',
      start_ts: previous?.start_ts ?? this.now(),
      args: { ...(previous?.args ?? {}), ...(opts.args ?? {}) },
      schema_version: 1,
    };
    this.writer.replace(META_FILE, encodeMeta(this.meta));
    this.loadCatalog();
    if (opts.writeAheadLog) {
      this.wal = new WriteAheadLog(join(this.dir, WAL_DIR), opts.walIo, () => this.scheduleRenewal(), this.now);
      this.replay(this.wal);
    }
  }

  /** Undoes a flush a kill interrupted, takes the log's batches again and writes them out (exactly once). */
  private replay(wal: WriteAheadLog): void {
    const r = wal.recover(this.dir);
    for (const u of r.undone) this.log('warn', `cut ${u.bytes} bytes a killed collector had appended to ${u.file} (they are written again from the write-ahead log)`);
    if (r.tornBytes > 0) this.log('warn', `ignored ${r.tornBytes} bytes of a write-ahead log entry a killed collector left half-written (never acknowledged)`);
    let records = 0;
    for (const b of r.batches) {
      if (b.stream === SAMPLES_STREAM) records += this.samples.take(b.body).accepted;
      else if (b.stream === SAMPLES_OVER_ENTRY) this.samples.restoreOver(b.body);
      else if (isStreamName(b.stream)) records += this.apply(b.stream, ingestBatch(b.stream, b.body).records);
    }
    if (records > 0) this.log('info', `replayed ${records} records of ${r.batches.length} batches from the write-ahead log`);
    this.flush();
  }

  /**
   * A write or fsync of the log segment failed: a fresh segment holding what is still unwritten replaces it soon
   * (batches are refused with a 503 until then), so nothing acknowledged later sits behind the damage.
   */
  private scheduleRenewal(): void {
    if (this.renewal !== null) return;
    this.renewal = setImmediate(() => {
      this.renewal = null;
      const damage = this.wal?.damaged;
      if (damage == null) return;
      const err = this.rotateLog();
      if (err === null) this.log('warn', `write-ahead log in ${join(this.dir, WAL_DIR)}: a write or fsync failed (${describe(damage)}); continued in a fresh segment`);
      else this.log('error', `write-ahead log in ${join(this.dir, WAL_DIR)}: a write or fsync failed (${describe(damage)}), and starting a fresh segment failed too (${describe(err)}); batches are refused until a flush starts one`);
    });
  }

  /**
   * Replaces the log segment with a new one holding what is still unwritten (the records held, the samples of steps
   * not written) and the batch numbers logged. Returns the error when that failed.
   */
  private rotateLog(): unknown {
    const wal = this.wal!;
    const held: WalBatch[] = STREAMS.filter((s) => this.buffers[s].length > 0).map((s) => ({ stream: s, producer: '-', seq: 0, body: this.buffers[s].lines.join('\n') }));
    // the sample calls that are over, before the lines of those still arriving: a late line of one replayed after a
    // restart is left out as it was before
    held.push({ stream: SAMPLES_OVER_ENTRY, producer: '-', seq: 0, body: this.samples.overText() });
    for (const body of this.samples.held()) held.push({ stream: SAMPLES_STREAM, producer: '-', seq: 0, body });
    try {
      wal.rotate(
        held,
        [...this.unlogged.values()].map((u) => u.id),
      );
    } catch (err) {
      return err;
    }
    this.unlogged.clear();
    this.unloggedBytes = 0;
    this.unsettledSizes = null;
    return null;
  }

  private readMeta(): RunMeta | null {
    try {
      const o = JSON.parse(readFileSync(join(this.dir, META_FILE), 'utf8')) as Partial<RunMeta>;
      if (typeof o.run_name === 'string' && typeof o.start_ts === 'number' && Number.isFinite(o.start_ts)) {
        return { run_name: o.run_name, start_ts: o.start_ts, args: o.args && typeof o.args === 'object' ? o.args : {}, schema_version: 1 };
      }
    } catch {
      // no header yet, or an unreadable one: this collector writes a fresh one
    }
    return null;
  }

  private loadCatalog(): void {
    let text: string;
    try {
      text = readFileSync(join(this.dir, LANE_CATALOG_FILE), 'utf8');
    } catch {
      return;
    }
    try {
      this.catalog.load(parseLaneCatalogJson(text));
    } catch (err) {
      this.log('warn', `${LANE_CATALOG_FILE} is unreadable (${(err as Error).message}); it is rebuilt from what arrives`);
    }
  }

  /** Starts the periodic flush. */
  start(flushIntervalS: number): void {
    if (this.timer !== null) return;
    this.timer = setInterval(() => {
      this.syncExternalEngines();
      this.flush();
    }, Math.max(0.01, flushIntervalS) * 1000);
  }

  /** Stops the timer and writes everything held (the final flush). Returns whether it all went. */
  close(): boolean {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    if (this.renewal !== null) clearImmediate(this.renewal);
    this.renewal = null;
    this.samples.stop();
    const ok = this.flush();
    this.sidecars.write(true);
    return ok;
  }

  // ------------------------------------------------------------------ ingest

  /**
   * One NDJSON batch of `stream`: its valid lines are taken and its invalid ones left out and counted; a
   * batch with no valid line is refused (with the first problem). With a write-ahead log, `durable`
   * settles once the batch is on disk, and a batch already logged under the same `id` is not taken twice; an `id`
   * older than the producer's numbers the log remembers, and not among them, is refused (it may be either).
   * `bytes` (the body as it arrived) is logged as it is.
   */
  ingest(stream: IngestStream, body: string, id?: BatchId, bytes?: Uint8Array): IngestOutcome {
    if (id !== undefined && this.wal !== null) {
      const key = `${id.producer}/${id.seq}`;
      const failed = this.unlogged.get(key);
      if (failed !== undefined) {
        // its records were taken when it first came and only its log entry failed: logged again, not taken again
        this.unlogged.delete(key);
        this.unloggedBytes -= bodyBytes(failed.body);
        const { accepted, rejected, problems } = failed;
        return { ok: true, accepted, rejected, problems, duplicate: false, durable: this.logBatch(failed) };
      }
      const state = this.wal.state(id.producer, id.seq);
      // a retry of a batch still on its way to disk is answered with it: 200 once it is there, 503 if that fails
      if (state === 'logged') return { ok: true, accepted: 0, rejected: 0, problems: [], duplicate: true, durable: this.wal.inFlightDurable(id.producer, id.seq) ?? DURABLE };
      if (state === 'forgotten') {
        return {
          ok: false,
          conflict: `batch ${key} is older than the last ${BATCH_WINDOW} batch numbers of producer ${id.producer} this collector remembers, and not among them: it cannot tell new records from a retry of logged ones, so nothing was taken (number each batch anew, counting up, and send a retry within ${BATCH_WINDOW} batches)`,
        };
      }
      if (state === 'idle') {
        return {
          ok: false,
          conflict: `batch ${key} is at or below ${this.wal.forgottenMark(id.producer)}, the highest batch number of producer ${id.producer} this collector logged before it forgot that producer's numbers (it had sent no batch for ${PRODUCER_IDLE_S} s, or ${MAX_PRODUCERS} producers had sent one since): it cannot tell new records from a retry of logged ones, so nothing was taken (send new records under a number above it; a retry is answered as a duplicate within ${PRODUCER_IDLE_S} s of the producer's last batch)`,
        };
      }
    }
    if (this.wal !== null && (this.unlogged.size >= UNLOGGED_MAX_BATCHES || this.unloggedBytes >= UNLOGGED_MAX_BYTES)) {
      return {
        ok: false,
        unavailable: `the write-ahead log in ${join(this.dir, WAL_DIR)} keeps failing and ${this.unlogged.size} batches (${this.unloggedBytes} bytes) whose log write failed are held already; nothing of this batch was taken: send it again`,
      };
    }
    let accepted: number;
    let problems: IngestProblem[];
    if (stream === SAMPLES_STREAM) {
      // the last sample of a step writes the step's file; a replay of the log writes it again, the same
      ({ accepted, problems } = this.samples.take(body));
      if (accepted === 0 && problems.length > 0) return { ok: false, problem: problems[0] };
    } else {
      const r = ingestBatch(stream, body);
      if (r.records.length === 0 && r.problems.length > 0) return { ok: false, problem: r.problems[0] };
      this.counters[stream].rejected += r.problems.length;
      accepted = this.apply(stream, r.records);
      problems = r.problems;
    }
    const answer = { accepted, rejected: problems.length, problems: problems.slice(0, PROBLEMS_SHOWN) };
    let durable = DURABLE;
    if (this.wal !== null && accepted > 0) {
      durable = id === undefined ? this.wal.append({ stream, producer: '-', seq: 0, body: bytes ?? body }) : this.logBatch({ id, stream, body: bytes ?? body, ...answer });
    }
    return { ok: true, ...answer, duplicate: false, durable };
  }

  /** Logs a numbered batch; when that fails, a retry under its number is logged again without being taken twice. */
  private logBatch(b: { id: BatchId; stream: IngestStream; body: string | Uint8Array; accepted: number; rejected: number; problems: IngestProblem[] }): Promise<void> {
    const durable = this.wal!.append({ stream: b.stream, producer: b.id.producer, seq: b.id.seq, body: b.body });
    durable.catch(() => {
      // held until a retry logs it or a rotation holds its records; never let go before (a retry would be taken
      // twice): new batches are refused instead while the store is full
      const key = `${b.id.producer}/${b.id.seq}`;
      const before = this.unlogged.get(key);
      if (before !== undefined) this.unloggedBytes -= bodyBytes(before.body);
      this.unlogged.set(key, b);
      this.unloggedBytes += bodyBytes(b.body);
    });
    return durable;
  }

  private apply(stream: StreamName, records: IngestRecord[]): number {
    if (stream === 'metrics' && !this.roundedStepSaid) {
      const huge = records.find((x) => !isExactStep((x.record as StreamRecord['metrics']).step));
      if (huge !== undefined) {
        this.roundedStepSaid = true;
        const step = (huge.record as StreamRecord['metrics']).step;
        this.log('warn', `${join(this.dir, flatFile('metrics'))}: a metrics record's ${roundedStepNote(step!)}`);
      }
    }
    if (stream === 'topology') {
      this.counters.topology.received += records.length;
      for (const x of records) this.updateTopology(x.record as TopologySnapshot);
    } else {
      for (const x of records) this.take(stream, x);
    }
    return records.length;
  }

  /** A record the collector produced itself (a scraped engine sample): held, and logged with the next group. */
  takeOwn<S extends StreamName>(stream: S, x: IngestRecord<S>): void {
    this.take(stream, x);
    this.wal?.appendOwn(stream, x.line);
  }

  /** Holds one checked record (the scraper calls this directly). */
  take<S extends StreamName>(stream: S, x: IngestRecord<S>): void {
    const buf = this.buffers[stream];
    const c = this.counters[stream];
    c.received++;
    let hour = 0;
    if (buf.partitioned) hour = Math.floor(partitionTs(stream as never, x.record as never) / HOUR_SECONDS);
    c.dropped += buf.push(x.line, hour);
    this.noteLatest(stream, x.record);
  }

  private noteLatest<S extends StreamName>(stream: S, record: StreamRecord[S]): void {
    switch (stream) {
      case 'gpu_util': {
        const s = record as GpuSample;
        let node = this.latest.gpus.get(s.node);
        if (node === undefined) this.latest.gpus.set(s.node, (node = new Map()));
        if (!node.has(s.gpu)) this.catalog.addGpu(s);
        node.set(s.gpu, { ...s, received: this.now() });
        break;
      }
      case 'engine_series': {
        const s = record as EngineSample;
        this.scrapedEngines.set(s.addr, this.now());
        if (s.metric === 'sglang_num_running_reqs') {
          const prev = this.latest.runningRequests.get(s.addr);
          // dp ranks of one tick share its timestamp: sum them
          this.latest.runningRequests.set(s.addr, { ts: s.ts, value: (prev !== undefined && prev.ts === s.ts ? prev.value : 0) + s.value });
        }
        break;
      }
      case 'phases': {
        const e = record as PhaseEvent;
        if (e.t1 !== OPEN_T1) this.latest.phaseSeconds.set(e.name, e.t1 - e.t0);
        this.catalog.addPhase(e);
        break;
      }
      default:
    }
  }

  /**
   * A scrape of `addr` failed (null: of the router, so of every engine read through it): its running
   * requests are no longer the engine's, and stay unexported until it is read again.
   */
  engineScrapeFailed(addr: string | null): void {
    for (const [engine, v] of this.latest.runningRequests) if (addr === null || engine === addr) v.failed = true;
  }

  /**
   * Engines the scraper saw within the last `externalEngineMaxAgeS` and no producer registered: the
   * `external` entries of the next snapshot. One not seen for longer has left (the router stopped naming it,
   * or it stopped answering), as a registered engine leaves when its producer's snapshot drops it.
   */
  private liveExternalEngines(): string[] {
    const since = this.now() - this.externalEngineMaxAgeS;
    const out: string[] = [];
    for (const [addr, seen] of this.scrapedEngines) {
      if (seen < since) this.scrapedEngines.delete(addr);
      else if (!this.actorEngines.has(addr)) out.push(addr);
    }
    return out.sort();
  }

  /**
   * A topology snapshot: registered engines are remembered, engines only the scraper knows (and saw
   * recently) are kept as `external`, and a snapshot with the same engines as the last one is not written again.
   */
  updateTopology(snap: TopologySnapshot): void {
    for (const e of snap.engines) if (e.worker_type !== 'external') this.actorEngines.add(e.addr);
    const engines = [...snap.engines];
    const present = new Set(engines.map((e) => e.addr));
    for (const addr of this.liveExternalEngines()) {
      if (!present.has(addr)) engines.push({ addr, worker_type: 'external', engine_rank: -1, gpus: [], gpu_uuids: [] });
    }
    if (this.lastTopology !== null && sameEngines(this.lastTopology, engines)) return;
    this.lastTopology = engines;
    const record = { ts: snap.ts, engines };
    this.buffers.topology.push(encodeTopology(record), 0);
    this.catalog.addTopology(record);
  }

  /**
   * Engines scraped but in no snapshot become `external` entries of a new one, and `external` entries not
   * seen for `externalEngineMaxAgeS` leave it (each flush tick).
   */
  syncExternalEngines(): void {
    const last = this.lastTopology ?? [];
    const live = this.liveExternalEngines();
    const known = new Set(last.map((e) => e.addr));
    const liveSet = new Set(live);
    const changed = live.some((a) => !known.has(a)) || last.some((e) => e.worker_type === 'external' && !liveSet.has(e.addr));
    if (changed) {
      const before = this.buffers.topology.length;
      this.updateTopology({ ts: this.now(), engines: (this.lastTopology ?? []).filter((e) => e.worker_type !== 'external') });
      if (this.buffers.topology.length > before) this.wal?.appendOwn('topology', this.buffers.topology.lines.at(-1)!);
    }
  }

  /** Addresses of the engines in the last snapshot, externals included (what direct scraping polls). */
  engineAddrs(): string[] {
    return (this.lastTopology ?? []).map((e) => e.addr);
  }

  /** Addresses of the engines a producer reported in the last snapshot (not those only the scraper found). */
  reportedEngineAddrs(): string[] {
    return (this.lastTopology ?? []).filter((e) => e.worker_type !== 'external').map((e) => e.addr);
  }

  // ------------------------------------------------------------------- flush

  /** Appends everything held; returns true when nothing is left held. Never throws. */
  flush(): boolean {
    for (const s of STREAMS) {
      const buf = this.buffers[s];
      if (buf.droppedSinceReport > 0) {
        this.log('error', `dropped ${buf.droppedSinceReport} ${s} records since the last flush: ${buf.cap} were held (buffer cap) — is the disk full or failing?`);
        buf.droppedSinceReport = 0;
      }
    }
    let ok = true;
    if (this.catalog.changed) {
      try {
        this.writer.replace(LANE_CATALOG_FILE, this.catalog.toJson());
        this.catalog.changed = false;
      } catch (err) {
        ok = false;
        this.log('error', `writing ${LANE_CATALOG_FILE} in ${this.dir} failed (${describe(err)}); retried next flush`);
      }
    }
    const failed: string[] = [];
    const fileOf = (s: StreamName, hour: number): string => (isPartitioned(s) ? partitionFile(s, hourKey(hour * HOUR_SECONDS)) : flatFile(s));
    const groupsOf = Object.fromEntries(STREAMS.map((s) => [s, this.buffers[s].groups()])) as Record<StreamName, ReturnType<StreamBuffer['groups']>>;
    if (this.wal !== null) {
      // a damaged segment takes no more appends (nor this flush's mark): a fresh one replaces it first
      if (this.wal.damaged !== null) {
        const err = this.rotateLog();
        if (err !== null) {
          this.flushErrors++;
          this.log('error', `write-ahead log in ${join(this.dir, WAL_DIR)} failed (${describe(err)}); nothing appended, everything held for the next flush`);
          return false;
        }
      }
      // the sizes this flush starts from: a restart cuts the files back to them if the flush does not finish
      try {
        const sizes: Record<string, number> = {};
        for (const s of STREAMS) for (const g of groupsOf[s]) sizes[fileOf(s, g.hour)] = this.writer.prepare(fileOf(s, g.hour));
        this.wal.beginFlush({ ...sizes, ...(this.unsettledSizes ?? {}) });
        this.unsettledSizes = { ...sizes, ...(this.unsettledSizes ?? {}) };
      } catch (err) {
        this.flushErrors++;
        this.log('error', `write-ahead log in ${join(this.dir, WAL_DIR)} failed (${describe(err)}); nothing appended, everything held for the next flush`);
        return false;
      }
    }
    for (const s of STREAMS) {
      const buf = this.buffers[s];
      if (buf.length === 0) continue;
      const groups = groupsOf[s];
      let i = 0;
      try {
        for (; i < groups.length; i++) {
          const g = groups[i];
          this.writer.appendLines(fileOf(s, g.hour), g.lines);
          this.counters[s].written += g.lines.length;
        }
        buf.keepOnly([]);
      } catch (err) {
        buf.keepOnly(groups.slice(i));
        failed.push(`${s} (${describe(err)})`);
      }
    }
    if (this.wal !== null) {
      // what is still held goes into the new log segment; the old one (and the flush mark) go
      const err = this.rotateLog();
      if (err !== null) failed.push(`the write-ahead log (${describe(err)})`);
    }
    for (const t of this.writer.tornTails.splice(0)) {
      this.tornTailsCut++;
      this.log('warn', `cut ${t.bytes} bytes of an unfinished last line from ${t.file} (left by a writer that stopped mid-write)`);
    }
    if (failed.length > 0) {
      this.flushErrors++;
      const held = STREAMS.filter((s) => this.buffers[s].length > 0).map((s) => `${s} ${this.buffers[s].length}`);
      this.log('error', `flush to ${this.dir} failed for ${failed.join(', ')}; still held: ${held.join(', ')} records (kept for the next flush, up to ${this.buffers.gpu_util.cap} per stream)`);
      return false;
    }
    this.sidecars.write();
    if (ok) this.lastFlushOk = this.now();
    return ok;
  }

  /** An unexpected error in a request or a tick: logged, never fatal. */
  reportError(err: unknown): void {
    this.log('error', `unexpected error: ${describe(err)}`);
  }

  health(): CollectorHealth {
    const streams = Object.fromEntries(STREAMS.map((s) => [s, { ...this.counters[s], buffered: this.buffers[s].length }])) as Record<StreamName, StreamHealth>;
    const s = this.samples;
    const samples = { received: s.samplesReceived, rejected: s.samplesRejected, stepsWritten: s.stepsWritten, writeErrors: s.writeErrors, stepsArriving: s.arrivingSteps() };
    return { streams, samples, flushErrors: this.flushErrors, lastFlushOk: this.lastFlushOk, tornTailsCut: this.tornTailsCut };
  }
}

const bodyBytes = (body: string | Uint8Array): number => (typeof body === 'string' ? Buffer.byteLength(body, 'utf8') : body.length);

function sameEngines(a: readonly EngineInfo[], b: readonly EngineInfo[]): boolean {
  if (a.length !== b.length) return false;
  return a.every((e, i) => JSON.stringify(e) === JSON.stringify(b[i]));
}

function describe(err: unknown): string {
  const e = err as NodeJS.ErrnoException;
  return e?.code ? `${e.code}: ${e.message}` : String(e?.message ?? err);
}
