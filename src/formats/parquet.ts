// Parquet over a file handle (hyparquet): metadata once, then only the row groups a read touches.
import type { FileHandle } from 'node:fs/promises';
import { openRegular } from './fileAccess.ts';
import { parquetMetadataAsync, parquetReadObjects, parquetSchema } from 'hyparquet';
import type { AsyncBuffer, Compressors, FileMetaData } from 'hyparquet';

/** Codecs hyparquet decodes itself; any other loads hyparquet-compressors (gzip, brotli, zstd, lz4) with the file. */
const BUILT_IN_CODECS = new Set(['UNCOMPRESSED', 'SNAPPY']);

/** A parquet file that cannot be read as one (bad footer, unsupported encoding, truncated). */
export class ParquetError extends Error {
  override readonly name = 'ParquetError';
  constructor(readonly file: string, message: string, readonly cause?: unknown) {
    super(`${file}: ${message}`);
  }
}

export type ParquetRow = Record<string, unknown>;

export interface RowGroupSpan {
  rowStart: number;
  rowEnd: number;
  /** Min/max statistics per top-level column, when the writer recorded them. */
  stats: Map<string, { min: unknown; max: unknown }>;
}

export class ParquetFile {
  private constructor(
    /** The name used in errors (never an absolute path of the machine unless the caller passes one). */
    readonly name: string,
    private readonly handle: FileHandle,
    private readonly buffer: AsyncBuffer,
    readonly metadata: FileMetaData,
    readonly columnNames: string[],
    readonly rowGroups: RowGroupSpan[],
    /** Byte ranges read since the footer, to check that a read stays within the row groups it needs. */
    readonly rangesRead: [number, number][],
    /** Decoders of the codecs hyparquet lacks, when a column uses one. */
    private readonly compressors: Compressors | undefined,
  ) {}

  static async open(path: string, name = path): Promise<ParquetFile> {
    const handle = await openRegular(path);
    const ranges: [number, number][] = [];
    try {
      const { size } = await handle.stat();
      const buffer: AsyncBuffer = {
        byteLength: size,
        async slice(start: number, end = size) {
          ranges.push([start, end]);
          if (ranges.length > 256) ranges.splice(0, ranges.length - 256);
          const out = new Uint8Array(Math.max(0, end - start));
          let done = 0;
          while (done < out.length) {
            const { bytesRead } = await handle.read(out, done, out.length - done, start + done);
            if (bytesRead === 0) throw new Error(`unexpected end of file at byte ${start + done}`);
            done += bytesRead;
          }
          return out.buffer;
        },
      };
      let metadata: FileMetaData;
      let columnNames: string[];
      try {
        metadata = await parquetMetadataAsync(buffer);
        // A damaged footer can decode into a schema that is not a tree: that is the file's fault too.
        columnNames = parquetSchema(metadata).children.map((c) => c.element.name);
      } catch (e) {
        throw new ParquetError(name, `not a readable parquet file (${problemOf(e)})`, e);
      }
      let at = 0;
      const rowGroups = metadata.row_groups.map((rg): RowGroupSpan => {
        const n = Number(rg.num_rows);
        const stats = new Map<string, { min: unknown; max: unknown }>();
        for (const c of rg.columns) {
          const md = c.meta_data;
          const st = md?.statistics;
          if (md && md.path_in_schema.length === 1 && st && st.min_value !== undefined && st.max_value !== undefined) {
            stats.set(md.path_in_schema[0], { min: st.min_value, max: st.max_value });
          }
        }
        const span = { rowStart: at, rowEnd: at + n, stats };
        at += n;
        return span;
      });
      // The extra decoders are a module of their own: loaded only for a file that needs one.
      const foreign = metadata.row_groups.some((rg) => rg.columns.some((c) => c.meta_data && !BUILT_IN_CODECS.has(c.meta_data.codec)));
      const compressors = foreign ? (await import('hyparquet-compressors')).compressors : undefined;
      ranges.length = 0;
      return new ParquetFile(name, handle, buffer, metadata, columnNames, rowGroups, ranges, compressors);
    } catch (e) {
      await handle.close();
      // Whatever a damaged footer makes the decoder trip on is the file's fault.
      throw e instanceof ParquetError ? e : new ParquetError(name, `not a readable parquet file (${problemOf(e)})`, e);
    }
  }

  get numRows(): number {
    return Number(this.metadata.num_rows);
  }

  /** Rows `[rowStart, rowEnd)` as objects; only the row groups overlapping the range are decoded. */
  async readRows(rowStart: number, rowEnd: number, columns?: string[]): Promise<ParquetRow[]> {
    try {
      return (await parquetReadObjects({
        file: this.buffer,
        metadata: this.metadata,
        rowStart,
        rowEnd,
        columns,
        compressors: this.compressors,
      })) as ParquetRow[];
    } catch (e) {
      throw new ParquetError(this.name, `cannot decode rows [${rowStart}, ${rowEnd}) (${problemOf(e)})`, e);
    }
  }

  /**
   * Row numbers whose integer `column` equals `value`, decoding that column only in the row groups whose
   * statistics admit the value (all groups when the writer kept no statistics).
   */
  async findRows(column: string, value: number): Promise<number[]> {
    const out: number[] = [];
    for (const g of this.rowGroups) {
      const st = g.stats.get(column);
      if (st && (typeof st.min === 'number' || typeof st.min === 'bigint')) {
        if (value < Number(st.min) || value > Number(st.max as number | bigint)) continue;
      }
      const rows = await this.readRows(g.rowStart, g.rowEnd, [column]);
      rows.forEach((r, i) => {
        const v = r[column];
        if (v !== null && v !== undefined && Number(v) === value) out.push(g.rowStart + i);
      });
    }
    return out;
  }

  async close(): Promise<void> {
    await this.handle.close();
  }
}

/** A decoder's complaint in words (some throw plain strings). */
function problemOf(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}
