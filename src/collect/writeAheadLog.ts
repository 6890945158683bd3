// The collector's write-ahead log: a batch is acknowledged only once its bytes are in a log segment on
// disk (appended and fsynced in groups), so a collector killed at any moment loses nothing it
// acknowledged. A flush notes the stream files' sizes before it appends (the flush mark), and then
// writes a new segment holding only what is still unwritten (plus each producer's last batch number)
// and deletes the older ones: a restart undoes a flush the kill interrupted and replays the newest
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

/** What a restart finds: the batches to replay in order, and the files a killed flush had appended to. */
export interface WalRecovery {
  batches: WalBatch[];
  /** Producer → last batch number logged (a retried batch at or below it is already here). */
  producers: Map<string, number>;
  /** Files (relative to the dashboard directory) cut back to their size before the interrupted flush. */
  undone: { file: string; bytes: number }[];
  /** Bytes of a last entry the kill left half-written (never acknowledged). */
  tornBytes: number;
}

const segmentName = (n: number): string => `${String(n).padStart(12, '0')}.log`;

/** An entry's pieces: its header line and its body, ending in a newline. */
function entry(b: WalEntry): Uint8Array[] {
  const body = typeof b.body === 'string' ? Buffer.from(b.body, 'utf8') : b.body;
  const whole = body.length === 0 || body[body.length - 1] === 10;
  const head = Buffer.from(`B ${b.stream} ${b.producer} ${b.seq} ${body.length + (whole ? 0 : 1)}\n`, 'latin1');
  return whole ? [head, body] : [head, body, NEWLINE];
}

/** Parses a segment; stops at the first entry that is not whole (the torn tail of a killed append). */
export function parseSegment(data: Buffer): { batches: WalBatch[]; producers: Map<string, number>; tornBytes: number } {
  const batches: WalBatch[] = [];
  const producers = new Map<string, number>();
  let pos = 0;
  const headerEnd = data.indexOf(10);
  if (headerEnd < 0 || data.subarray(0, headerEnd).toString('latin1').split(' ')[0] !== HEADER) return { batches, producers, tornBytes: data.length };
  pos = headerEnd + 1;
  while (pos < data.length) {
    const nl = data.indexOf(10, pos);
    if (nl < 0) break;
    const parts = data.subarray(pos, nl).toString('utf8').split(' ');
    if (parts[0] === 'P' && parts.length === 3) {
      producers.set(parts[1], Number(parts[2]));
      pos = nl + 1;
      continue;
    }
    if (parts[0] !== 'B' || parts.length !== 5) break;
    const len = Number(parts[4]);
    if (!Number.isSafeInteger(len) || nl + 1 + len > data.length) break;
    const b: WalBatch = { stream: parts[1], producer: parts[2], seq: Number(parts[3]), body: data.subarray(nl + 1, nl + 1 + len).toString('utf8') };
    batches.push(b);
    if (b.producer !== '-') producers.set(b.producer, Math.max(producers.get(b.producer) ?? -1, b.seq));
    pos = nl + 1 + len;
  }
  return { batches, producers, tornBytes: data.length - pos };
}

export class WriteAheadLog {
  private segment = 0;
  private fd = -1;
  private pending: Uint8Array[] = [];
  private pendingBytes = 0;
  /** Resolved when the group holding their batch is fsynced. */
  private waiting: { resolve: () => void; reject: (err: Error) => void }[] = [];
  private scheduled: NodeJS.Immediate | null = null;
  /** An fsync is under way; `again`: a group is waiting for it to return. */
  private inFlight = false;
  private again = false;
  /** The fsync in flight (a segment is closed only once it returns). */
  private syncing: Promise<void> = Promise.resolve();
  /** Lines the collector took itself (scraped engine series), logged with the next group. */
  private own = new Map<string, string[]>();
  readonly producers = new Map<string, number>();
  /** Bytes written to the log since it was opened (for the health counters). */
  bytesLogged = 0;

  constructor(readonly dir: string) {}

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
    let result = { batches: [] as WalBatch[], producers: new Map<string, number>(), tornBytes: 0 };
    if (newest > 0) result = parseSegment(readFileSync(join(this.dir, segmentName(newest))));
    for (const s of segments) if (s !== newest) removeFile(join(this.dir, segmentName(s)));
    for (const [p, seq] of result.producers) this.producers.set(p, seq);
    this.segment = newest;
    return { batches: result.batches, producers: result.producers, undone, tornBytes: result.tornBytes };
  }

  /** A producer's batch number: true when this batch was logged before (a retry of an acknowledged or in-flight batch). */
  seen(producer: string, seq: number): boolean {
    const last = this.producers.get(producer);
    return last !== undefined && seq <= last;
  }

  /** Logs one batch; the promise settles once it is on disk. */
  append(b: WalEntry): Promise<void> {
    if (b.producer !== '-') this.producers.set(b.producer, Math.max(this.producers.get(b.producer) ?? -1, b.seq));
    this.push(entry(b));
    const done = new Promise<void>((resolve, reject) => this.waiting.push({ resolve, reject }));
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
    if (this.inFlight) this.again = true;
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
    this.inFlight = true;
    this.syncing = this.syncing.then(
      () =>
        new Promise<void>((resolve) =>
          fdatasync(fd, (err) => {
            for (const w of waiting) (err ? w.reject(err) : w.resolve());
            this.inFlight = false;
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
    for (let off = 0; off < data.length; ) off += writeSync(this.fd, data, off, data.length - off);
    this.bytesLogged += data.length;
  }

  /** Before a flush appends: writes and fsyncs what is pending, and notes the sizes the flush starts from. */
  beginFlush(sizes: Record<string, number>): void {
    this.cancelScheduled();
    this.takeOwn();
    const waiting = this.waiting;
    this.waiting = [];
    try {
      if (this.pending.length > 0) this.writePending();
      if (this.fd >= 0) fdatasyncSync(this.fd);
    } catch (err) {
      for (const w of waiting) w.reject(err as Error);
      throw err;
    }
    for (const w of waiting) w.resolve();
    writeDurably(join(this.dir, MARK_FILE), Buffer.from(JSON.stringify({ segment: this.segment, sizes }), 'utf8'));
  }

  /**
   * After a flush: a new segment holding what is still unwritten (`held`, as batches) and each producer's
   * last batch number replaces the older ones. This is the point from which the flush counts as done.
   */
  rotate(held: readonly WalEntry[]): void {
    const next = this.segment + 1;
    let head = `${HEADER} ${next}\n`;
    for (const [p, seq] of this.producers) head += `P ${p} ${seq}\n`;
    const pieces: Uint8Array[] = [Buffer.from(head, 'utf8')];
    for (const b of held) if (b.body.length > 0) pieces.push(...entry(b));
    writeDurably(join(this.dir, segmentName(next)), Buffer.concat(pieces));
    const oldFd = this.fd;
    const old = this.segment;
    this.fd = openSync(join(this.dir, segmentName(next)), 'a');
    this.segment = next;
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
