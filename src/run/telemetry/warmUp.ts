// Background warm-up: after a store opens, every hour of history not yet in the partition cache is
// parsed and persisted, newest hours first (what a viewer looks at first), on the parse threads when
// there are any, a file at a time on this thread otherwise. Nothing it parses stays resident: the
// cache files are the result, so a later cold answer reads columns instead of JSONL.
import type { TelemetryIo } from './io.ts';
import type { PartitionCache } from './partitionCache.ts';
import type { PartitionFile } from './partitionListing.ts';
import type { PartitionReader } from './partitionReader.ts';
import type { ParsePool } from './parsePool.ts';
import type { ParseResult } from '../../formats/columns/parsedColumns.ts';
import type { PartitionedStream } from './records.ts';

export interface WarmUpProgress {
  /** Distinct hours (partition keys) of the persisted streams, and how many have every stream persisted. */
  hoursDone: number;
  hoursTotal: number;
  /** Whether work remains. */
  running: boolean;
}

interface Task {
  stream: PartitionedStream;
  file: PartitionFile;
  ino: number;
  /** Only the rollup is missing (the columns are persisted): it is folded from them, nothing is parsed. */
  rollupOnly?: boolean;
}

/**
 * Resident memory a warm-up keeps the process within when it runs parses side by side, bytes: a second parse
 * waits for the first while the process and its estimated peak would pass this (the first always runs).
 */
const WARM_UP_RESIDENT_GOAL = 512 * 2 ** 20;

/** A warm-up parse's peak memory on its thread, estimated from its file's bytes (columns, read buffer, regrouping). */
function parsePeakBytes(fileBytes: number): number {
  return 0.3 * fileBytes + 16 * 2 ** 20;
}

/**
 * Streams worth persisting ahead, in the order a task list takes them within an hour: the fleet overview and
 * the advisory need an hour's GPU samples and its (small) phases file, which go before its engine series.
 */
export const WARMED: readonly PartitionedStream[] = ['gpu_util', 'phases', 'engine_series'];

export class WarmUp {
  private queue: Task[] | null = null;
  private readonly pending: { slot: number; task: Task }[] = [];
  private readonly failed = new Set<string>();

  constructor(
    private readonly readers: Record<PartitionedStream, PartitionReader<any>>,
    private readonly cache: PartitionCache,
    private readonly io: TelemetryIo,
    private readonly pool: () => ParsePool | null,
    /** Rolls up one gpu_util hour from its persisted columns. */
    private readonly rollUp: (file: PartitionFile) => void = () => {},
    /** Whether whole-window answers read an hour without parsing it though it is still to persist (a collector-written rollup). */
    private readonly answerable: (stream: PartitionedStream, file: PartitionFile) => boolean = () => false,
    /** The process's resident memory now, bytes (a second parse starts only while it leaves room). */
    private readonly residentBytes: () => number = () => process.memoryUsage.rss(),
  ) {}

  /** What remains, newest hour first; files already persisted (or resident whole) are skipped. */
  private plan(): Task[] {
    const tasks: Task[] = [];
    for (const stream of WARMED) {
      for (const file of this.readers[stream].files()) {
        if (file.size === 0 || this.failed.has(`${stream}/${file.key}`)) continue;
        const st = this.io.stat(file.path);
        if (st === null) continue;
        if (this.cache.has(stream, file.key, st)) {
          if (stream === 'gpu_util' && file.key !== 'legacy' && !this.cache.hasRollup(file.key, st)) tasks.push({ stream, file, ino: st.ino, rollupOnly: true });
          continue;
        }
        // the collector's parse beside the partition serves the hour as a persisted one would (a tail
        // appended since it was written is parsed when the hour is read)
        if (this.readers[stream].runParses?.has(stream, file.key, st)) continue;
        tasks.push({ stream, file, ino: st.ino });
      }
    }
    return tasks.sort((a, b) => (a.file.key < b.file.key ? 1 : a.file.key > b.file.key ? -1 : WARMED.indexOf(a.stream) - WARMED.indexOf(b.stream)));
  }

  /** Re-plans (after the listing changed, e.g. on follow). */
  replan(): void {
    this.queue = null;
  }

  progress(): WarmUpProgress {
    const hours = new Set<string>();
    for (const stream of WARMED) for (const f of this.readers[stream].files()) if (f.size > 0) hours.add(f.key);
    this.queue ??= this.plan();
    const open = new Set([...this.queue, ...this.pending.map((p) => p.task)].map((t) => t.file.key));
    return { hoursDone: [...hours].filter((h) => !open.has(h)).length, hoursTotal: hours.size, running: open.size > 0 };
  }

  /** The hours (partition keys) with work left in some of `streams` that an answer could not read without parsing JSONL. */
  openHours(streams: readonly PartitionedStream[] = WARMED): Set<string> {
    this.queue ??= this.plan();
    const tasks = [...this.queue, ...this.pending.map((p) => p.task)];
    return new Set(tasks.filter((t) => streams.includes(t.stream) && !this.answerable(t.stream, t.file)).map((t) => t.file.key));
  }

  /**
   * Moves the work of these hours on `streams` to the front of the queue (newest first among them): someone is
   * waiting for them (their other streams keep their place).
   */
  prefer(keys: ReadonlySet<string>, streams: readonly PartitionedStream[] = WARMED): void {
    this.queue ??= this.plan();
    const wanted = (t: Task): boolean => keys.has(t.file.key) && streams.includes(t.stream);
    const first = this.queue.filter(wanted);
    if (first.length === 0) return;
    this.queue = [...first, ...this.queue.filter((t) => !wanted(t))];
  }

  /**
   * Does a bounded piece of work: collects finished worker parses and hands out new ones to at most
   * `maxThreads` threads at once, or (without workers) parses one file here. Returns whether work remains.
   */
  step(maxThreads = Infinity): boolean {
    this.queue ??= this.plan();
    const pool = this.pool();
    if (pool !== null && pool.size > 0) {
      this.collect();
      for (let slot = pool.idle(); slot >= 0 && this.queue.length > 0 && this.pending.length < maxThreads; slot = pool.idle()) {
        // a parse beside one already running only while both fit the process's memory goal
        if (this.pending.length > 0 && this.residentBytes() + parsePeakBytes(this.queue[0]!.file.size) > WARM_UP_RESIDENT_GOAL) break;
        const task = this.queue.shift()!;
        if (task.rollupOnly) {
          this.rollUp(task.file);
          break; // one fold per step keeps the step bounded
        }
        if (this.readers[task.stream].isCached(task.file.key)) {
          // resident whole: persisting it costs no parse
          this.readers[task.stream].persistResident(task.file);
          continue;
        }
        this.pending.push({ slot, task });
        // the thread persists the parse itself: its columns never cross to this thread
        const persist = { cacheDir: this.cache.cacheDir, dashboardDir: this.cache.dashboardDir, key: task.file.key, ino: task.ino };
        pool.submit(slot, { stream: task.stream, path: task.file.path, offset: 0, view: null, rowsHint: Math.ceil(task.file.size / 100), persist });
      }
      return this.queue.length > 0 || this.pending.length > 0;
    }
    const task = this.queue.shift();
    if (task?.rollupOnly) this.rollUp(task.file);
    else if (task !== undefined) this.readers[task.stream].warm(task.file);
    return this.queue.length > 0;
  }

  /**
   * Takes in the parses the threads finished (persisting them) and hands out none: while requests are being
   * answered the warm-up starts nothing, but a thread it used is freed for them.
   */
  collect(): void {
    // nothing handed out yet: no thread is started just to be asked
    if (this.pending.length === 0) return;
    const pool = this.pool();
    if (pool === null) return;
    for (let i = this.pending.length - 1; i >= 0; i--) {
      const p = this.pending[i];
      const r = pool.poll(p.slot);
      if (r === null) continue;
      this.pending.splice(i, 1);
      this.finish(p.task, r);
    }
  }

  private finish(task: Task, r: ParseResult | 'failed'): void {
    if (r === 'failed') {
      this.failed.add(`${task.stream}/${task.file.key}`);
      return;
    }
    // a file replaced while it was parsed is planned again later
    if (!r.persisted && this.io.stat(task.file.path)?.ino === task.ino) this.cache.save(task.stream, task.file.key, task.ino, r);
  }
}
