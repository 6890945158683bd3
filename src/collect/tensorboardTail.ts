// `collect --tensorboard LOGDIR`: the trainer's TensorBoard scalars, read as the event files grow, become
// records of `metrics.jsonl` on the `tensorboard/step` axis. A restarted collector reads the logdir from the
// start again and skips the events `metrics.jsonl` already holds, so each is recorded once.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { decodeLine, encodeMetrics, flatFile, type MetricsRecord } from '../formats/dashboard/index.ts';
import { TENSORBOARD_STEP_KEY, TensorBoardLogdir, tensorBoardKey } from '../formats/tfeventsLogdir.ts';

/** What identifies one event's record: wall time, step and keys. */
const signature = (r: MetricsRecord): string => `${r.ts}|${r.step}|${Object.keys(r.metrics).join(',')}`;

export class TensorBoardTail {
  private readonly logdir: TensorBoardLogdir;
  private readonly recorded = new Set<string>();
  private reported = 0;
  private timer: NodeJS.Timeout | null = null;

  constructor(
    dir: string,
    dashboardDir: string,
    private readonly sink: (record: MetricsRecord, line: string) => void,
    private readonly log: (level: 'info' | 'warn' | 'error', message: string) => void,
  ) {
    this.logdir = new TensorBoardLogdir(dir);
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
  }

  /** Reads what the event files gained; returns how many records it took. */
  poll(): number {
    let n = 0;
    const several = this.logdir.runs().length > 1;
    for (const e of this.logdir.read()) {
      const metrics: Record<string, number> = {};
      for (const s of e.scalars) metrics[tensorBoardKey(e.run, s.tag, several || this.logdir.runs().length > 1)] = s.value;
      const record: MetricsRecord = { ts: e.wallTime, step_key: TENSORBOARD_STEP_KEY, step: e.step, metrics };
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
