// The dashboard's file side, for the collector and the synthetic run: appends whole lines to the stream files, replaces the lane catalog and
// meta.json atomically. A file never ends in half a line for longer than a failed write takes to
// undo, and a torn tail left by a crash is cut before anything is appended after it.
import { closeSync, fchmodSync, fdatasyncSync, fstatSync, mkdirSync, openSync, readSync, renameSync, statSync, ftruncateSync, writeSync, unlinkSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';

/** The file operations the writer needs; tests pass one that fails on purpose. */
export interface CollectorFs {
  mkdirp(dir: string): void;
  /** Opens for appending (creating); returns a handle. */
  openAppend(path: string): number;
  size(fd: number): number;
  readAt(fd: number, buf: Buffer, position: number): number;
  /** Writes all of `data`, or throws (possibly after writing part of it). */
  write(fd: number, data: Buffer): void;
  truncate(fd: number, size: number): void;
  /** Makes an appended file's data durable (absent: left to the OS). */
  sync?(fd: number): void;
  close(fd: number): void;
  /** Writes `data` (or its pieces, one after another) to `path + ".tmp"` (mode) and renames it over `path`. */
  replace(path: string, tmpPath: string, data: string | Uint8Array | readonly Uint8Array[], mode: number): void;
  /** An open file's inode and creation time (what a rollup names its partition by); absent: no rollups. */
  identity?(fd: number): { ino: number; born: number };
  remove(path: string): void;
}

/**
 * Creates `dir` and its missing parents. Node's own recursive mkdir never returns for a path under a
 * directory that refuses new entries (`/proc/x`), so each missing level is made on its own.
 */
export function makeDirs(dir: string): void {
  const missing: string[] = [];
  for (let d = resolve(dir); ; ) {
    try {
      if (statSync(d).isDirectory()) break;
      throw Object.assign(new Error(`${d} is not a directory`), { code: 'ENOTDIR' });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      missing.push(d);
      if (dirname(d) === d) break;
      d = dirname(d);
    }
  }
  for (const d of missing.reverse()) {
    try {
      mkdirSync(d);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
  }
}

export const nodeCollectorFs: CollectorFs = {
  mkdirp: makeDirs,
  openAppend: (path) => openSync(path, 'a+', 0o644),
  size: (fd) => fstatSync(fd).size,
  identity: (fd) => {
    const st = fstatSync(fd);
    return { ino: st.ino, born: st.birthtimeMs };
  },
  readAt: (fd, buf, position) => readSync(fd, buf, 0, buf.length, position),
  write: (fd, data) => {
    let off = 0;
    while (off < data.length) off += writeSync(fd, data, off, data.length - off);
  },
  truncate: (fd, size) => ftruncateSync(fd, size),
  sync: (fd) => fdatasyncSync(fd),
  close: (fd) => closeSync(fd),
  replace: (path, tmpPath, data, mode) => {
    const fd = openSync(tmpPath, 'w', mode);
    try {
      fchmodSync(fd, mode); // a leftover tmp file keeps its old mode otherwise
      if (typeof data === 'string') writeSync(fd, data);
      else for (const piece of data instanceof Uint8Array ? [data] : data) for (let off = 0; off < piece.length; ) off += writeSync(fd, piece, off, piece.length - off);
    } finally {
      closeSync(fd);
    }
    renameSync(tmpPath, path);
  },
  remove: (path) => {
    try {
      unlinkSync(path);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
  },
};

export class DashboardWriter {
  /** Files whose tail this process has checked (or written cleanly) since it started. */
  private readonly clean = new Set<string>();
  /** Bytes cut from torn tails, per file (reported once by the collector). */
  readonly tornTails: { file: string; bytes: number }[] = [];

  /** Told of every append that succeeded: the file, where the new bytes start, the bytes and the file's inode. */
  onAppended: ((rel: string, start: number, data: Buffer, file: { ino: number; born: number } | null) => void) | null = null;

  constructor(
    readonly dir: string,
    private readonly fs: CollectorFs = nodeCollectorFs,
  ) {}

  /** Appends complete lines (each without its newline) to `rel` under the dashboard directory. */
  appendLines(rel: string, lines: readonly string[]): number {
    if (lines.length === 0) return 0;
    const data = Buffer.from(lines.join('\n') + '\n', 'utf8');
    const { fd, size } = this.openForAppend(rel);
    try {
      try {
        this.fs.write(fd, data);
      } catch (err) {
        // Undo a partial append so the file still ends at a line boundary; if even that fails, check again next time.
        try {
          this.fs.truncate(fd, size);
        } catch {
          this.clean.delete(rel);
        }
        throw err;
      }
      this.fs.sync?.(fd);
      this.onAppended?.(rel, size, data, this.fs.identity?.(fd) ?? null);
    } finally {
      this.fs.close(fd);
    }
    return data.length;
  }

  /** Opens `rel` for appending; its size once a torn tail is cut (checked once per file and process). */
  private openForAppend(rel: string): { fd: number; size: number } {
    const path = join(this.dir, rel);
    this.fs.mkdirp(dirname(path));
    const fd = this.fs.openAppend(path);
    try {
      let size = this.fs.size(fd);
      if (!this.clean.has(rel)) {
        size = this.cutTornTail(fd, size, rel);
        this.clean.add(rel);
      }
      return { fd, size };
    } catch (err) {
      this.fs.close(fd);
      throw err;
    }
  }

  /** The size `rel` will be appended at (its torn tail cut first); 0 for a file not there yet. */
  prepare(rel: string): number {
    const { fd, size } = this.openForAppend(rel);
    this.fs.close(fd);
    return size;
  }

  /** Cuts a last line that has no newline (a write the previous writer did not finish); returns the new size. */
  private cutTornTail(fd: number, size: number, rel: string): number {
    if (size === 0) return 0;
    const chunk = Buffer.allocUnsafe(Math.min(size, 64 * 1024));
    let end = size;
    for (;;) {
      const from = Math.max(0, end - chunk.length);
      const n = this.fs.readAt(fd, chunk.subarray(0, end - from), from);
      const view = chunk.subarray(0, n);
      if (end === size && view[n - 1] === 10) return size;
      const nl = view.lastIndexOf(10);
      if (nl >= 0) {
        const keep = from + nl + 1;
        this.fs.truncate(fd, keep);
        this.tornTails.push({ file: rel, bytes: size - keep });
        return keep;
      }
      if (from === 0) {
        this.fs.truncate(fd, 0);
        this.tornTails.push({ file: rel, bytes: size });
        return 0;
      }
      end = from;
    }
  }

  /** Atomically replaces a small document (`lane_catalog.json`, `meta.json`, `collector.json`). */
  replace(rel: string, text: string | Uint8Array | readonly Uint8Array[], mode = 0o644): void {
    const path = join(this.dir, rel);
    this.fs.mkdirp(dirname(path));
    this.fs.replace(path, `${path}.tmp`, text, mode);
  }

  remove(rel: string): void {
    this.fs.remove(join(this.dir, rel));
  }
}
