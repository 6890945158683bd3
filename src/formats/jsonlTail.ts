// Byte-offset tail of an append-only JSONL file: reads [offset, EOF) and hands over only complete lines.
import { closeSync, fstatSync, readSync } from 'node:fs';
import { openRegularSync } from './fileAccess.ts';

/** Default read size; a chunk always ends at a line boundary, a longer line grows the buffer. */
export const TAIL_CHUNK_BYTES = 8 << 20;

export interface TailChunk {
  /** Bytes of complete lines: `buf[0, end)`, the last byte is `\n`. */
  buf: Buffer;
  end: number;
  /** File offset of `buf[0]`. */
  offset: number;
}

export interface TailResult {
  /** Offset just past the last complete line read (where the next read starts). */
  offset: number;
  /** File size seen when the read started; bytes past it are left for the next read. */
  size: number;
  /** Number of complete-line bytes read. */
  bytes: number;
}

/**
 * Reads the complete lines of `path` from byte `offset` up to the size the file has now, in chunks of
 * whole lines, calling `onChunk` for each. A trailing partial line (no `\n` yet) is left unread: a
 * reader may miss the newest record but never sees a torn one. A missing file reads as empty. With
 * `limit` (a line start) it stops there, as if the file ended at that byte.
 */
export function readCompleteLines(path: string, offset: number, onChunk: (chunk: TailChunk) => void, chunkBytes = TAIL_CHUNK_BYTES, limit = Infinity): TailResult {
  let fd: number;
  try {
    fd = openRegularSync(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { offset, size: 0, bytes: 0 };
    throw err;
  }
  try {
    const size = Math.min(fstatSync(fd).size, limit);
    let pos = offset;
    let buf = Buffer.allocUnsafe(Math.min(chunkBytes, Math.max(0, size - offset)) || 1);
    let carry = 0; // bytes of an unfinished line at the start of buf
    while (pos + carry < size) {
      const want = Math.min(buf.length - carry, size - pos - carry);
      if (want <= 0) {
        // one line longer than the buffer: grow it
        const bigger = Buffer.allocUnsafe(buf.length * 2);
        buf.copy(bigger, 0, 0, carry);
        buf = bigger;
        continue;
      }
      const n = readSync(fd, buf, carry, want, pos + carry);
      if (n <= 0) break;
      const filled = carry + n;
      const lastNl = buf.lastIndexOf(10, filled - 1);
      if (lastNl < 0) {
        carry = filled;
        if (pos + carry >= size) break;
        if (carry === buf.length) {
          const bigger = Buffer.allocUnsafe(buf.length * 2);
          buf.copy(bigger, 0, 0, carry);
          buf = bigger;
        }
        continue;
      }
      const end = lastNl + 1;
      onChunk({ buf, end, offset: pos });
      pos += end;
      carry = filled - end;
      if (carry > 0) buf.copy(buf, 0, end, filled);
    }
    return { offset: pos, size, bytes: pos - offset };
  } finally {
    closeSync(fd);
  }
}

/**
 * Bytes after the last `\n` of a file of `size` bytes: 0 when it ends with one (or is empty), `size` when it
 * holds none. Read backwards through `readAt` (bytes `[start, start + length)`): the last byte, then windows
 * from 64 KiB up.
 */
export function unterminatedBytes(size: number, readAt: (start: number, length: number) => Buffer): number {
  if (size === 0) return 0;
  // most files end with a newline: one byte tells
  const last = readAt(size - 1, 1);
  if (last.length < 1 || last[0] === 10) return 0;
  let end = size - 1;
  let window = 65536;
  while (end > 0) {
    const start = Math.max(0, end - window);
    const buf = readAt(start, end - start);
    // a file cut shorter meanwhile: nothing more to look at
    if (buf.length < end - start) return 0;
    const nl = buf.lastIndexOf(10);
    if (nl >= 0) return size - (start + nl + 1);
    end = start;
    window = Math.min(window * 2, 8 << 20);
  }
  return size;
}

/** The first complete line of a file within its first `maxBytes` (without the `\n`), or null. */
export function readFirstLine(path: string, maxBytes = 65536): Buffer | null {
  const buf = readRange(path, 0, maxBytes);
  const nl = buf.indexOf(10);
  return nl < 0 ? null : buf.subarray(0, nl);
}

/** The last complete line of a file within its final `maxBytes` (without the `\n`), or null. */
export function readLastCompleteLine(path: string, maxBytes = 65536): Buffer | null {
  return withOpenFile(path, null, (fd) => {
    const size = fstatSync(fd).size;
    const start = Math.max(0, size - maxBytes);
    const buf = Buffer.allocUnsafe(size - start);
    const n = readSync(fd, buf, 0, buf.length, start);
    const view = buf.subarray(0, n);
    const lastNl = view.lastIndexOf(10);
    if (lastNl < 0) return null;
    const prevNl = lastNl > 0 ? view.lastIndexOf(10, lastNl - 1) : -1;
    if (prevNl < 0 && start > 0) return null; // the line begins before the window
    return view.subarray(prevNl + 1, lastNl);
  });
}

/** Bytes `[start, start + length)` of a file (fewer at EOF; empty when missing), read into `into` when it is long enough (the answer is then a view of it). */
export function readRange(path: string, start: number, length: number, into?: Buffer): Buffer {
  return withOpenFile(path, Buffer.alloc(0), (fd) => {
    const buf = into !== undefined && into.length >= length ? into.subarray(0, Math.max(0, length)) : Buffer.allocUnsafe(Math.max(0, length));
    const n = readSync(fd, buf, 0, buf.length, start);
    return buf.subarray(0, n);
  });
}

/** `read` over the open file `path`, closed after; `missing` when the file cannot be opened. */
function withOpenFile<T>(path: string, missing: T, read: (fd: number) => T): T {
  let fd: number;
  try {
    fd = openRegularSync(path);
  } catch {
    return missing;
  }
  try {
    return read(fd);
  } finally {
    closeSync(fd);
  }
}
