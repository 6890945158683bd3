// `collect --tensorboard LOGDIR`: the trainer's TensorBoard scalars, read as the event files grow, become
// records of `metrics.jsonl` on the `tensorboard/step` axis. A restarted collector reads the logdir from the
// start again and skips the events `metrics.jsonl` already holds, so each is recorded once.
// A run folder's keys are fixed when it is first recorded (bare tags when it is the logdir's only run, else
// `RUN/TAG`), and so is each key's place beside the run's own metrics (`tensorboard/KEY` when the run's own
// records in `metrics.jsonl` hold that key then); both are kept in `tensorboard_runs.json`, so a folder or a key
// added later renames nothing already recorded.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { readGainedSync } from '../formats/fileAccess.ts';
import { encodeMetrics, flatFile, type MetricsRecord } from '../formats/dashboard/index.ts';
import { DashboardWriter } from '../formats/dashboard/writer.ts';
import { parsePyJson } from '../formats/pythonJson.ts';
import { apartKey, TENSORBOARD_STEP_KEY, TensorBoardLogdir, TensorBoardNaming, tensorBoardKey, type TensorBoardEvent } from '../formats/tfeventsLogdir.ts';

/** Beside `metrics.jsonl`: run folder → whether its keys carry the folder (`RUN/TAG`), key → whether it is `tensorboard/KEY`. */
export const TENSORBOARD_RUNS_FILE = 'tensorboard_runs.json';

/** What identifies one event's record: wall time, step and keys. */
const signature = (ts: number, step: number, keys: readonly string[]): string => `${ts}|${step}|${keys.join(',')}`;

/**
 * A line of `metrics.jsonl` as far as the tail needs it, read leniently (only the fields it compares); a step
 * beyond 2^53 is read as the nearest double, as the event's step was when the tail wrote it.
 */
function metricsLine(line: string): { ts: number; stepKey: string | null; step: number; keys: string[] } | null {
  let v: unknown;
  try {
    v = parsePyJson(line);
  } catch {
    return null;
  }
  const r = v as { ts?: unknown; step_key?: unknown; step?: unknown; metrics?: unknown } | null;
  if (r === null || typeof r !== 'object' || typeof r.metrics !== 'object' || r.metrics === null) return null;
  return { ts: Number(r.ts), stepKey: typeof r.step_key === 'string' ? r.step_key : null, step: Number(r.step), keys: Object.keys(r.metrics) };
}

/** Naming that recognizes what `metrics.jsonl` shows was recorded before, when the runs file does not say. */
class RecordedNaming extends TensorBoardNaming {
  constructor(
    logdir: TensorBoardLogdir,
    ownKeys: () => ReadonlySet<string>,
    /** No runs file to trust: a folder recorded before is recognized by its events in `metrics.jsonl`. */
    private readonly recognizeRuns: boolean,
    /** Signatures of the scalar records `metrics.jsonl` holds. */
    private readonly recorded: ReadonlySet<string>,
    /** The keys of the scalar records `metrics.jsonl` held at the start. */
    private readonly recordedKeys: ReadonlySet<string>,
  ) {
    super(logdir, ownKeys);
  }

  /** The keys `e` was recorded under before, had its folder been named `prefixed`. */
  private recordedAs(e: TensorBoardEvent, prefixed: boolean): string {
    const keys = e.scalars.map((s) => {
      const key = tensorBoardKey(e.run, s.tag, prefixed);
      return this.recordedKeys.has(apartKey(key)) ? apartKey(key) : key;
    });
    return signature(e.wallTime, e.step, keys);
  }

  protected override newRunPrefixed(e: TensorBoardEvent): boolean {
    const bareTaken = [...this.prefixed.values()].includes(false);
    if (this.recognizeRuns && this.recorded.has(this.recordedAs(e, true))) return true;
    if (this.recognizeRuns && !bareTaken && this.recorded.has(this.recordedAs(e, false))) return false;
    return super.newRunPrefixed(e);
  }

  protected override newKeyApart(key: string): boolean {
    if (this.recordedKeys.has(apartKey(key))) return true;
    if (this.recordedKeys.has(key)) return false;
    return super.newKeyApart(key);
  }
}

export class TensorBoardTail {
  private readonly logdir: TensorBoardLogdir;
  private readonly writer: DashboardWriter;
  private readonly naming: RecordedNaming;
  private readonly recorded = new Set<string>();
  /** The run's own metric and step keys, from its records in `metrics.jsonl` (read again at every poll). */
  private readonly own = new Set<string>();
  private readonly metricsPath: string;
  /** How far `metrics.jsonl` has been read for the run's own keys. */
  private metricsOffset = 0;
  /** Events read but not recorded yet (the runs file could not be written). */
  private held: TensorBoardEvent[] = [];
  private saveFailed = false;
  private reported = 0;
  private timer: NodeJS.Timeout | null = null;

  constructor(
    dir: string,
    dashboardDir: string,
    private readonly sink: (record: MetricsRecord, line: string) => void,
    private readonly log: (level: 'info' | 'warn' | 'error', message: string) => void,
  ) {
    this.logdir = new TensorBoardLogdir(dir);
    this.writer = new DashboardWriter(dashboardDir);
    this.metricsPath = join(dashboardDir, flatFile('metrics'));
    const recordedKeys = new Set<string>();
    this.readMetrics((l) => {
      this.recorded.add(signature(l.ts, l.step, l.keys));
      for (const k of l.keys) recordedKeys.add(k);
    });
    const runs = this.loadRuns(join(dashboardDir, TENSORBOARD_RUNS_FILE));
    this.naming = new RecordedNaming(this.logdir, () => this.own, runs === null, this.recorded, recordedKeys);
    if (runs !== null) {
      for (const [run, p] of Object.entries(runs.runs)) this.naming.prefixed.set(run, p);
      for (const [key, a] of Object.entries(runs.keys)) this.naming.apart.set(key, a);
    }
  }

  /** Reads the lines `metrics.jsonl` gained: the run's own records' keys, and the scalar records to `scalar`. */
  private readMetrics(scalar: (l: NonNullable<ReturnType<typeof metricsLine>>) => void = () => {}): void {
    const buf = readGainedSync(this.metricsPath, this.metricsOffset);
    if (buf === null || buf.length === 0) return; // no metrics yet, or nothing new
    // whole lines only: the last one may still be being appended
    const end = buf.lastIndexOf(10) + 1;
    this.metricsOffset += end;
    for (const line of buf.subarray(0, end).toString('utf8').split('\n')) {
      const l = metricsLine(line);
      if (l === null) continue;
      if (l.stepKey === TENSORBOARD_STEP_KEY) scalar(l);
      else {
        for (const k of l.keys) this.own.add(k);
        if (l.stepKey !== null) this.own.add(l.stepKey);
      }
    }
  }

  /** Reads the runs file; null when there is none to trust. */
  private loadRuns(path: string): { runs: Record<string, boolean>; keys: Record<string, boolean> } | null {
    let text: string;
    try {
      text = readFileSync(path, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') this.log('warn', `tensorboard: cannot read ${path} (${(err as Error).message}); run folders are recognized by what metrics.jsonl holds`);
      return null;
    }
    let file: { runs?: unknown; keys?: unknown } | null;
    try {
      file = JSON.parse(text) as { runs?: unknown; keys?: unknown } | null;
    } catch {
      file = null;
    }
    // a file written before keys were kept has runs only: its keys are recognized by what metrics.jsonl holds
    const flags = (x: unknown): x is Record<string, boolean> => typeof x === 'object' && x !== null && !Array.isArray(x) && Object.values(x).every((v) => typeof v === 'boolean');
    if (file === null || !flags(file.runs) || (file.keys !== undefined && !flags(file.keys))) {
      this.log('warn', `tensorboard: ${path} is not a runs file; run folders are recognized by what metrics.jsonl holds`);
      return null;
    }
    return { runs: file.runs, keys: file.keys ?? {} };
  }

  /** Keeps the naming chosen since the last save; false (and the choices taken back) when it cannot be written. */
  private saveNaming(e: TensorBoardEvent): boolean {
    if (!this.naming.unsettled) return true;
    const sorted = (m: Map<string, boolean>) => Object.fromEntries([...m].sort(([a], [b]) => (a < b ? -1 : 1)));
    try {
      this.writer.replace(TENSORBOARD_RUNS_FILE, `${JSON.stringify({ runs: sorted(this.naming.prefixed), keys: sorted(this.naming.apart) })}\n`);
    } catch (err) {
      this.naming.undo();
      if (!this.saveFailed) this.log('warn', `tensorboard: cannot write ${TENSORBOARD_RUNS_FILE} (${(err as Error).message}); the scalars of ${e.run || 'the logdir'} wait until it can be written`);
      this.saveFailed = true;
      return false;
    }
    this.naming.settle();
    this.saveFailed = false;
    return true;
  }

  /** Reads what the event files gained; returns how many records it took. */
  poll(): number {
    // the run's own keys as `metrics.jsonl` holds them now, for the scalars' keys first seen in this poll
    this.readMetrics();
    let n = 0;
    const events = [...this.held, ...this.logdir.read()];
    this.held = [];
    for (let i = 0; i < events.length; i++) {
      const e = events[i];
      const metrics = this.naming.metrics(e);
      if (!this.saveNaming(e)) {
        this.held = events.slice(i);
        break;
      }
      const record: MetricsRecord = { ts: e.wallTime, step_key: TENSORBOARD_STEP_KEY, step: e.step, metrics };
      const sig = signature(record.ts, e.step, Object.keys(metrics));
      if (this.recorded.has(sig)) continue;
      this.recorded.add(sig);
      // TensorBoard scalars are floats: written as floats even when whole
      this.sink(record, encodeMetrics(record, (k) => k !== TENSORBOARD_STEP_KEY));
      n++;
    }
    for (; this.reported < this.logdir.problems.length; this.reported++) this.log('warn', `tensorboard ${this.logdir.problems[this.reported]}`);
    return n;
  }

  start(intervalS: number): void {
    this.poll();
    this.timer = setInterval(() => this.poll(), intervalS * 1000);
  }

  stop(): void {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    this.poll();
  }
}
