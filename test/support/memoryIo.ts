// A file system held in memory for the telemetry store's parts: files can be appended to, replaced
// (a new inode) or truncated between reads, exactly as a writer would do on disk.
import { dirname } from 'node:path';
import type { TelemetryIo } from '../../src/run/telemetry/io.ts';
import type { TailChunk, TailResult } from '../../src/formats/jsonlTail.ts';

export class MemoryIo implements TelemetryIo {
  private readonly files = new Map<string, { bytes: Buffer; ino: number; mtimeMs: number }>();
  private nextIno = 1;
  /** Every `readLines` call: path and the offset it started from. */
  readonly reads: { path: string; offset: number }[] = [];

  write(path: string, text: string): void {
    this.files.set(path, { bytes: Buffer.from(text), ino: this.nextIno++, mtimeMs: this.nextIno });
  }

  append(path: string, text: string): void {
    const f = this.files.get(path);
    if (f === undefined) return this.write(path, text);
    f.bytes = Buffer.concat([f.bytes, Buffer.from(text)]);
    f.mtimeMs++;
  }

  remove(path: string): void {
    this.files.delete(path);
  }

  stat(path: string): { size: number; ino: number; mtimeMs: number } | null {
    const f = this.files.get(path);
    return f === undefined ? null : { size: f.bytes.length, ino: f.ino, mtimeMs: f.mtimeMs };
  }

  list(dir: string): string[] {
    return [...this.files.keys()].filter((p) => dirname(p) === dir).map((p) => p.slice(dir.length + 1));
  }

  readText(path: string): string {
    const f = this.files.get(path);
    if (f === undefined) throw new Error(`ENOENT: ${path}`);
    return f.bytes.toString('utf8');
  }

  readLines(path: string, offset: number, onChunk: (chunk: TailChunk) => void): TailResult {
    this.reads.push({ path, offset });
    const f = this.files.get(path);
    if (f === undefined) return { offset, size: 0, bytes: 0 };
    const size = f.bytes.length;
    const rest = Buffer.from(f.bytes.subarray(offset, size));
    const end = rest.lastIndexOf(10) + 1;
    if (end > 0) onChunk({ buf: rest, end, offset });
    return { offset: offset + end, size, bytes: end };
  }

  readRange(path: string, start: number, length: number): Buffer {
    const f = this.files.get(path);
    return f === undefined ? Buffer.alloc(0) : Buffer.from(f.bytes.subarray(start, start + length));
  }

  firstLine(path: string): Buffer | null {
    const b = this.readRange(path, 0, 65536);
    const nl = b.indexOf(10);
    return nl < 0 ? null : b.subarray(0, nl);
  }

  lastLine(path: string): Buffer | null {
    const f = this.files.get(path);
    if (f === undefined) return null;
    const b = f.bytes;
    const last = b.lastIndexOf(10);
    if (last < 0) return null;
    const prev = last > 0 ? b.lastIndexOf(10, last - 1) : -1;
    return Buffer.from(b.subarray(prev + 1, last));
  }
}
