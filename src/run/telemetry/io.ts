// The file operations the telemetry store performs, as one interface: the store's parts take it so a
// test can hand them a file system it controls (a file replaced under a reader, a partial write, a
// vanished directory) while the reading algorithm stays the real one.
import { readdirSync, statSync } from 'node:fs';
import { readRegularFileSync } from '../../formats/fileAccess.ts';
import { readCompleteLines, readFirstLine, readLastCompleteLine, readRange } from '../../formats/jsonlTail.ts';
import type { TailChunk, TailResult } from '../../formats/jsonlTail.ts';

export interface FileStat {
  size: number;
  ino: number;
  mtimeMs: number;
}

export interface TelemetryIo {
  /** A regular file's size and identity; null when missing or not a regular file. */
  stat(path: string): FileStat | null;
  /** Entry names of a directory; empty when it is missing. */
  list(dir: string): string[];
  /** A whole small file as UTF-8. Throws when it cannot be read. */
  readText(path: string): string;
  /** Complete lines from `offset` to the current end, in chunks of whole lines (see jsonlTail). */
  readLines(path: string, offset: number, onChunk: (chunk: TailChunk) => void): TailResult;
  /** Bytes `[start, start + length)` (fewer at the end; empty when missing). */
  readRange(path: string, start: number, length: number): Buffer;
  /** The first complete line within the first 64 KiB, or null. */
  firstLine(path: string): Buffer | null;
  /** The last complete line within the final 64 KiB, or null. */
  lastLine(path: string): Buffer | null;
}

/** The real file system. */
export const nodeIo: TelemetryIo = {
  stat(path) {
    try {
      const st = statSync(path);
      return st.isFile() ? { size: st.size, ino: st.ino, mtimeMs: st.mtimeMs } : null;
    } catch {
      return null;
    }
  },
  list(dir) {
    try {
      return readdirSync(dir);
    } catch {
      return [];
    }
  },
  // Never a blocking open of a FIFO or device standing in for a file.
  readText: (path) => readRegularFileSync(path).toString('utf8'),
  readLines: (path, offset, onChunk) => readCompleteLines(path, offset, onChunk),
  readRange,
  firstLine: (path) => readFirstLine(path),
  lastLine: (path) => readLastCompleteLine(path),
};

/** `size:mtime:inode` of a file, or '' when it is missing: changes whenever the file may have. */
export function stampOf(io: TelemetryIo, path: string): string {
  const st = io.stat(path);
  return st === null ? '' : `${st.size}:${st.mtimeMs}:${st.ino}`;
}
