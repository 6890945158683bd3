// Appends telemetry lines to `dashboard/` the way miles' MetricStore.flush does: hourly UTC
// partitions for the partitioned streams, one file for the others, written in large chunks.
import { closeSync, fstatSync, mkdirSync, openSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { flatFile, hourKey, HOUR_SECONDS, partitionFile, type FlatStream, type PartitionedStream } from '../formats/dashboard/layout.ts';

/** Told of every chunk of whole lines written to a partition (the collector's sidecars: rollups, parsed columns). */
export interface AppendListener {
  appended(rel: string, start: number, data: Uint8Array, file: { ino: number; born: number } | null): void;
}

interface OpenFile {
  /** Path relative to the dashboard directory. */
  rel: string;
  fd: number;
  /** Bytes on disk (where the next drained chunk starts), and the file's identity. */
  size: number;
  ino: number;
  born: number;
  /** Bytes not yet on disk; allocated on first use, released when the file stops being current. */
  buf: Buffer | null;
  pos: number;
}

export class TelemetryWriter {
  private readonly files = new Map<string, OpenFile>();
  /** The hour file each partitioned stream wrote last (records mostly arrive in time order). */
  private readonly current = new Map<PartitionedStream, { hour: number; file: OpenFile }>();
  rows = 0;
  bytes = 0;

  constructor(
    readonly dashboardDir: string,
    private readonly chunkBytes = 2 << 20,
    private readonly listener: AppendListener | null = null,
  ) {
    mkdirSync(dashboardDir, { recursive: true });
  }

  /** One record line (without its newline) of a partitioned stream, filed by `partitionTs`. */
  appendPartitioned(stream: PartitionedStream, partitionTs: number, line: string): void {
    const hour = Math.floor(partitionTs / HOUR_SECONDS);
    let current = this.current.get(stream);
    if (current === undefined || current.hour !== hour) {
      // Streams move forward in time: the previous hour file keeps no buffer while idle.
      if (current) this.drain(current.file, true);
      current = { hour, file: this.fileFor(partitionFile(stream, hourKey(hour * HOUR_SECONDS))) };
      this.current.set(stream, current);
    }
    this.push(current.file, line);
  }

  appendSingle(stream: FlatStream, line: string): void {
    this.push(this.fileFor(flatFile(stream)), line);
  }

  /** Writes every buffered byte (the files stay open). */
  flush(): void {
    for (const file of this.files.values()) this.drain(file, false);
  }

  /** Writes every buffered byte and closes every file. */
  close(): void {
    for (const file of this.files.values()) {
      this.drain(file, true);
      closeSync(file.fd);
    }
    this.files.clear();
    this.current.clear();
  }

  private fileFor(relative: string): OpenFile {
    let file = this.files.get(relative);
    if (!file) {
      const path = join(this.dashboardDir, relative);
      mkdirSync(join(path, '..'), { recursive: true });
      const fd = openSync(path, 'a');
      const st = fstatSync(fd);
      file = { rel: relative, fd, size: st.size, ino: st.ino, born: st.birthtimeMs, buf: null, pos: 0 };
      this.files.set(relative, file);
    }
    return file;
  }

  private push(file: OpenFile, line: string): void {
    // Lines go straight into a byte buffer, so no string outlives its row (GC stays cheap).
    const worst = line.length * 3 + 1;
    if (file.buf === null) file.buf = Buffer.allocUnsafe(Math.max(this.chunkBytes, worst));
    else if (file.pos + worst > file.buf.length) {
      this.drain(file, false);
      if (worst > file.buf.length) file.buf = Buffer.allocUnsafe(worst);
    }
    file.pos += file.buf.write(line, file.pos, 'utf8');
    file.buf[file.pos++] = 10;
    this.rows++;
  }

  private drain(file: OpenFile, release: boolean): void {
    const buf = file.buf;
    if (buf !== null && file.pos > 0) {
      let off = 0;
      while (off < file.pos) off += writeSync(file.fd, buf, off, file.pos - off);
      this.listener?.appended(file.rel, file.size, buf.subarray(0, file.pos), { ino: file.ino, born: file.born });
      file.size += file.pos;
      this.bytes += file.pos;
      file.pos = 0;
    }
    if (release) file.buf = null;
  }
}
