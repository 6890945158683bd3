// `collect --tensorboard LOGDIR`: the trainer's TensorBoard scalars, read as the event files grow, become
// records of `metrics.jsonl` on the `tensorboard/step` axis. A restarted collector reads the logdir from the
// start again and skips the events `metrics.jsonl` already holds, so each is recorded once.
// A run folder's keys are fixed when it is first recorded (bare tags when it is the logdir's only run, else
// `RUN/TAG`) and kept in `tensorboard_runs.json`, so a folder added later renames nothing already recorded.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { decodeLine, encodeMetrics, flatFile, type MetricsRecord } from '../formats/dashboard/index.ts';
import { DashboardWriter } from '../formats/dashboard/writer.ts';
import { TENSORBOARD_STEP_KEY, TensorBoardLogdir, tensorBoardKey, type TensorBoardEvent } from '../formats/tfeventsLogdir.ts';

/** Beside `metrics.jsonl`: run folder → whether its keys carry the folder (`RUN/TAG`). */
export const TENSORBOARD_RUNS_FILE = 'tensorboard_runs.json';

/** What identifies one event's record: wall time, step and keys. */
const signature = (r: MetricsRecord): string => `${r.ts}|${r.step}|${Object.keys(r.metrics).join(',')}`;

function recordOf(e: TensorBoardEvent, prefixed: boolean): MetricsRecord {
  const metrics: Record<string, number> = {};
  for (const s of e.scalars) metrics[tensorBoardKey(e.run, s.tag, prefixed)] = s.value;
  return { ts: e.wallTime, step_key: TENSORBOARD_STEP_KEY, step: e.step, metrics };
}

export class TensorBoardTail {
  private readonly logdir: TensorBoardLogdir;
  private readonly writer: DashboardWriter;
  private readonly recorded = new Set<string>();
  /** Run folder → whether its keys are `RUN/TAG`, fixed when it is first recorded. */
  private readonly prefixed = new Map<string, boolean>();
  /** No runs file to trust: a folder recorded before is recognized by its events in `metrics.jsonl`. */
  private readonly recognize: boolean;
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
    let text = '';
    try {
      text = readFileSync(join(dashboardDir, flatFile('metrics')), 'utf8');
    } catch {
      // no metrics yet
    }
    for (const line of text.split('\n')) {
      if (!line.includes(TENSORBOARD_STEP_KEY)) continue;
      const d = decodeLine('metrics', line);
      if (d.ok && d.record.step_key === TENSORBOARD_STEP_KEY) this.recorded.add(signature(d.record));
    }
    this.recognize = !this.loadRuns(join(dashboardDir, TENSORBOARD_RUNS_FILE));
  }

  /** Reads the runs file; false when there is none to trust. */
  private loadRuns(path: string): boolean {
    let text: string;
    try {
      text = readFileSync(path, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') this.log('warn', `tensorboard: cannot read ${path} (${(err as Error).message}); run folders are recognized by what metrics.jsonl holds`);
      return false;
    }
    let runs: unknown;
    try {
      runs = (JSON.parse(text) as { runs?: unknown }).runs;
    } catch {
      runs = undefined;
    }
    if (typeof runs !== 'object' || runs === null || Array.isArray(runs) || Object.values(runs).some((v) => typeof v !== 'boolean')) {
      this.log('warn', `tensorboard: ${path} is not a runs file; run folders are recognized by what metrics.jsonl holds`);
      return false;
    }
    for (const [run, p] of Object.entries(runs as Record<string, boolean>)) this.prefixed.set(run, p);
    return true;
  }

  /** Whether the keys of `e`'s folder are `RUN/TAG`; null when its naming could not be kept. */
  private prefixedFor(e: TensorBoardEvent): boolean | null {
    if (e.run === '') return false;
    const known = this.prefixed.get(e.run);
    if (known !== undefined) return known;
    let p: boolean;
    const bareTaken = [...this.prefixed.values()].includes(false);
    if (this.recognize && this.recorded.has(signature(recordOf(e, true)))) p = true;
    else if (this.recognize && !bareTaken && this.recorded.has(signature(recordOf(e, false)))) p = false;
    // bare tags only for a folder alone in the logdir, with no other folder recorded
    else p = this.prefixed.size > 0 || this.logdir.runs().some((r) => r !== e.run);
    this.prefixed.set(e.run, p);
    try {
      this.writer.replace(TENSORBOARD_RUNS_FILE, `${JSON.stringify({ runs: Object.fromEntries([...this.prefixed].sort(([a], [b]) => (a < b ? -1 : 1))) })}\n`);
    } catch (err) {
      this.prefixed.delete(e.run);
      if (!this.saveFailed) this.log('warn', `tensorboard: cannot write ${TENSORBOARD_RUNS_FILE} (${(err as Error).message}); the scalars of ${e.run} wait until it can be written`);
      this.saveFailed = true;
      return null;
    }
    this.saveFailed = false;
    return p;
  }

  /** Reads what the event files gained; returns how many records it took. */
  poll(): number {
    let n = 0;
    const events = [...this.held, ...this.logdir.read()];
    this.held = [];
    for (let i = 0; i < events.length; i++) {
      const e = events[i];
      const prefixed = this.prefixedFor(e);
      if (prefixed === null) {
        this.held = events.slice(i);
        break;
      }
      const record = recordOf(e, prefixed);
      const sig = signature(record);
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
