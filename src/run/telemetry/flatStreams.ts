// The run header and the three single-file streams (metrics, topology, data_buffer): read whole at
// open, then tailed by byte offset. They are small next to the hourly partitions, so they are parsed
// eagerly into records.
import { join } from 'node:path';
import { isExactStep, roundedStepNote } from '../../formats/roundedStep.ts';
import type { TelemetryIo } from './io.ts';
import { stampOf } from './io.ts';
import { decodeLine, hasExactKeys, isInt, isNum, lineEnd, parsePythonJson, UNDECODED } from '../../formats/columns/lineScan.ts';
import type { DataBufferSample, EngineInfo, FlatStream, MetricsRecord, MetricValue, RunMeta, TopologySnapshot, TopologyWindow } from './records.ts';
import { strAsc } from './laneCatalog.ts';
import { FLAT_STREAMS, flatFile } from '../../formats/dashboard/layout.ts';
import { ENGINE_INFO_FIELDS, FIELDS, META_FIELDS } from '../../formats/dashboard/records.ts';

/** Why a record lacks or adds keys of its declared fields. */
function keysProblem(what: string, fields: readonly string[]): string {
  return `${what} must have exactly the keys ${fields.join(', ')}`;
}

interface FlatTail {
  stream: FlatStream;
  path: string;
  rel: string;
  offset: number;
  lines: number;
  /** Whether a metrics step beyond 2^53 was said (once per file, as the TensorBoard reader says it). */
  roundedStep?: true;
}

/** What one `follow()` of the flat streams brought in. */
export interface FlatFollow {
  /** Records added per stream (streams without new records are absent). */
  added: Partial<Record<FlatStream, number>>;
  newMetricKeys: string[];
  newStepKeys: string[];
  metaChanged: boolean;
}

/** Reports a skipped line: file relative to `dashboard/`, 1-based line, reason. */
export type WarnLine = (file: string, line: number, message: string) => void;

export class FlatStreams {
  private _meta: RunMeta | null = null;
  private metaStamp = '';
  private readonly metrics: MetricsRecord[] = [];
  private readonly topology: TopologySnapshot[] = [];
  private readonly dataBuffer: DataBufferSample[] = [];
  private readonly metricKeySet = new Set<string>();
  private readonly stepKeySet = new Set<string>();
  private tsMin = Infinity;
  private tsMax = -Infinity;
  private readonly tails: FlatTail[];

  constructor(
    private readonly dir: string,
    private readonly io: TelemetryIo,
    private readonly warn: WarnLine,
  ) {
    this.tails = FLAT_STREAMS.map((stream) => ({ stream, path: join(dir, flatFile(stream)), rel: flatFile(stream), offset: 0, lines: 0 }));
  }

  /** Reads a rewritten `meta.json` and the complete lines appended to each stream since the last call. */
  follow(): FlatFollow {
    const out: FlatFollow = { added: {}, newMetricKeys: [], newStepKeys: [], metaChanged: this.readMeta() };
    for (const t of this.tails) {
      const n = this.tail(t, out.newMetricKeys, out.newStepKeys);
      if (n > 0) out.added[t.stream] = n;
    }
    out.newMetricKeys.sort();
    out.newStepKeys.sort();
    return out;
  }

  meta(): RunMeta | null {
    return this._meta;
  }

  /** Complete lines of the stream's file read so far. */
  linesRead(stream: FlatStream): number {
    return this.tails.find((t) => t.stream === stream)?.lines ?? 0;
  }

  /** `[min, max]` of every flat record's ts (`[Infinity, -Infinity]` without records). */
  stampRange(): [number, number] {
    return [this.tsMin, this.tsMax];
  }

  has(stream: FlatStream): boolean {
    return (stream === 'metrics' ? this.metrics : stream === 'topology' ? this.topology : this.dataBuffer).length > 0;
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

  private readMeta(): boolean {
    const path = join(this.dir, 'meta.json');
    this.noteRefusal(path, 'meta.json');
    const stamp = stampOf(this.io, path);
    if (stamp === this.metaStamp) return false;
    this.metaStamp = stamp;
    if (stamp === '') {
      const had = this._meta !== null;
      this._meta = null;
      return had;
    }
    try {
      const o = parsePythonJson(this.io.readText(path)) as any;
      // Unlike the reference (strict `Meta(**json)`), keys a newer writer adds are ignored, not fatal.
      if (o === null || typeof o !== 'object' || typeof o.run_name !== 'string' || !isNum(o.start_ts)) {
        throw new Error(`expected the keys ${META_FIELDS.join(', ')}`);
      }
      this._meta = { run_name: o.run_name, start_ts: o.start_ts, args: o.args && typeof o.args === 'object' ? o.args : {}, schema_version: isInt(o.schema_version) ? o.schema_version : 1 };
    } catch (err) {
      this.warn('meta.json', 1, `unreadable run header: ${(err as Error).message}`);
      this._meta = null;
    }
    return true;
  }

  /** Warns (once per file and reason) when a flat file exists but is not read: never an open of a FIFO. */
  private noteRefusal(path: string, rel: string): boolean {
    const why = this.io.refusal?.(path) ?? null;
    if (why !== null) this.warn(rel, 0, why);
    return why !== null;
  }

  private tail(t: FlatTail, newKeys: string[], newSteps: string[]): number {
    let added = 0;
    if (this.noteRefusal(t.path, t.rel)) return 0;
    let r;
    try {
      r = this.readTail(t, newKeys, newSteps, (n) => (added += n));
    } catch (err) {
      // Whatever else stops the read (a permission, an I/O error) skips this stream, not the store.
      this.warn(t.rel, 0, `unreadable: ${(err as Error).message}`);
      return added;
    }
    t.offset = r.offset;
    return added;
  }

  private readTail(t: FlatTail, newKeys: string[], newSteps: string[], count: (n: number) => void) {
    let added = 0;
    const r = this.io.readLines(t.path, t.offset, (chunk) => {
      const buf = chunk.buf;
      let p = 0;
      while (p < chunk.end) {
        const nl = lineEnd(buf, p, chunk.end);
        t.lines++;
        const o = decodeLine(buf, p, nl, t.lines, (line, message) => this.warn(t.rel, line, message), parsePythonJson);
        p = nl + 1;
        if (o === UNDECODED) continue;
        const problem = this.add(t.stream, o, newKeys, newSteps);
        if (problem !== null) this.warn(t.rel, t.lines, problem);
        else added++;
        const step = problem === null && t.stream === 'metrics' ? (o as { step: number | null }).step : null;
        if (!t.roundedStep && !isExactStep(step)) {
          // JSON's digits were read as the nearest double: a TensorBoard global step this large can be
          t.roundedStep = true;
          this.warn(t.rel, t.lines, roundedStepNote(step!));
        }
      }
    });
    count(added);
    return r;
  }

  /** Validates and keeps one decoded record; returns why it is corrupt, or null. */
  private add(stream: FlatStream, o: any, newKeys: string[], newSteps: string[]): string | null {
    if (o === null || typeof o !== 'object' || Array.isArray(o)) return `${stream} record must be an object`;
    if (stream === 'metrics') {
      if (!hasExactKeys(o, FIELDS.metrics)) return keysProblem('metrics record', FIELDS.metrics);
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
      if (!hasExactKeys(o, FIELDS.topology)) return keysProblem('topology record', FIELDS.topology);
      if (!isNum(o.ts) || !Array.isArray(o.engines)) return 'topology record has a value of the wrong type';
      const engines: EngineInfo[] = [];
      for (const e of o.engines) {
        if (!hasExactKeys(e, ENGINE_INFO_FIELDS)) return keysProblem('topology engine', ENGINE_INFO_FIELDS);
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
      this.topology.push({ ts: o.ts, engines });
      this.stamp(o.ts);
      return null;
    }
    if (!hasExactKeys(o, FIELDS.data_buffer)) return keysProblem('data_buffer record', FIELDS.data_buffer);
    if (!isNum(o.ts) || !isInt(o.length)) return 'data_buffer record has a value of the wrong type';
    this.dataBuffer.push({ ts: o.ts, length: o.length });
    this.stamp(o.ts);
    return null;
  }

  private stamp(ts: number): void {
    if (ts < this.tsMin) this.tsMin = ts;
    if (ts > this.tsMax) this.tsMax = ts;
  }
}
