// Random-access reader for STORED zip archives (the torch container) over a file handle, zip64 included.
import type { FileHandle } from 'node:fs/promises';
import { closeSync, fstatSync, readSync, type Stats } from 'node:fs';
import { FileRefused, openRegular, openRegularSync, openRegularSyncSized } from './fileAccess.ts';

export class ZipError extends Error {
  constructor(
    readonly file: string,
    readonly problem: string,
  ) {
    super(`${file}: ${problem}`);
    this.name = 'ZipError';
  }
}

export interface ZipEntry {
  name: string;
  /** Uncompressed size in bytes (from the central directory: torch's local headers carry zeros). */
  size: number;
  compressedSize: number;
  /** 0 = STORED, 8 = DEFLATE, … */
  method: number;
  crc32: number;
  localHeaderOffset: number;
}

const EOCD_SIG = 0x06054b50;
const EOCD64_LOCATOR_SIG = 0x07064b50;
const EOCD64_SIG = 0x06064b50;
const CENTRAL_SIG = 0x02014b50;
const LOCAL_SIG = 0x04034b50;
const MAX_COMMENT = 0xffff;
/** Archives up to this size are read whole at open (rank dumps are small and many). */
const WHOLE_FILE_BELOW = 1 << 20;
/** The first tail read when looking for the end-of-central-directory record. */
const FIRST_TAIL = 16 * 1024 + 22 + 20;
/** Largest single read request (Node's fs caps one read near 2 GiB). */
const MAX_READ = 1 << 30;

const utf8 = new TextDecoder('utf-8');
const latin1 = new TextDecoder('latin1');

/**
 * A zip archive opened for random access. The central directory is read once; entry data is read on
 * demand. `close()` releases the file handle; reads after it reopen the file for that one read.
 */
export class ZipArchive {
  private handle: FileHandle | undefined;
  /** The whole file, for small archives (then no handle is kept at all). */
  private whole: Uint8Array | undefined;
  /** Parts of the file read by `loadSync`. */
  private spans: { start: number; bytes: Uint8Array }[] | undefined;
  private ends: Map<ZipEntry, number> | undefined;
  /** The file's `fstat` when `openSync` opened it (its identity before anything of it was read). */
  openedStat: Stats | undefined;
  /** How the archive was opened: `openSync` archives reopen the file for blocking reads too. */
  private opened: 'async' | 'sync' = 'async';
  /** Entries by name, built on the first lookup (a directory scan never needs it). */
  private byNameMap: Map<string, ZipEntry> | undefined;
  private readonly dataStarts = new Map<ZipEntry, number>();

  private constructor(
    readonly path: string,
    handle: FileHandle | undefined,
    readonly fileSize: number,
    readonly entries: ZipEntry[],
    /** Where the central directory starts: the end bound of the last entry's data. */
    readonly centralDirectoryOffset: number,
  ) {
    this.handle = handle;
  }

  /**
   * Opens `path` and reads its central directory. A file of at most `wholeFileBelow` bytes (default
   * 1 MiB) is read in one go and served from memory: one read instead of one per entry.
   */
  static async open(path: string, opts: { wholeFileBelow?: number } = {}): Promise<ZipArchive> {
    let fh: FileHandle;
    try {
      fh = await openRegular(path);
    } catch (err) {
      throw openFailure(path, err);
    }
    try {
      const size = (await fh.stat()).size;
      let whole: Uint8Array | undefined;
      if (size <= (opts.wholeFileBelow ?? WHOLE_FILE_BELOW)) {
        whole = new Uint8Array((await readExact(path, fh, 0, size)).buffer);
      }
      const reader = whole
        ? async (position: number, length: number): Promise<DataView> => {
            if (position + length > whole.length) throw new ZipError(path, `truncated archive: wanted ${length} bytes at offset ${position}, file has ${whole.length}`);
            return new DataView(whole.buffer, position, length);
          }
        : (position: number, length: number): Promise<DataView> => readExact(path, fh, position, length);
      const { entries, cdOffset } = await readCentralDirectory(path, reader, size);
      const archive = new ZipArchive(path, fh, size, entries, cdOffset);
      if (whole) {
        archive.whole = whole;
        await archive.close();
      }
      return archive;
    } catch (err) {
      await fh.close().catch(() => {});
      throw err;
    }
  }

  /**
   * Like `open`, with blocking reads and no handle kept (later reads reopen the file): one open, one tail
   * read and one close per archive, for scanning many small archives (see also `loadSync`).
   */
  static openSync(path: string, opts: { wholeFileBelow?: number; listedRegular?: boolean } = {}): ZipArchive {
    let fd: number;
    let size: number;
    let stat: Stats;
    try {
      ({ fd, size, stat } = openRegularSyncSized(path, opts.listedRegular));
    } catch (err) {
      throw openFailure(path, err);
    }
    try {
      const whole = size <= (opts.wholeFileBelow ?? WHOLE_FILE_BELOW) ? readExactSync(path, fd, 0, size) : undefined;
      const read = (position: number, length: number): DataView => {
        if (!whole) return new DataView(readExactSync(path, fd, position, length).buffer);
        if (position + length > whole.length) throw new ZipError(path, `truncated archive: wanted ${length} bytes at offset ${position}, file has ${whole.length}`);
        return new DataView(whole.buffer, position, length);
      };
      const { entries, cdOffset } = readCentralDirectorySync(path, read, size);
      const archive = new ZipArchive(path, undefined, size, entries, cdOffset);
      archive.whole = whole;
      archive.opened = 'sync';
      archive.openedStat = stat;
      return archive;
    } finally {
      closeSync(fd);
    }
  }

  /**
   * Reads the given STORED entries into memory with blocking reads (entries closer than `maxGap` bytes share
   * one read), so that reading them afterwards touches no file, until `releaseBytes()`. `memory` may supply
   * the buffer (at least the size asked for, 64-byte aligned; a scanning caller reuses one): bytes read from
   * the archive are then views of it, valid only until the caller reuses it.
   */
  loadSync(list: Iterable<ZipEntry>, opts: { memory?: (size: number) => Uint8Array; maxGap?: number } = {}): void {
    const wanted = [...new Set(list)].sort((a, b) => a.localHeaderOffset - b.localHeaderOffset);
    if (wanted.length === 0) return;
    for (const e of wanted) this.checkStored(e);
    const ends = this.entryEnds();
    const maxGap = opts.maxGap ?? 64 * 1024;
    const groups: { start: number; end: number }[] = [];
    for (const e of wanted) {
      const start = e.localHeaderOffset - (e.localHeaderOffset % 64);
      const end = Math.min(this.fileSize, Math.max(ends.get(e)!, e.localHeaderOffset + 30));
      const last = groups[groups.length - 1];
      if (last && start - last.end <= maxGap) last.end = Math.max(last.end, end);
      else groups.push({ start, end });
    }
    // Each group starts on a 64-byte boundary of the memory, as in the file, so storages stay aligned.
    let total = 0;
    for (const g of groups) total += Math.ceil((g.end - g.start) / 64) * 64;
    const memory = opts.memory?.(total) ?? new Uint8Array(total);
    if (memory.byteLength < total || memory.byteOffset % 64 !== 0) throw new ZipError(this.path, 'loadSync: the memory supplied is too small or not 64-byte aligned');
    const fd = this.reopenSync();
    const spans: { start: number; bytes: Uint8Array }[] = [];
    try {
      let at = 0;
      for (const g of groups) {
        const bytes = readExactSync(this.path, fd, g.start, g.end - g.start, memory.subarray(at));
        spans.push({ start: g.start, bytes });
        at += Math.ceil(bytes.length / 64) * 64;
      }
    } finally {
      closeSync(fd);
    }
    for (const e of wanted) {
      const span = spans.find((sp) => e.localHeaderOffset >= sp.start && e.localHeaderOffset < sp.start + sp.bytes.length)!;
      this.dataStarts.set(e, this.parseLocalHeader(e, span.bytes, e.localHeaderOffset - span.start));
    }
    this.spans = [...(this.spans ?? []), ...spans];
  }

  /** Whether some of the file is held in memory (`whole` or `loadSync`): bytes read from it are views of that memory. */
  get inMemory(): boolean {
    return this.whole !== undefined || this.spans !== undefined;
  }

  /** Drops what is held in memory; later reads go to the file again (and fail if it changed size). */
  releaseBytes(): void {
    this.whole = undefined;
    this.spans = undefined;
  }

  private byName(): Map<string, ZipEntry> {
    if (!this.byNameMap) {
      this.byNameMap = new Map();
      for (const e of this.entries) this.byNameMap.set(e.name, e);
    }
    return this.byNameMap;
  }

  /** Per entry, the file offset its bytes end by (the next local header, or the central directory). */
  private entryEnds(): Map<ZipEntry, number> {
    if (!this.ends) {
      const byOffset = [...this.entries].sort((a, b) => a.localHeaderOffset - b.localHeaderOffset);
      this.ends = new Map();
      for (let i = 0; i < byOffset.length; i++) {
        this.ends.set(byOffset[i], i + 1 < byOffset.length ? byOffset[i + 1].localHeaderOffset : this.centralDirectoryOffset);
      }
    }
    return this.ends;
  }

  get isOpen(): boolean {
    return this.handle !== undefined;
  }

  entry(name: string): ZipEntry | undefined {
    return this.byName().get(name);
  }

  /** Releases the file handle. Idempotent. */
  async close(): Promise<void> {
    const h = this.handle;
    this.handle = undefined;
    await h?.close();
  }

  /** Absolute file offset of an entry's first data byte (reads its local header once). */
  async dataStart(entry: ZipEntry): Promise<number> {
    const known = this.dataStarts.get(entry);
    if (known !== undefined) return known;
    const head = await this.readAt(entry.localHeaderOffset, 30);
    const start = this.parseLocalHeader(entry, head, 0);
    this.dataStarts.set(entry, start);
    return start;
  }

  /**
   * The whole data of a STORED entry. The returned bytes own their ArrayBuffer and start on the
   * same 64-byte phase as in the file, so torch's 64-byte-aligned storages give aligned views.
   */
  async read(entryOrName: ZipEntry | string): Promise<Uint8Array> {
    const entry = this.resolve(entryOrName);
    this.checkStored(entry);
    if (entry.size > 2 ** 32 - 64) throw new ZipError(this.path, `entry ${entry.name} is too large to read at once (${entry.size} bytes)`);
    const known = this.dataStarts.get(entry);
    if (known !== undefined) return this.readAligned(known, entry.size);
    // One read covers the local header, its name/extra and (usually) the data.
    const lh = entry.localHeaderOffset;
    const alignedStart = lh - (lh % 64);
    const guess = Math.min(this.fileSize - alignedStart, lh - alignedStart + 30 + entry.name.length * 4 + 128 + entry.size);
    const buf = await this.readAt(alignedStart, guess, true);
    const start = this.parseLocalHeader(entry, buf, lh - alignedStart);
    this.dataStarts.set(entry, start);
    const rel = start - alignedStart;
    if (rel + entry.size <= buf.byteLength) return buf.subarray(rel, rel + entry.size);
    return this.readAligned(start, entry.size);
  }

  /** `length` bytes of an entry's data from `offset` within it. */
  async readRange(entryOrName: ZipEntry | string, offset: number, length: number): Promise<Uint8Array> {
    const entry = this.resolve(entryOrName);
    this.checkStored(entry);
    if (offset < 0 || length < 0 || offset + length > entry.size) {
      throw new ZipError(this.path, `range ${offset}+${length} is outside entry ${entry.name} (${entry.size} bytes)`);
    }
    return this.readAt((await this.dataStart(entry)) + offset, length);
  }

  /**
   * Synchronous positional read into `into` (used by the windowed unpickler on entries too big for
   * one buffer). Needs the archive to be open.
   */
  readSyncAt(position: number, into: Uint8Array, offset: number, length: number): number {
    if (this.whole) {
      const part = this.whole.subarray(Math.min(position, this.whole.length), Math.min(position + length, this.whole.length));
      into.set(part, offset);
      return part.length;
    }
    if (this.spans) {
      for (const sp of this.spans) {
        const rel = position - sp.start;
        if (rel >= 0 && rel + length <= sp.bytes.length) {
          into.set(sp.bytes.subarray(rel, rel + length), offset);
          return length;
        }
      }
    }
    let fd = this.handle?.fd;
    // An archive opened with `openSync` holds no handle: reopen the file for this one read.
    const reopened = fd === undefined && this.handle === undefined && this.opened === 'sync';
    if (reopened) fd = this.reopenSync();
    if (fd === undefined) throw new ZipError(this.path, 'archive is closed');
    try {
      let done = 0;
      while (done < length) {
        const n = readSync(fd, into, offset + done, Math.min(length - done, MAX_READ), position + done);
        if (n === 0) break;
        done += n;
      }
      return done;
    } finally {
      if (reopened) closeSync(fd);
    }
  }

  /** Opens the file again for blocking reads, checking it still has the size it had when opened. */
  private reopenSync(): number {
    let fd: number;
    try {
      fd = openRegularSync(this.path);
    } catch (err) {
      if (err instanceof FileRefused) throw err;
      throw new ZipError(this.path, `cannot reopen for a read: ${(err as Error).message}`);
    }
    try {
      const size = fstatSync(fd).size;
      if (size !== this.fileSize) throw new ZipError(this.path, `file changed since it was opened (${this.fileSize} -> ${size} bytes)`);
    } catch (err) {
      closeSync(fd);
      throw err;
    }
    return fd;
  }

  private resolve(entryOrName: ZipEntry | string): ZipEntry {
    if (typeof entryOrName !== 'string') return entryOrName;
    const e = this.byName().get(entryOrName);
    if (!e) throw new ZipError(this.path, `no entry named ${entryOrName}`);
    return e;
  }

  private checkStored(entry: ZipEntry): void {
    if (entry.method !== 0) {
      throw new ZipError(this.path, `entry ${entry.name} is compressed (method ${entry.method}); only STORED entries are supported, as torch writes them`);
    }
    if (entry.compressedSize !== entry.size) {
      throw new ZipError(this.path, `entry ${entry.name} is STORED but its sizes differ (${entry.compressedSize} != ${entry.size})`);
    }
  }

  private parseLocalHeader(entry: ZipEntry, buf: Uint8Array, at: number): number {
    if (at + 30 > buf.byteLength) throw new ZipError(this.path, `truncated archive: local header of ${entry.name} is cut off`);
    const dv = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
    if (dv.getUint32(at, true) !== LOCAL_SIG) {
      throw new ZipError(this.path, `bad local header signature for ${entry.name} at offset ${entry.localHeaderOffset}`);
    }
    const nameLen = dv.getUint16(at + 26, true);
    const extraLen = dv.getUint16(at + 28, true);
    const start = entry.localHeaderOffset + 30 + nameLen + extraLen;
    if (start + entry.size > this.fileSize) {
      throw new ZipError(this.path, `truncated archive: entry ${entry.name} needs bytes up to ${start + entry.size}, file has ${this.fileSize}`);
    }
    return start;
  }

  /** Reads `length` bytes at `position` into a fresh buffer whose offset 0 is 64-aligned relative to the file. */
  private async readAligned(position: number, length: number): Promise<Uint8Array> {
    const phase = position % 64;
    const buf = await this.readAt(position - phase, phase + length);
    return buf.subarray(phase, phase + length);
  }

  private async readAt(position: number, length: number, allowShort = false): Promise<Uint8Array> {
    if (this.whole) {
      if (position + length <= this.whole.length) return this.whole.subarray(position, position + length);
      if (allowShort) return this.whole.subarray(Math.min(position, this.whole.length));
      throw new ZipError(this.path, `truncated archive: wanted ${length} bytes at offset ${position}, got ${Math.max(0, this.whole.length - position)}`);
    }
    if (this.spans) {
      for (const sp of this.spans) {
        const rel = position - sp.start;
        if (rel >= 0 && rel + length <= sp.bytes.length) return sp.bytes.subarray(rel, rel + length);
      }
    }
    const out = new Uint8Array(length);
    const reopened = this.handle === undefined;
    let fh = this.handle;
    if (fh === undefined) {
      try {
        fh = await openRegular(this.path);
      } catch (err) {
        if (err instanceof FileRefused) throw err;
        throw new ZipError(this.path, `cannot reopen for a read after close: ${(err as Error).message}`);
      }
    }
    try {
      if (reopened) {
        const size = (await fh.stat()).size;
        if (size !== this.fileSize) throw new ZipError(this.path, `file changed since it was opened (${this.fileSize} -> ${size} bytes)`);
      }
      let done = 0;
      while (done < length) {
        const { bytesRead } = await fh.read(out, done, Math.min(length - done, MAX_READ), position + done);
        if (bytesRead === 0) break;
        done += bytesRead;
      }
      if (done < length) {
        if (allowShort) return out.subarray(0, done);
        throw new ZipError(this.path, `truncated archive: wanted ${length} bytes at offset ${position}, got ${done}`);
      }
      return out;
    } finally {
      if (reopened) await fh.close();
    }
  }
}

/** Tail read first by `visitCentralDirectorySync`: the directory of a small torch archive fits in it. */
const VISIT_TAIL = 8 * 1024;

/**
 * Visits the central directory records of an archive without building its entries: one open, one read of
 * the tail (a second when the directory starts before it) into `scratch.bytes`, one close, and
 * `visit(bytes, nameStart, nameEnd, size, crc32)` per record in directory order (the name's bytes as stored
 * are `bytes[nameStart, nameEnd)`, the scratch bytes, valid during the call: no view is made per record). Returns false, having perhaps visited some records, for anything it
 * leaves to `openSync` (zip64 entry sizes, a trailing comment, any inconsistency): the caller then opens it that
 * way, which reads what this skips and reports damage in its own words.
 */
export function visitCentralDirectorySync(
  path: string,
  scratch: { bytes: Uint8Array },
  visit: (bytes: Uint8Array, nameStart: number, nameEnd: number, size: number, crc32: number) => void,
  /** Told the `fstat` of the file as opened, before anything is read. */
  opened?: (st: Stats) => void,
  /** A directory listing named it a regular file (see `openRegularSyncSized`). */
  listedRegular = false,
): boolean {
  let file: { fd: number; size: number; stat: Stats };
  try {
    file = openRegularSyncSized(path, listedRegular);
  } catch {
    return false;
  }
  const { fd, size: fileSize } = file;
  try {
    opened?.(file.stat);
    if (fileSize < 22) return false;
    const tailLen = Math.min(fileSize, VISIT_TAIL);
    const tailStart = fileSize - tailLen;
    if (scratch.bytes.length < tailLen) scratch.bytes = new Uint8Array(Math.max(tailLen, 2 * scratch.bytes.length));
    let bytes = scratch.bytes;
    if (readSync(fd, bytes, 0, tailLen, tailStart) !== tailLen) return false;
    let dv = new DataView(bytes.buffer, bytes.byteOffset, tailLen);
    // The record at the very end (no comment).
    const eocd = tailLen - 22;
    if (dv.getUint32(eocd, true) !== EOCD_SIG || dv.getUint16(eocd + 20, true) !== 0) return false;
    if (eocd < 20 && tailStart !== 0) return false;
    let count = dv.getUint16(eocd + 10, true);
    let cdSize = dv.getUint32(eocd + 12, true);
    let cdOffset = dv.getUint32(eocd + 16, true);
    let cdEnd = tailStart + eocd;
    if (eocd >= 20 && dv.getUint32(eocd - 20, true) === EOCD64_LOCATOR_SIG) {
      // zip64 (torch writes its end records): the record the locator points at, when it lies in the tail.
      const rec = Number(dv.getBigUint64(eocd - 12, true)) - tailStart;
      if (rec < 0 || rec + 56 > eocd - 20 || dv.getUint32(rec, true) !== EOCD64_SIG) return false;
      count = Number(dv.getBigUint64(rec + 32, true));
      cdSize = Number(dv.getBigUint64(rec + 40, true));
      cdOffset = Number(dv.getBigUint64(rec + 48, true));
      cdEnd = tailStart + rec;
    } else if (count === 0xffff || cdSize === 0xffffffff || cdOffset === 0xffffffff) return false;
    if (!Number.isSafeInteger(cdOffset + cdSize) || cdOffset + cdSize > cdEnd || count * 46 > cdSize) return false;
    let base = cdOffset - tailStart;
    if (base < 0) {
      // The directory starts before the tail: read it whole.
      if (scratch.bytes.length < cdSize) scratch.bytes = new Uint8Array(cdSize);
      bytes = scratch.bytes;
      if (readSync(fd, bytes, 0, cdSize, cdOffset) !== cdSize) return false;
      dv = new DataView(bytes.buffer, bytes.byteOffset, cdSize);
      base = 0;
    }
    const end = base + cdSize;
    let p = base;
    for (let i = 0; i < count; i++) {
      if (p + 46 > end || dv.getUint32(p, true) !== CENTRAL_SIG) return false;
      const crc32 = dv.getUint32(p + 16, true);
      const compressedSize = dv.getUint32(p + 20, true);
      const size = dv.getUint32(p + 24, true);
      const nameLen = dv.getUint16(p + 28, true);
      const recEnd = p + 46 + nameLen + dv.getUint16(p + 30, true) + dv.getUint16(p + 32, true);
      const localHeaderOffset = dv.getUint32(p + 42, true);
      if (recEnd > end || size === 0xffffffff || compressedSize === 0xffffffff || localHeaderOffset === 0xffffffff) return false;
      if (localHeaderOffset + 30 + nameLen > cdOffset || localHeaderOffset + compressedSize > cdOffset) return false;
      visit(bytes, p + 46, p + 46 + nameLen, size, crc32);
      p = recEnd;
    }
    return true;
  } catch {
    return false;
  } finally {
    closeSync(fd);
  }
}

/** A failed open: a refused file stays a FileRefused, a missing one keeps its code (ENOENT), the rest is a ZipError. */
function openFailure(path: string, err: unknown): Error {
  if (err instanceof FileRefused) return err;
  const e = new ZipError(path, `cannot open: ${(err as Error).message}`);
  const code = (err as NodeJS.ErrnoException).code;
  if (code) Object.assign(e, { code });
  return e;
}

async function readExact(path: string, fh: FileHandle, position: number, length: number): Promise<DataView> {
  const out = new Uint8Array(length);
  let done = 0;
  while (done < length) {
    const { bytesRead } = await fh.read(out, done, Math.min(length - done, MAX_READ), position + done);
    if (bytesRead === 0) break;
    done += bytesRead;
  }
  if (done < length) throw new ZipError(path, `truncated archive: wanted ${length} bytes at offset ${position}, got ${done}`);
  return new DataView(out.buffer);
}

function readExactSync(path: string, fd: number, position: number, length: number, into?: Uint8Array): Uint8Array {
  const out = into && into.byteLength >= length ? into.subarray(0, length) : new Uint8Array(length);
  let done = 0;
  while (done < length) {
    const n = readSync(fd, out, done, Math.min(length - done, MAX_READ), position + done);
    if (n === 0) break;
    done += n;
  }
  if (done < length) throw new ZipError(path, `truncated archive: wanted ${length} bytes at offset ${position}, got ${done}`);
  return out;
}

/** A short all-ASCII name (every torch entry name), without a TextDecoder call per entry; else null. */
function asciiName(b: Uint8Array): string | null {
  if (b.length > 64) return null;
  let s = '';
  for (let i = 0; i < b.length; i++) {
    if (b[i] >= 0x80) return null;
    s += String.fromCharCode(b[i]);
  }
  return s;
}

function bigToNumber(path: string, v: bigint, what: string): number {
  if (v > BigInt(Number.MAX_SAFE_INTEGER)) throw new ZipError(path, `impossible ${what}: ${v}`);
  return Number(v);
}

/** A byte range the central-directory parser needs next: `[position, length]`. */
type ByteRequest = [number, number];
interface CentralDirectory {
  entries: ZipEntry[];
  cdOffset: number;
}

/** Runs the parser with asynchronous reads. */
async function readCentralDirectory(path: string, read: (position: number, length: number) => Promise<DataView>, fileSize: number): Promise<CentralDirectory> {
  const parser = parseCentralDirectory(path, fileSize);
  let step = parser.next();
  while (!step.done) step = parser.next(await read(...step.value));
  return step.value;
}

/** Runs the parser with synchronous reads. */
function readCentralDirectorySync(path: string, read: (position: number, length: number) => DataView, fileSize: number): CentralDirectory {
  const parser = parseCentralDirectory(path, fileSize);
  let step = parser.next();
  while (!step.done) step = parser.next(read(...step.value));
  return step.value;
}

/** The central-directory parser: yields the byte ranges it needs (usually just the tail) and returns the entries. */
function* parseCentralDirectory(path: string, fileSize: number): Generator<ByteRequest, CentralDirectory, DataView> {
  if (fileSize < 22) throw new ZipError(path, `not a zip archive (${fileSize} bytes, no end-of-central-directory record)`);
  // A short tail first (it holds the whole directory of a typical torch file); the longest one only if the
  // record is not in it (a long archive comment) or sits too close to its start to see a zip64 locator.
  const fullTail = Math.min(fileSize, 22 + MAX_COMMENT + 20);
  let tailLen = Math.min(fileSize, FIRST_TAIL);
  let tailStart: number;
  let tail: DataView;
  let eocd: number;
  for (;;) {
    tailStart = fileSize - tailLen;
    tail = yield [tailStart, tailLen];
    eocd = -1;
    for (let i = tailLen - 22; i >= 0; i--) {
      if (tail.getUint32(i, true) === EOCD_SIG && i + 22 + tail.getUint16(i + 20, true) <= tailLen) {
        eocd = i;
        break;
      }
    }
    if ((eocd >= 20 || tailStart === 0) && eocd >= 0) break;
    if (tailLen === fullTail) break;
    tailLen = fullTail;
  }
  if (eocd < 0) {
    const magic = (yield [0, 4]).getUint32(0, true);
    throw new ZipError(
      path,
      magic === LOCAL_SIG ? 'truncated archive: it starts like a zip but has no end-of-central-directory record' : 'not a zip archive: no end-of-central-directory record',
    );
  }
  let count = tail.getUint16(eocd + 10, true);
  let cdSize = tail.getUint32(eocd + 12, true);
  let cdOffset = tail.getUint32(eocd + 16, true);
  const eocdAbs = tailStart + eocd;
  let cdEnd = eocdAbs;

  // zip64: the locator sits right before the classic record.
  if (eocd >= 20 && tail.getUint32(eocd - 20, true) === EOCD64_LOCATOR_SIG) {
    const rec64Off = bigToNumber(path, tail.getBigUint64(eocd - 12, true), 'zip64 end record offset');
    if (rec64Off + 56 > eocdAbs - 20) throw new ZipError(path, `impossible zip64 end record offset ${rec64Off}`);
    const rec = yield [rec64Off, 56];
    if (rec.getUint32(0, true) !== EOCD64_SIG) throw new ZipError(path, `bad zip64 end record signature at offset ${rec64Off}`);
    count = bigToNumber(path, rec.getBigUint64(32, true), 'entry count');
    cdSize = bigToNumber(path, rec.getBigUint64(40, true), 'central directory size');
    cdOffset = bigToNumber(path, rec.getBigUint64(48, true), 'central directory offset');
    cdEnd = rec64Off;
  }
  if (cdOffset + cdSize > cdEnd) {
    throw new ZipError(path, `truncated archive or impossible central directory: ${cdSize} bytes at offset ${cdOffset}, but it must end by ${cdEnd}`);
  }
  // Every central record takes at least 46 bytes.
  if (count * 46 > cdSize) throw new ZipError(path, `impossible entry count ${count} for a ${cdSize}-byte central directory`);
  // The central directory usually sits inside the tail already read.
  const cd = cdOffset >= tailStart ? new DataView(tail.buffer, tail.byteOffset + cdOffset - tailStart, cdSize) : yield [cdOffset, cdSize];
  const bytes = new Uint8Array(cd.buffer, cd.byteOffset, cd.byteLength);
  const entries: ZipEntry[] = new Array(count);
  let p = 0;
  for (let i = 0; i < count; i++) {
    if (p + 46 > cdSize || cd.getUint32(p, true) !== CENTRAL_SIG) {
      throw new ZipError(path, `bad central directory record ${i} at offset ${cdOffset + p}`);
    }
    const flags = cd.getUint16(p + 8, true);
    const method = cd.getUint16(p + 10, true);
    const crc32 = cd.getUint32(p + 16, true);
    let compressedSize = cd.getUint32(p + 20, true);
    let size = cd.getUint32(p + 24, true);
    const nameLen = cd.getUint16(p + 28, true);
    const extraLen = cd.getUint16(p + 30, true);
    const commentLen = cd.getUint16(p + 32, true);
    let localHeaderOffset = cd.getUint32(p + 42, true);
    const recEnd = p + 46 + nameLen + extraLen + commentLen;
    if (recEnd > cdSize) throw new ZipError(path, `truncated central directory record ${i}`);
    const nameBytes = bytes.subarray(p + 46, p + 46 + nameLen);
    const name = asciiName(nameBytes) ?? (flags & 0x800 ? utf8.decode(nameBytes) : latin1.decode(nameBytes));
    if (size === 0xffffffff || compressedSize === 0xffffffff || localHeaderOffset === 0xffffffff) {
      let e = p + 46 + nameLen;
      const extraEnd = e + extraLen;
      let found = false;
      while (e + 4 <= extraEnd) {
        const id = cd.getUint16(e, true);
        const len = cd.getUint16(e + 2, true);
        if (e + 4 + len > extraEnd) break;
        if (id === 0x0001) {
          let q = e + 4;
          const take = (): number => {
            if (q + 8 > e + 4 + len) throw new ZipError(path, `zip64 extra field of ${name} is too short`);
            const v = bigToNumber(path, cd.getBigUint64(q, true), `size or offset of ${name}`);
            q += 8;
            return v;
          };
          if (size === 0xffffffff) size = take();
          if (compressedSize === 0xffffffff) compressedSize = take();
          if (localHeaderOffset === 0xffffffff) localHeaderOffset = take();
          found = true;
          break;
        }
        e += 4 + len;
      }
      if (!found) throw new ZipError(path, `entry ${name} has 32-bit overflow sizes but no zip64 extra field`);
    }
    if (localHeaderOffset + 30 + nameLen > cdOffset || localHeaderOffset + compressedSize > cdOffset) {
      throw new ZipError(path, `impossible offset/size for entry ${name}: ${compressedSize} bytes at offset ${localHeaderOffset}, central directory starts at ${cdOffset}`);
    }
    entries[i] = { name, size, compressedSize, method, crc32, localHeaderOffset };
    p = recEnd;
  }
  return { entries, cdOffset };
}
