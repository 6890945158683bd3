// The collector's write-ahead log: a batch is acknowledged only once its bytes are in a log segment on
// disk (appended and fsynced in groups), so a collector killed at any moment loses nothing it
// acknowledged. A flush notes the stream files' sizes before it appends (the flush mark), and then
// writes a new segment holding only what is still unwritten (plus the batch numbers each producer had
// logged lately) and deletes the older ones: a restart undoes a flush the kill interrupted and replays the newest
// segment, so every acknowledged record reaches its stream file exactly once. The batch numbers of a producer
// that went idle (or of the least recently seen beyond `MAX_PRODUCERS`) are reduced to its highest one, kept in a
// file beside the segments (`FORGOTTEN_FILE`) that a flush does not rewrite: a flush writes the numbers of at most
// `MAX_PRODUCERS` producers and formats again only those of producers that sent a batch since the last one.
import { closeSync, existsSync, fdatasync, fdatasyncSync, ftruncateSync, openSync, readdirSync, readFileSync, renameSync, statSync, truncateSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { makeDirs } from '../formats/dashboard/writer.ts';

/**
 * A group is written and fsynced as soon as the previous group's fsync has returned (batches arriving
 * meanwhile join the next group), or at once when it holds this many bytes.
 */
export const GROUP_COMMIT_BYTES = 1 << 20;

const SEGMENT = /^(\d{12})\.log$/;
const MARK_FILE = 'flush.json';
const HEADER = 'RLWAL1';
/**
 * The producers whose batch numbers were forgotten, each with its highest logged number (`PRODUCER MARK` lines,
 * appended; the highest mark of a producer counts).
 */
export const FORGOTTEN_FILE = 'forgotten-producers';
const FORGOTTEN_LINE = /^([A-Za-z0-9_-]{1,64}) (-?\d{1,16})$/;

/** One logged batch: the stream, who sent it (`-` for the collector itself) and the NDJSON body. */
export interface WalBatch {
  stream: string;
  producer: string;
  seq: number;
  body: string;
}

/** A batch to log: its body as the bytes that arrived when there are any (nothing is encoded again). */
export type WalEntry = Omit<WalBatch, 'body'> & { body: string | Uint8Array };

const NEWLINE = Buffer.from('\n');

/** How many batch numbers of each producer are remembered (at least; the lowest are forgotten first). */
export const BATCH_WINDOW = 4096;

/**
 * A producer that logged no batch (and sent no retry) for this long has its batch numbers forgotten, all but the
 * highest (its mark): one of its batches numbered at or below the mark is then refused (409), one above it is
 * taken. Longer than a client retries a batch (the Python client gives up after 600 s by default), so a retry
 * of a logged batch still finds its number remembered. Measured on the collector's clock; a restart counts as
 * seeing every producer the log names.
 */
export const PRODUCER_IDLE_S = 3600;

/**
 * At most this many producers' batch numbers are remembered: beyond it, the least recently seen are forgotten
 * first (down to their mark, as an idle one), even when not idle yet. This bounds the windows held and the bytes a
 * flush writes for batch numbers, however many producers (processes, forked workers) a run has had; a forgotten
 * producer's mark (its name and one number) is kept for the run.
 */
export const MAX_PRODUCERS = 1024;

/**
 * What a producer's batch number is to the log: `forgotten` below the numbers remembered and not among them,
 * `idle` at or below the mark of a producer whose numbers were forgotten (both refused: the log cannot tell).
 */
export type BatchState = 'new' | 'logged' | 'forgotten' | 'idle';

/**
 * The batch numbers of one producer the log holds: the recent ones, and below them a number at or under which
 * the log no longer knows (a batch numbered there may or may not have been logged).
 */
export class BatchWindow {
  forgotten = -1;
  readonly seqs = new Set<number>();

  add(seq: number): void {
    if (seq <= this.forgotten) return;
    this.seqs.add(seq);
    // forgotten in steps of a quarter window, so a steady producer does not sort on every batch
    if (this.seqs.size <= BATCH_WINDOW + BATCH_WINDOW / 4) return;
    const sorted = [...this.seqs].sort((a, b) => a - b);
    for (const x of sorted.slice(0, sorted.length - BATCH_WINDOW)) this.seqs.delete(x);
    this.forgotten = Math.max(this.forgotten, sorted[sorted.length - BATCH_WINDOW - 1]);
  }

  /** The highest number logged (or forgotten): what is kept of the window once the producer is forgotten. */
  highest(): number {
    let m = this.forgotten;
    for (const x of this.seqs) if (x > m) m = x;
    return m;
  }

  state(seq: number): BatchState {
    if (this.seqs.has(seq)) return 'logged';
    return seq <= this.forgotten ? 'forgotten' : 'new';
  }

  clone(): BatchWindow {
    const w = new BatchWindow();
    w.forgotten = this.forgotten;
    for (const x of this.seqs) w.seqs.add(x);
    return w;
  }

  /** `P` line fields: the forgotten mark and the numbers as ranges (`1-4096,4100`): a steady producer's are one range. */
  format(): string {
    const sorted = [...this.seqs].sort((a, b) => a - b);
    const ranges: string[] = [];
    for (let i = 0; i < sorted.length; ) {
      let j = i;
      while (j + 1 < sorted.length && sorted[j + 1] === sorted[j] + 1) j++;
      ranges.push(j === i ? String(sorted[i]) : `${sorted[i]}-${sorted[j]}`);
      i = j + 1;
    }
    return `${this.forgotten} ${ranges.join(',') || '-'}`;
  }

  /** Reads `format()`'s fields; an older log's `P producer seq` (a high-water mark) keeps that one number. */
  static parse(fields: string[]): BatchWindow | null {
    const w = new BatchWindow();
    if (fields.length === 1) {
      const seq = Number(fields[0]);
      if (!Number.isSafeInteger(seq)) return null;
      w.forgotten = seq - 1;
      w.seqs.add(seq);
      return w;
    }
    w.forgotten = Number(fields[0]);
    if (!Number.isSafeInteger(w.forgotten)) return null;
    if (fields[1] === '-') return w;
    const ranges: [number, number][] = [];
    let count = 0;
    for (const r of fields[1].split(',')) {
      const [a, b = a] = r.split('-').map(Number);
      if (!Number.isSafeInteger(a) || !Number.isSafeInteger(b) || b < a) return null;
      ranges.push([a, b]);
      count += b - a + 1;
    }
    // more numbers than a window ever holds: not a line this log wrote (a damaged one would stall the start)
    if (count > BATCH_WINDOW + BATCH_WINDOW / 4) return null;
    for (const [a, b] of ranges) for (let x = a; x <= b; x++) w.seqs.add(x);
    return w;
  }
}

/** What a restart finds: the batches to replay in order, and the files a killed flush had appended to. */
export interface WalRecovery {
  batches: WalBatch[];
  /** Producer → the batch numbers logged (a retried batch among them is already here). */
  producers: Map<string, BatchWindow>;
  /** Files (relative to the dashboard directory) cut back to their size before the interrupted flush. */
  undone: { file: string; bytes: number }[];
  /** Bytes of a last entry the kill left half-written (never acknowledged). */
  tornBytes: number;
}

/** The log segment's writes and fsyncs (tests make them fail). */
export interface WalIo {
  writeSync(fd: number, data: Uint8Array, offset: number, length: number): number;
  fdatasync(fd: number, done: (err: NodeJS.ErrnoException | null) => void): void;
  fdatasyncSync(fd: number): void;
}

export const nodeWalIo: WalIo = {
  writeSync: (fd, data, offset, length) => writeSync(fd, data, offset, length),
  fdatasync: (fd, done) => fdatasync(fd, done),
  fdatasyncSync: (fd) => fdatasyncSync(fd),
};

const segmentName = (n: number): string => `${String(n).padStart(12, '0')}.log`;

/** An entry's pieces: its header line and its body, ending in a newline. */
function entry(b: WalEntry): Uint8Array[] {
  const body = typeof b.body === 'string' ? Buffer.from(b.body, 'utf8') : b.body;
  const whole = body.length === 0 || body[body.length - 1] === 10;
  const head = Buffer.from(`B ${b.stream} ${b.producer} ${b.seq} ${body.length + (whole ? 0 : 1)}\n`, 'latin1');
  return whole ? [head, body] : [head, body, NEWLINE];
}

/**
 * Parses a segment; stops at the first entry that is not whole (the torn tail of a killed append). A batch logged
 * twice under one number (sent again after its first fsync failed) is replayed once.
 */
export function parseSegment(data: Buffer): { batches: WalBatch[]; producers: Map<string, BatchWindow>; tornBytes: number } {
  const batches: WalBatch[] = [];
  const producers = new Map<string, BatchWindow>();
  let pos = 0;
  const headerEnd = data.indexOf(10);
  if (headerEnd < 0 || data.subarray(0, headerEnd).toString('latin1').split(' ')[0] !== HEADER) return { batches, producers, tornBytes: data.length };
  pos = headerEnd + 1;
  while (pos < data.length) {
    const nl = data.indexOf(10, pos);
    if (nl < 0) break;
    const parts = data.subarray(pos, nl).toString('utf8').split(' ');
    if (parts[0] === 'P' && (parts.length === 3 || parts.length === 4)) {
      const w = BatchWindow.parse(parts.slice(2));
      if (w !== null) producers.set(parts[1], w);
      pos = nl + 1;
      continue;
    }
    if (parts[0] !== 'B' || parts.length !== 5) break;
    const len = Number(parts[4]);
    if (!Number.isSafeInteger(len) || nl + 1 + len > data.length) break;
    const b: WalBatch = { stream: parts[1], producer: parts[2], seq: Number(parts[3]), body: data.subarray(nl + 1, nl + 1 + len).toString('utf8') };
    pos = nl + 1 + len;
    if (b.producer !== '-') {
      let w = producers.get(b.producer);
      if (w === undefined) producers.set(b.producer, (w = new BatchWindow()));
      if (w.state(b.seq) === 'logged') continue;
      w.add(b.seq);
    }
    batches.push(b);
  }
  return { batches, producers, tornBytes: data.length - pos };
}

/** A producer whose batch numbers are remembered. */
interface Producer {
  window: BatchWindow;
  /** When it last sent a batch or a retry (the collector's clock, seconds). */
  seen: number;
  /** Its `P` line as of its current window, once formatted (a rotation formats only the windows that changed). */
  line: string | null;
}

const producerLine = (producer: string, w: BatchWindow): string => `P ${producer} ${w.format()}\n`;

/** A batch appended and not yet on disk: settled once (by its group's fsync, or by a rotation that holds it). */
interface Waiter {
  resolve: () => void;
  reject: (err: Error) => void;
}

export class WriteAheadLog {
  private segment = 0;
  private fd = -1;
  /** Bytes of whole entries in the open segment (a failed write is cut back to here). */
  private size = 0;
  private pending: Uint8Array[] = [];
  private pendingBytes = 0;
  /** Resolved when the group holding their batch is fsynced. */
  private waiting: Waiter[] = [];
  private scheduled: NodeJS.Immediate | null = null;
  /** An fsync is under way; `again`: a group is waiting for it to return. */
  private fsyncing = false;
  private again = false;
  /** The fsync in flight (a segment is closed only once it returns). */
  private syncing: Promise<void> = Promise.resolve();
  /** Lines the collector took itself (scraped engine series), logged with the next group. */
  private own = new Map<string, string[]>();
  /**
   * Each remembered producer's batch numbers logged (fsynced), least recently seen first (a producer seen moves to
   * the end). At most `MAX_PRODUCERS`; those idle for `PRODUCER_IDLE_S` or beyond the count go to `marks`.
   */
  private producers = new Map<string, Producer>();
  /** Producers whose numbers were forgotten → the highest one logged (its batches at or below it are refused). */
  private readonly marks = new Map<string, number>();
  /** Lines of `FORGOTTEN_FILE` (rewritten whole once it holds many more than `marks`). */
  private marksFileLines = 0;
  /** `FORGOTTEN_FILE` ends in a line a kill left half-written: the next append starts a new line first. */
  private marksFileTorn = false;
  /**
   * Batches appended and not yet fsynced (`producer/seq` → the batch's promise): a retry meanwhile is not taken
   * twice, and is answered with the original, once it is on disk.
   */
  private readonly inFlight = new Map<string, { producer: string; seq: number; durable: Promise<void>; waiter: Waiter }>();
  /**
   * Why the open segment can no longer be appended to (a write or fsync of it failed: it may end in a partial
   * entry, or its unsynced pages may be lost), until a rotation replaces it; batches meanwhile are refused.
   */
  damaged: Error | null = null;
  /** Bytes written to the log since it was opened (for the health counters). */
  bytesLogged = 0;

  constructor(
    readonly dir: string,
    private readonly io: WalIo = nodeWalIo,
    /** Called when a write or fsync of the segment fails: the caller rotates to a fresh segment. */
    private readonly onDamaged: () => void = () => {},
    /** Epoch seconds (when a producer was last seen; tests pin it). */
    private readonly now: () => number = () => Date.now() / 1000,
  ) {}

  /** Reads what a previous collector left: undoes its interrupted flush, returns the batches to replay. */
  recover(dashboardDir: string): WalRecovery {
    makeDirs(this.dir);
    const segments = readdirSync(this.dir)
      .map((f) => SEGMENT.exec(f))
      .filter((m): m is RegExpExecArray => m !== null)
      .map((m) => Number(m[1]))
      .sort((a, b) => a - b);
    const newest = segments.at(-1) ?? 0;
    const undone: { file: string; bytes: number }[] = [];
    let mark: { segment: number; sizes: Record<string, number> } | null = null;
    try {
      mark = JSON.parse(readFileSync(join(this.dir, MARK_FILE), 'utf8'));
    } catch {
      // no flush was under way
    }
    // a mark for the newest segment: that flush did not finish, so its appends are cut and replayed
    if (mark !== null && mark.segment === newest && newest > 0) {
      for (const [file, size] of Object.entries(mark.sizes)) {
        const path = join(dashboardDir, file);
        let now: number;
        try {
          now = statSync(path).size;
        } catch {
          continue;
        }
        if (now > size) {
          const fd = openSync(path, 'r+');
          try {
            ftruncateSync(fd, size);
            fdatasyncSync(fd);
          } finally {
            closeSync(fd);
          }
          undone.push({ file, bytes: now - size });
        }
      }
    }
    let result = { batches: [] as WalBatch[], producers: new Map<string, BatchWindow>(), tornBytes: 0 };
    if (newest > 0) result = parseSegment(readFileSync(join(this.dir, segmentName(newest))));
    for (const s of segments) if (s !== newest) removeFile(join(this.dir, segmentName(s)));
    this.readMarks();
    const now = this.now();
    for (const [p, w] of result.producers) {
      const window = w.clone();
      // a producer forgotten and seen again since: its window starts above its mark (so does the segment's, unless
      // the rotation that forgot it was cut short, when the two say the same)
      const mark = this.marks.get(p);
      if (mark !== undefined) window.forgotten = Math.max(window.forgotten, mark);
      this.marks.delete(p);
      this.producers.set(p, { window, seen: now, line: null });
    }
    this.segment = newest;
    if (newest > 0) this.size = statSync(join(this.dir, segmentName(newest))).size;
    return { batches: result.batches, producers: result.producers, undone, tornBytes: result.tornBytes };
  }

  /** `FORGOTTEN_FILE` into `marks` (a damaged line is skipped; the highest mark of a producer counts). */
  private readMarks(): void {
    let text: string;
    try {
      text = readFileSync(join(this.dir, FORGOTTEN_FILE), 'latin1');
    } catch {
      return;
    }
    const lines = text.split('\n');
    // the last piece is '' after a whole last line, else the half-written line of a killed append, cut (never relied
    // on: the rotation that needed it had not written its segment yet, so the segment still holds the window)
    const torn = lines.pop()!;
    if (torn !== '') {
      try {
        truncateSync(join(this.dir, FORGOTTEN_FILE), text.length - torn.length);
      } catch {
        // the next append starts a new line instead
        this.marksFileTorn = true;
      }
    }
    for (const line of lines) {
      const m = FORGOTTEN_LINE.exec(line);
      if (m === null || !Number.isSafeInteger(Number(m[2]))) continue;
      this.marks.set(m[1], Math.max(Number(m[2]), this.marks.get(m[1]) ?? -1));
    }
    this.marksFileLines = lines.length;
  }

  /**
   * A producer's batch number: `logged` when this batch is in the log or on its way there (a retry of an acknowledged
   * or in-flight batch), `forgotten` when it is older than the numbers remembered and not among them, `idle` when
   * the producer's numbers were forgotten and it is at or below its mark. Asking counts as seeing the producer.
   */
  state(producer: string, seq: number): BatchState {
    if (this.inFlight.has(`${producer}/${seq}`)) return 'logged';
    const p = this.producers.get(producer);
    if (p !== undefined) {
      this.seen(producer, p);
      return p.window.state(seq);
    }
    const mark = this.marks.get(producer);
    return mark !== undefined && seq <= mark ? 'idle' : 'new';
  }

  /** The highest batch number logged of a producer whose numbers were forgotten (undefined while remembered). */
  forgottenMark(producer: string): number | undefined {
    return this.marks.get(producer);
  }

  private seen(producer: string, p: Producer): void {
    p.seen = this.now();
    this.producers.delete(producer);
    this.producers.set(producer, p);
  }

  /** A window for a producer not remembered: empty, above its mark when it was forgotten. */
  private freshWindow(producer: string): BatchWindow {
    const w = new BatchWindow();
    w.forgotten = this.marks.get(producer) ?? -1;
    return w;
  }

  /** The promise of a batch appended and not yet on disk (a retry of it is answered together with it). */
  inFlightDurable(producer: string, seq: number): Promise<void> | undefined {
    return this.inFlight.get(`${producer}/${seq}`)?.durable;
  }

  private remember(producer: string, seq: number): void {
    let p = this.producers.get(producer);
    if (p === undefined) {
      p = { window: this.freshWindow(producer), seen: 0, line: null };
      this.marks.delete(producer);
    }
    p.window.add(seq);
    p.line = null;
    this.seen(producer, p);
  }

  /** Logs one batch; the promise settles once it is on disk (its number counts as logged from then on). */
  append(b: WalEntry): Promise<void> {
    const key = `${b.producer}/${b.seq}`;
    const own = b.producer === '-';
    this.push(entry(b));
    let settled = false;
    let waiter!: Waiter;
    const done = new Promise<void>((resolve, reject) => {
      waiter = {
        resolve: () => {
          if (settled) return;
          settled = true;
          if (!own) {
            this.inFlight.delete(key);
            this.remember(b.producer, b.seq);
          }
          resolve();
        },
        // not logged: a retry under the same number is taken
        reject: (err) => {
          if (settled) return;
          settled = true;
          if (!own) this.inFlight.delete(key);
          reject(err);
        },
      };
    });
    this.waiting.push(waiter);
    if (!own) this.inFlight.set(key, { producer: b.producer, seq: b.seq, durable: done, waiter });
    if (this.pendingBytes >= GROUP_COMMIT_BYTES) this.commit();
    else this.schedule();
    return done;
  }

  /** A line the collector took on its own (no one waits for it): logged with the next group. */
  appendOwn(stream: string, line: string): void {
    let lines = this.own.get(stream);
    if (lines === undefined) this.own.set(stream, (lines = []));
    lines.push(line);
    this.schedule();
  }

  /** The next group goes once this turn of the event loop is over, or when the fsync under way returns. */
  private schedule(): void {
    if (this.fsyncing) this.again = true;
    else this.scheduled ??= setImmediate(() => this.commit());
  }

  private cancelScheduled(): void {
    if (this.scheduled !== null) clearImmediate(this.scheduled);
    this.scheduled = null;
  }

  private push(pieces: Uint8Array[]): void {
    for (const p of pieces) {
      this.pending.push(p);
      this.pendingBytes += p.length;
    }
  }

  private takeOwn(): void {
    for (const [stream, lines] of this.own) this.push(entry({ stream, producer: '-', seq: 0, body: lines.join('\n') }));
    this.own.clear();
  }

  /** Writes the group to the segment now and fsyncs it in the background; its batches are acknowledged then. */
  commit(): void {
    this.cancelScheduled();
    this.takeOwn();
    if (this.pending.length === 0 && this.waiting.length === 0) return;
    const waiting = this.waiting;
    this.waiting = [];
    try {
      this.writePending();
    } catch (err) {
      for (const w of waiting) w.reject(err as Error);
      return;
    }
    const fd = this.fd;
    const segment = this.segment;
    this.fsyncing = true;
    this.syncing = this.syncing.then(
      () =>
        new Promise<void>((resolve) =>
          this.io.fdatasync(fd, (err) => {
            // the failed pages may be gone: nothing written after them in this segment counts as logged
            if (err && segment === this.segment) this.damage(err);
            const failed = segment === this.segment ? this.damaged : null;
            for (const w of waiting) (failed ? w.reject(failed) : w.resolve());
            this.fsyncing = false;
            if (this.again) {
              this.again = false;
              this.schedule();
            }
            resolve();
          }),
        ),
    );
  }

  private writePending(): void {
    if (this.fd < 0) throw new Error(`write-ahead log in ${this.dir} is not open`);
    const data = Buffer.concat(this.pending, this.pendingBytes);
    this.pending = [];
    this.pendingBytes = 0;
    // nothing more goes into a damaged segment: a later entry would sit behind a partial one or lost pages
    if (this.damaged !== null) throw this.damaged;
    try {
      for (let off = 0; off < data.length; ) off += this.io.writeSync(this.fd, data, off, data.length - off);
    } catch (err) {
      // the segment is cut back to its last whole entry, so a restart reads everything acknowledged in it
      try {
        ftruncateSync(this.fd, this.size);
      } catch {
        // the segment is left for the rotation the damage asks for; a restart stops at the partial entry
      }
      this.damage(err as Error);
      throw err;
    }
    this.size += data.length;
    this.bytesLogged += data.length;
  }

  private syncNow(): void {
    try {
      this.io.fdatasyncSync(this.fd);
    } catch (err) {
      // as with a failed background fsync, the unsynced pages may be gone
      this.damage(err as Error);
      throw err;
    }
  }

  /** The open segment takes no more appends until a rotation replaces it (asked for at once). */
  private damage(err: Error): void {
    if (this.damaged !== null) return;
    this.damaged = err;
    this.onDamaged();
  }

  /** Before a flush appends: writes and fsyncs what is pending, and notes the sizes the flush starts from. */
  beginFlush(sizes: Record<string, number>): void {
    this.cancelScheduled();
    this.takeOwn();
    const waiting = this.waiting;
    this.waiting = [];
    try {
      if (this.pending.length > 0) this.writePending();
      if (this.damaged !== null) throw this.damaged;
      if (this.fd >= 0) this.syncNow();
    } catch (err) {
      for (const w of waiting) w.reject(err as Error);
      throw err;
    }
    for (const w of waiting) w.resolve();
    writeDurably(join(this.dir, MARK_FILE), Buffer.from(JSON.stringify({ segment: this.segment, sizes }), 'utf8'));
  }

  /**
   * After a flush: a new segment holding what is still unwritten (`held`, as batches) and each producer's
   * batch numbers replaces the older ones. This is the point from which the flush counts as done. `settled`:
   * batches whose own log entry failed but whose records this flush wrote or holds, so they count as logged.
   * Batches appended and not yet fsynced count as logged too (their records are written or held as well), and
   * are settled by it: a retry after a kill is then not taken twice. A damaged segment is replaced this way.
   * Producers idle for `PRODUCER_IDLE_S`, and the least recently seen beyond `MAX_PRODUCERS`, are forgotten here
   * down to their mark. Only the windows that changed since the last rotation are formatted again.
   */
  rotate(held: readonly WalEntry[], settled: readonly { producer: string; seq: number }[] = []): void {
    const next = this.segment + 1;
    const inFlight = [...this.inFlight.values()];
    // the windows this rotation adds numbers to, as copies: nothing changes unless the new segment is written
    const changed = new Map<string, BatchWindow>();
    for (const id of [...settled, ...inFlight]) {
      let w = changed.get(id.producer);
      if (w === undefined) changed.set(id.producer, (w = this.producers.get(id.producer)?.window.clone() ?? this.freshWindow(id.producer)));
      w.add(id.seq);
    }
    const forget = this.toForget(changed);
    let head = `${HEADER} ${next}\n`;
    const lines = new Map<string, string>();
    for (const [p, entry] of this.producers) {
      if (forget.has(p)) continue;
      const w = changed.get(p);
      if (w === undefined) head += entry.line ??= producerLine(p, entry.window);
      else lines.set(p, producerLine(p, w));
    }
    for (const [p, w] of changed) if (!lines.has(p)) lines.set(p, producerLine(p, w));
    for (const line of lines.values()) head += line;
    const pieces: Uint8Array[] = [Buffer.from(head, 'utf8')];
    for (const b of held) if (b.body.length > 0) pieces.push(...entry(b));
    const data = Buffer.concat(pieces);
    writeDurably(join(this.dir, segmentName(next)), data);
    const oldFd = this.fd;
    const old = this.segment;
    this.fd = openSync(join(this.dir, segmentName(next)), 'a');
    this.segment = next;
    this.size = data.length;
    const now = this.now();
    for (const [p, mark] of forget) {
      this.producers.delete(p);
      this.marks.set(p, mark);
    }
    for (const [p, window] of changed) {
      const entry = this.producers.get(p);
      if (entry !== undefined) Object.assign(entry, { window, line: lines.get(p)! });
      else this.producers.set(p, { window, seen: now, line: lines.get(p)! });
      this.marks.delete(p);
    }
    this.damaged = null;
    // what was not written yet is in the new segment as held records: those bytes and waiters are done with
    this.cancelScheduled();
    this.pending = [];
    this.pendingBytes = 0;
    this.own.clear();
    const waiting = this.waiting;
    this.waiting = [];
    for (const w of waiting) w.resolve();
    for (const f of inFlight) f.waiter.resolve();
    removeFile(join(this.dir, MARK_FILE));
    if (old > 0) removeFile(join(this.dir, segmentName(old)));
    if (oldFd >= 0) void this.syncing.then(() => closeSync(oldFd));
  }

  /**
   * The producers this rotation forgets, with their marks (the highest number each logged), written durably to
   * `FORGOTTEN_FILE` before the new segment leaves their windows out: idle ones, and the least recently seen beyond
   * `MAX_PRODUCERS`. Producers the rotation adds numbers to are kept. When the marks cannot be written, nothing is
   * forgotten this time (the windows stay, as before; the next rotation tries again).
   */
  private toForget(changed: ReadonlyMap<string, BatchWindow>): Map<string, number> {
    const forget = new Map<string, number>();
    const idleBefore = this.now() - PRODUCER_IDLE_S;
    let count = this.producers.size;
    for (const p of changed.keys()) if (!this.producers.has(p)) count++;
    // least recently seen first: stops at the first producer that is neither idle nor beyond the count
    for (const [p, entry] of this.producers) {
      if (count <= MAX_PRODUCERS && entry.seen > idleBefore) break;
      if (changed.has(p)) continue;
      forget.set(p, entry.window.highest());
      count--;
    }
    if (forget.size === 0) return forget;
    try {
      this.writeMarks(forget);
    } catch {
      return new Map();
    }
    return forget;
  }

  /** Appends marks to `FORGOTTEN_FILE` and fsyncs it; rewrites it whole (only the highest marks) once it is long. */
  private writeMarks(forget: ReadonlyMap<string, number>): void {
    const path = join(this.dir, FORGOTTEN_FILE);
    let text = '';
    for (const [p, mark] of forget) text += `${p} ${mark}\n`;
    if (this.marksFileLines + forget.size > 2 * (this.marks.size + forget.size) + 1024 || !existsSync(path)) {
      let all = '';
      for (const [p, mark] of this.marks) if (!forget.has(p)) all += `${p} ${mark}\n`;
      writeDurably(path, Buffer.from(all + text, 'latin1'));
      this.marksFileLines = this.marks.size + forget.size;
      this.marksFileTorn = false;
      return;
    }
    const fd = openSync(path, 'a', 0o600);
    try {
      const data = Buffer.from((this.marksFileTorn ? '\n' : '') + text, 'latin1');
      for (let off = 0; off < data.length; ) off += writeSync(fd, data, off, data.length - off);
      fdatasyncSync(fd);
    } finally {
      closeSync(fd);
    }
    this.marksFileTorn = false;
    this.marksFileLines += forget.size;
  }

  /** Writes what is pending and closes the segment (the final flush has rotated already). */
  close(): Promise<void> {
    this.commit();
    const fd = this.fd;
    this.fd = -1;
    return this.syncing.then(() => {
      if (fd >= 0) closeSync(fd);
    });
  }
}

/** Writes a small file beside its final name, fsyncs it and renames it into place. */
function writeDurably(path: string, data: Buffer): void {
  const tmp = `${path}.tmp`;
  const fd = openSync(tmp, 'w', 0o600);
  try {
    for (let off = 0; off < data.length; ) off += writeSync(fd, data, off, data.length - off);
    fdatasyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, path);
}

function removeFile(path: string): void {
  try {
    unlinkSync(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
}
