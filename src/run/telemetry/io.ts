// The file operations the telemetry store performs, as one interface: the store's parts take it so a
// test can hand them a file system it controls (a file replaced under a reader, a partial write, a
// vanished directory) while the reading algorithm stays the real one.
import { readdirSync, realpathSync, statSync } from 'node:fs';
import { fileKind, isInside, readRegularFileSync } from '../../formats/fileAccess.ts';
import { readCompleteLines, readFirstLine, readLastCompleteLine, readRange } from '../../formats/jsonlTail.ts';
import type { TailChunk, TailResult } from '../../formats/jsonlTail.ts';

export type { FileStat } from '../../formats/columns/colsFile.ts';
import type { FileStat } from '../../formats/columns/colsFile.ts';

export interface TelemetryIo {
  /** A regular file's size and identity; null when missing or not a regular file. */
  stat(path: string): FileStat | null;
  /** Entry names of a directory; empty when it is missing. */
  list(dir: string): string[];
  /** A whole small file as UTF-8. Throws when it cannot be read. */
  readText(path: string): string;
  /** Complete lines from `offset` to the current end, in chunks of whole lines (see jsonlTail). */
  readLines(path: string, offset: number, onChunk: (chunk: TailChunk) => void): TailResult;
  /** Bytes `[start, start + length)` (fewer at the end; empty when missing), in `into` when it is long enough. */
  readRange(path: string, start: number, length: number, into?: Buffer): Buffer;
  /** The first complete line within the first 64 KiB, or null. */
  firstLine(path: string): Buffer | null;
  /** The last complete line within the final 64 KiB, or null. */
  lastLine(path: string): Buffer | null;
  /**
   * Why a path that exists is not read (a FIFO or directory in place of a file, a symlink loop, a link out of
   * the run), or null when it is missing or readable: the store reports it as a warning naming the file.
   */
  refusal?(path: string): string | null;
}

/** The real file system. */
export const nodeIo: TelemetryIo = {
  stat(path) {
    try {
      const st = statSync(path);
      return st.isFile() ? { size: st.size, ino: st.ino, mtimeMs: st.mtimeMs, bornMs: st.birthtimeMs } : null;
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
  refusal(path) {
    try {
      const st = statSync(path);
      return st.isFile() ? null : `${fileKind(st)}, not a regular file: skipped`;
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') return null;
      return code === 'ELOOP' ? 'a symlink loop: skipped' : `unreadable (${code ?? (e as Error).message}): skipped`;
    }
  },
};

/**
 * The real file system, confined to `root` once symlinks resolve: a file resolving outside it reads as
 * missing, and `refusal` says why.
 */
export function confinedNodeIo(root: string): TelemetryIo {
  const realRoot = realpathSync(root);
  const outside = (path: string): boolean => {
    try {
      return !isInside(realRoot, realpathSync(path));
    } catch {
      return false;
    }
  };
  const guard = <A extends unknown[], R>(f: (path: string, ...a: A) => R, none: R) => (path: string, ...a: A): R => (outside(path) ? none : f(path, ...a));
  return {
    ...nodeIo,
    stat: guard(nodeIo.stat, null),
    readText: (path) => {
      if (outside(path)) throw new Error('a symlink resolving outside the run: skipped');
      return nodeIo.readText(path);
    },
    readLines: guard(nodeIo.readLines, { offset: 0, size: 0, bytes: 0 }),
    readRange: guard(nodeIo.readRange, Buffer.alloc(0)),
    firstLine: guard(nodeIo.firstLine, null),
    lastLine: guard(nodeIo.lastLine, null),
    refusal(path) {
      if (outside(path)) return 'a symlink resolving outside the run: skipped';
      return nodeIo.refusal!(path);
    },
  };
}

/** `size:mtime:inode` of a file, or '' when it is missing: changes whenever the file may have. */
export function stampOf(io: TelemetryIo, path: string): string {
  const st = io.stat(path);
  return st === null ? '' : `${st.size}:${st.mtimeMs}:${st.ino}`;
}
