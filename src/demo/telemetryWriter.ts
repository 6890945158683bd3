// Appends telemetry lines to `dashboard/` the way miles' MetricStore.flush does: hourly UTC
// partitions for the partitioned streams, one file for the others, written in large chunks.
import { closeSync, mkdirSync, openSync, writeSync } from 'node:fs';
import { join } from 'node:path';

export const PARTITIONED_STREAMS = ['phases', 'gpu_util', 'engine_series', 'trajectories', 'gpu_processes'] as const;
export const SINGLE_FILE_STREAMS = ['metrics', 'topology', 'data_buffer'] as const;
export type PartitionedStream = (typeof PARTITIONED_STREAMS)[number];
export type SingleFileStream = (typeof SINGLE_FILE_STREAMS)[number];
export type TelemetryStream = PartitionedStream | SingleFileStream;

/** `time.strftime("%Y%m%d_%H", time.gmtime(ts))`. */
export function hourKey(ts: number): string {
  const d = new Date(Math.floor(ts) * 1000);
  const p = (n: number) => String(n).padStart(2, '0');
  return `${d.getUTCFullYear()}${p(d.getUTCMonth() + 1)}${p(d.getUTCDate())}_${p(d.getUTCHours())}`;
}

interface OpenFile {
  fd: number;
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
  ) {
    mkdirSync(dashboardDir, { recursive: true });
  }

  /** One record line (without its newline) of a partitioned stream, filed by `partitionTs`. */
  appendPartitioned(stream: PartitionedStream, partitionTs: number, line: string): void {
    const hour = Math.floor(partitionTs / 3600);
    let current = this.current.get(stream);
    if (current === undefined || current.hour !== hour) {
      // Streams move forward in time: the previous hour file keeps no buffer while idle.
      if (current) this.drain(current.file, true);
      current = { hour, file: this.fileFor(join(stream, hourKey(hour * 3600) + '.jsonl')) };
      this.current.set(stream, current);
    }
    this.push(current.file, line);
  }

  appendSingle(stream: SingleFileStream, line: string): void {
    this.push(this.fileFor(stream + '.jsonl'), line);
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
      file = { fd: openSync(path, 'a'), buf: null, pos: 0 };
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
      this.bytes += file.pos;
      file.pos = 0;
    }
    if (release) file.buf = null;
  }
}
