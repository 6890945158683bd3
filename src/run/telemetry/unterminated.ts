// Stream files whose last line has no newline. On a live run that is a line still being written (read
// once it ends); on a file nobody writes, its bytes are left out, and that is a warning naming the file.
import { unterminatedBytes } from '../../formats/jsonlTail.ts';
import { FRESH_SECONDS } from '../errors.ts';
import type { TelemetryIo } from './io.ts';
import type { TelemetryWarning } from './records.ts';

interface Tail {
  rel: string;
  /** Bytes after the last newline. */
  bytes: number;
  mtimeMs: number;
  /** Number of the unterminated line (0: not counted). */
  line: number;
  /** Modified within the freshness window when looked at: looked at again once it is older. */
  young: boolean;
}

const FRESH_MS = FRESH_SECONDS * 1000;

export class UnterminatedTails {
  /** Per path: the size last looked at, and the tail found then (null: the file ends with a newline). */
  private readonly seen = new Map<string, { size: number; tail: Tail | null }>();

  constructor(
    private readonly io: TelemetryIo,
    private readonly now: () => number,
  ) {}

  /**
   * Looks at the end of `path` again when its size differs from the last look (`size`: the size a listing
   * just saw, else it is stat'ed). `line` numbers its last line when the reader counted them (0: unknown).
   */
  check(path: string, rel: string, line: number, size?: number): void {
    const known = this.seen.get(path);
    if (size !== undefined && known?.size === size) {
      if (known.tail !== null) known.tail.line = line;
      return;
    }
    const st = this.io.stat(path);
    if (st === null || st.size === 0) {
      this.seen.delete(path);
      return;
    }
    if (known?.size === st.size) {
      if (known.tail !== null) known.tail.line = line;
      return;
    }
    const bytes = unterminatedBytes(st.size, (start, length) => this.io.readRange(path, start, length));
    const young = this.now() - st.mtimeMs < FRESH_MS;
    this.seen.set(path, { size: st.size, tail: bytes > 0 ? { rel, bytes, mtimeMs: st.mtimeMs, line, young } : null });
  }

  /** Forgets the files not in `paths` (removed partitions). */
  keep(paths: ReadonlySet<string>): void {
    for (const p of this.seen.keys()) if (!paths.has(p)) this.seen.delete(p);
  }

  /** A warning per unterminated file not modified within the freshness window: no writer is finishing it. */
  warnings(): TelemetryWarning[] {
    const now = this.now();
    const out: TelemetryWarning[] = [];
    for (const [path, seen] of [...this.seen]) {
      let tail = seen.tail;
      if (tail === null || now - tail.mtimeMs < FRESH_MS) continue;
      if (tail.young) {
        // young when looked at, old now: its writer may have ended the line meanwhile
        this.seen.delete(path);
        this.check(path, tail.rel, tail.line);
        tail = this.seen.get(path)?.tail ?? null;
        if (tail === null || now - tail.mtimeMs < FRESH_MS) continue;
      }
      out.push({ file: tail.rel, line: tail.line, message: `last line has no newline (${tail.bytes} byte${tail.bytes === 1 ? '' : 's'} left out)` });
    }
    return out.sort((a, b) => (a.file < b.file ? -1 : a.file > b.file ? 1 : 0));
  }
}
