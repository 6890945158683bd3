// The collector's write-ahead log: a batch is acknowledged only once its bytes are in a log segment on
// disk (appended and fsynced in groups), so a collector killed at any moment loses nothing it
// acknowledged. A flush notes the stream files' sizes before it appends (the flush mark), and then
// writes a new segment holding only what is still unwritten (plus the batch numbers each producer had
// logged lately) and deletes the older ones: a restart undoes a flush the kill interrupted and replays the newest
// segment, so every acknowledged record reaches its stream file exactly once.
import { closeSync, fdatasync, fdatasyncSync, ftruncateSync, openSync, readdirSync, readFileSync, renameSync, statSync, unlinkSync, writeSync } from 'node:fs';
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

/** What a producer's batch number is to the log. */
export type BatchState = 'new' | 'logged' | 'forgotten';

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
    this.forgotten = sorted[sorted.length - BATCH_WINDOW - 1];
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
  /** Each producer's batch numbers logged (fsynced). */
  private producers = new Map<string, BatchWindow>();
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
    for (const [p, w] of result.producers) this.producers.set(p, w.clone());
    this.segment = newest;
    if (newest > 0) this.size = statSync(join(this.dir, segmentName(newest))).size;
    return { batches: result.batches, producers: result.producers, undone, tornBytes: result.tornBytes };
  }

  /**
   * A producer's batch number: `logged` when this batch is in the log or on its way there (a retry of an acknowledged
   * or in-flight batch), `forgotten` when it is older than the numbers remembered and not among them.
   */
  state(producer: string, seq: number): BatchState {
    if (this.inFlight.has(`${producer}/${seq}`)) return 'logged';
    return this.producers.get(producer)?.state(seq) ?? 'new';
  }

  /** The promise of a batch appended and not yet on disk (a retry of it is answered together with it). */
  inFlightDurable(producer: string, seq: number): Promise<void> | undefined {
    return this.inFlight.get(`${producer}/${seq}`)?.durable;
  }

  private remember(producer: string, seq: number): void {
    let w = this.producers.get(producer);
    if (w === undefined) this.producers.set(producer, (w = new BatchWindow()));
    w.add(seq);
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
   */
  rotate(held: readonly WalEntry[], settled: readonly { producer: string; seq: number }[] = []): void {
    const next = this.segment + 1;
    const producers = new Map(this.producers);
    const inFlight = [...this.inFlight.values()];
    for (const id of [...settled, ...inFlight]) {
      const w = producers.get(id.producer)?.clone() ?? new BatchWindow();
      w.add(id.seq);
      producers.set(id.producer, w);
    }
    let head = `${HEADER} ${next}\n`;
    for (const [p, w] of producers) head += `P ${p} ${w.format()}\n`;
    const pieces: Uint8Array[] = [Buffer.from(head, 'utf8')];
    for (const b of held) if (b.body.length > 0) pieces.push(...entry(b));
    const data = Buffer.concat(pieces);
    writeDurably(join(this.dir, segmentName(next)), data);
    const oldFd = this.fd;
    const old = this.segment;
    this.fd = openSync(join(this.dir, segmentName(next)), 'a');
    this.segment = next;
    this.size = data.length;
    this.producers = producers;
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
