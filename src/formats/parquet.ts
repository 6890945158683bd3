// Parquet over a file handle (hyparquet): the footer walked once, then only the row groups a read touches
// (their metadata included: a file of many small row groups is not decoded whole to read one).
import { closeSync, readSync } from 'node:fs';
import { openRegularSyncSized } from './fileAccess.ts';
import { parquetMetadata, parquetReadObjects, parquetSchema } from 'hyparquet';
import type { AsyncBuffer, ColumnMetaData, Compressors, FileMetaData, RowGroup, SchemaElement, SchemaTree } from 'hyparquet';
import { footerLayout, footerWith, layoutFromText, layoutText, type FooterLayout } from './parquetFooter.ts';
import { chunkColumn, chunkRow, rowShape, UNSUPPORTED, type RowShape } from './parquetRow.ts';

/** Codecs hyparquet decodes itself (UNCOMPRESSED, SNAPPY); any other loads a decoder with the file. */
const BUILT_IN_CODECS = new Set([0, 1]);
/** Parquet's number for ZSTD (what polars writes by default): a file of no other foreign codec loads its decoder alone. */
const ZSTD = 6;

/** Which extra decoders a file's codecs loaded: none, zstd's alone, or every codec's (hyparquet-compressors). */
export type ExtraDecoders = 'none' | 'zstd' | 'all';
/** The first read of a footer: the file's last bytes (hyparquet's own default). */
const FOOTER_FETCH = 512 * 1024;

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
}

/** A row group's min/max statistics of a plain integer column. */
interface IntegerStats {
  min: number | bigint;
  max: number | bigint;
}

export class ParquetFile {
  /** Row group metadata decoded so far, by position. */
  private readonly groupMeta = new Map<number, RowGroup>();
  private full: FileMetaData | undefined;
  /** Per column searched so far, each row group's statistics of it (undefined: none recorded). */
  private readonly columnStats = new Map<string, (IntegerStats | undefined)[]>();

  private constructor(
    /** The name used in errors (never an absolute path of the machine unless the caller passes one). */
    readonly name: string,
    /** The open file (read with blocking reads: a read of a few row groups costs less than a round trip per slice). */
    private fd: number | null,
    private readonly buffer: AsyncBuffer,
    /** The file's metadata without its row groups (those decode one at a time, when a read needs them). */
    private readonly base: FileMetaData,
    private readonly layout: FooterLayout,
    readonly columnNames: string[],
    readonly rowGroups: RowGroupSpan[],
    /** Byte ranges read since the footer, to check that a read stays within the row groups it needs. */
    readonly rangesRead: [number, number][],
    /** Decoders of the codecs hyparquet lacks, when a column uses one. */
    private readonly compressors: Compressors | undefined,
    /** Which of them were loaded. */
    readonly extraDecoders: ExtraDecoders,
  ) {}

  /**
   * Opens a parquet file. `keptLayout` is what `keptLayout()` gave for this same file (the caller makes sure
   * of that): the footer is then not walked again.
   */
  static async open(path: string, name = path, opts: { keptLayout?: string } = {}): Promise<ParquetFile> {
    const { fd, size } = openRegularSyncSized(path);
    const ranges: [number, number][] = [];
    let file: ParquetFile | undefined;
    try {
      const buffer: AsyncBuffer = {
        byteLength: size,
        async slice(start: number, end = size) {
          ranges.push([start, end]);
          if (ranges.length > 256) ranges.splice(0, ranges.length - 256);
          if (file && file.fd === null) throw new Error('the file is closed');
          const out = new Uint8Array(Math.max(0, end - start));
          let done = 0;
          while (done < out.length) {
            const bytesRead = readSync(fd, out, done, out.length - done, start + done);
            if (bytesRead === 0) throw new Error(`unexpected end of file at byte ${start + done}`);
            done += bytesRead;
          }
          return out.buffer;
        },
      };
      let base: FileMetaData;
      let layout: FooterLayout;
      let columnNames: string[];
      try {
        const bytes = await footerBytes(buffer);
        layout = (opts.keptLayout !== undefined ? layoutFromText(opts.keptLayout, bytes) : null) ?? footerLayout(bytes);
        // Everything but the row groups, decoded by hyparquet from a footer holding none of them.
        base = parquetMetadata(footerWith(layout, 0, 0));
        // A damaged footer can decode into a schema that is not a tree: that is the file's fault too.
        columnNames = parquetSchema(base).children.map((c) => c.element.name);
      } catch (e) {
        throw new ParquetError(name, `not a readable parquet file (${problemOf(e)})`, e);
      }
      let at = 0;
      const rowGroups = layout.groups.map((rg): RowGroupSpan => {
        const span = { rowStart: at, rowEnd: at + rg.numRows };
        at += rg.numRows;
        return span;
      });
      // The extra decoders are modules of their own: loaded only for a file that needs one, zstd's alone when
      // it is the only one (every codec's decoders, a WebAssembly module among them, take tens of ms to load).
      const foreign = new Set<number>();
      for (const rg of layout.groups) for (const c of rg.columns) if (c.codec !== undefined && !BUILT_IN_CODECS.has(c.codec)) foreign.add(c.codec);
      const extraDecoders: ExtraDecoders = foreign.size === 0 ? 'none' : foreign.size === 1 && foreign.has(ZSTD) ? 'zstd' : 'all';
      const compressors = await decodersOf(extraDecoders);
      ranges.length = 0;
      file = new ParquetFile(name, fd, buffer, base, layout, columnNames, rowGroups, ranges, compressors, extraDecoders);
      return file;
    } catch (e) {
      closeSync(fd);
      // Whatever a damaged footer makes the decoder trip on is the file's fault.
      throw e instanceof ParquetError ? e : new ParquetError(name, `not a readable parquet file (${problemOf(e)})`, e);
    }
  }

  /** Where the row groups lie in the footer, as text to hand to a later `open` of the same file. */
  keptLayout(): string {
    // Statistics are used only for plain integer columns (see `plainInteger`).
    const leaves = this.base.schema.filter((e) => e.type);
    const usable = (leaf: SchemaElement | undefined): boolean =>
      leaf !== undefined && leaf.converted_type === undefined && leaf.logical_type === undefined && (leaf.type === 'INT32' || leaf.type === 'INT64');
    return layoutText(this.layout, (k) => usable(leaves[k]));
  }

  get numRows(): number {
    return Number(this.base.num_rows);
  }

  /** The whole footer as hyparquet decodes it (every row group). */
  get metadata(): FileMetaData {
    this.full ??= parquetMetadata(footerWith(this.layout, 0, this.layout.groups.length));
    return this.full;
  }

  /** Row groups `[from, to)`'s metadata (each decoded once, from a footer holding only the ones not yet decoded). */
  private groups(from: number, to: number): RowGroup[] {
    let k = from;
    while (k < to) {
      if (this.groupMeta.has(k)) {
        k++;
        continue;
      }
      let end = k + 1;
      while (end < to && !this.groupMeta.has(end)) end++;
      const decoded = parquetMetadata(footerWith(this.layout, k, end)).row_groups;
      decoded.forEach((g, i) => this.groupMeta.set(k + i, g));
      k = end;
    }
    const out: RowGroup[] = [];
    for (let i = from; i < to; i++) out.push(this.groupMeta.get(i)!);
    return out;
  }

  /** Rows `[rowStart, rowEnd)` as objects; only the row groups overlapping the range are decoded (their metadata too). */
  async readRows(rowStart: number, rowEnd: number, columns?: string[]): Promise<ParquetRow[]> {
    try {
      // The row groups the range touches, contiguous: hyparquet reads them as if they were the file's.
      let from = 0;
      while (from < this.rowGroups.length && this.rowGroups[from].rowEnd <= rowStart) from++;
      let to = from;
      while (to < this.rowGroups.length && this.rowGroups[to].rowStart < rowEnd) to++;
      const offset = from < this.rowGroups.length ? this.rowGroups[from].rowStart : 0;
      const metadata = { ...this.base, row_groups: this.groups(from, to) };
      return (await parquetReadObjects({
        file: this.buffer,
        metadata,
        rowStart: Math.max(0, rowStart - offset),
        rowEnd: rowEnd - offset,
        columns,
        compressors: this.compressors,
      })) as ParquetRow[];
    } catch (e) {
      throw new ParquetError(this.name, `cannot decode rows [${rowStart}, ${rowEnd}) (${problemOf(e)})`, e);
    }
  }

  /**
   * Row `row` of the named columns (every column when none are named), as `readRows(row, row + 1)` gives it:
   * each column chunk is read whole, its pages up to the row passed by their headers, and only the row's values decoded.
   * Columns of another shape or encoding (see parquetRow.ts) come from a decode of the row group.
   */
  async readRow(row: number, columns?: string[]): Promise<ParquetRow> {
    const k = this.rowGroups.findIndex((g) => g.rowStart <= row && row < g.rowEnd);
    if (k < 0) return (await this.readRows(row, row + 1, columns))[0];
    try {
      const out: ParquetRow = {};
      for (const node of parquetSchema(this.base).children) {
        if (columns && !columns.includes(node.element.name)) continue;
        const found = await this.columnChunk(k, node);
        const value = found && chunkRow(found.chunk, found.meta, found.shape, row - this.rowGroups[k].rowStart, this.compressors);
        if (!found || value === UNSUPPORTED) return (await this.readRows(row, row + 1, columns))[0];
        out[node.element.name] = value;
      }
      return out;
    } catch (e) {
      throw new ParquetError(this.name, `cannot decode row ${row} (${problemOf(e)})`, e);
    }
  }

  /** The bytes of top-level column `node`'s chunk in row group `k`, with its metadata and shape; null for a shape parquetRow.ts does not read. */
  private async columnChunk(k: number, node: SchemaTree): Promise<{ chunk: Uint8Array; meta: ColumnMetaData; shape: RowShape } | null> {
    const shape = rowShape(node);
    if (!shape) return null;
    const leaf = shape.list ? node.children[0].children[0] : node;
    const path = leaf.path.join('.');
    const meta = this.groups(k, k + 1)[0].columns.find((c) => c.meta_data?.path_in_schema.join('.') === path)?.meta_data;
    if (!meta) return null;
    const start = Number(meta.dictionary_page_offset || meta.data_page_offset);
    return { chunk: new Uint8Array(await this.buffer.slice(start, start + Number(meta.total_compressed_size))), meta, shape };
  }

  /**
   * Row numbers whose integer `column` equals `value`, decoding that column only in the row groups whose
   * statistics admit the value (all groups when the writer kept no statistics).
   */
  async findRows(column: string, value: number): Promise<number[]> {
    const out: number[] = [];
    const stats = this.statsOf(column);
    const node = parquetSchema(this.base).children.find((c) => c.element.name === column);
    for (const [k, g] of this.rowGroups.entries()) {
      const st = stats[k];
      if (st && (value < Number(st.min) || value > Number(st.max))) continue;
      // a plain column's values straight from its pages (else the row group's decode of it)
      let values: ArrayLike<unknown> | typeof UNSUPPORTED = UNSUPPORTED;
      try {
        const found = node && (await this.columnChunk(k, node));
        if (found) values = chunkColumn(found.chunk, found.meta, found.shape, this.compressors);
      } catch (e) {
        throw new ParquetError(this.name, `cannot decode ${column} in row group ${k} (${problemOf(e)})`, e);
      }
      if (values === UNSUPPORTED) values = (await this.readRows(g.rowStart, g.rowEnd, [column])).map((r) => r[column]);
      for (let i = 0; i < values.length; i++) {
        const v = values[i];
        if (v !== null && v !== undefined && Number(v) === value) out.push(g.rowStart + i);
      }
    }
    return out;
  }

  /** Each row group's statistics of `column`, read from the footer the first time a search needs them (not for every column at open). */
  private statsOf(column: string): (IntegerStats | undefined)[] {
    let stats = this.columnStats.get(column);
    if (!stats) {
      const leaves = this.base.schema.filter((e) => e.type);
      stats = this.layout.groups.map((rg) => {
        let found: IntegerStats | undefined;
        rg.columns.forEach((c, k) => {
          if (c.name !== column) return;
          const min = c.min && plainInteger(c.min, leaves[k]);
          const max = c.max && plainInteger(c.max, leaves[k]);
          if (min !== undefined && max !== undefined) found = { min, max };
        });
        return found;
      });
      this.columnStats.set(column, stats);
    }
    return stats;
  }

  async close(): Promise<void> {
    const fd = this.fd;
    this.fd = null;
    if (fd !== null) closeSync(fd);
  }
}

/** The decoders `which` names (none: hyparquet's own suffice). */
async function decodersOf(which: ExtraDecoders): Promise<Compressors | undefined> {
  if (which === 'none') return undefined;
  if (which === 'all') return (await import('hyparquet-compressors')).compressors;
  const { decompress } = await import('fzstd');
  // as hyparquet-compressors' own ZSTD decoder (the frame names its length)
  return { ZSTD: (input: Uint8Array) => decompress(input) };
}

/** The FileMetaData bytes at the end of a parquet file (read as hyparquet does: the last 512 KiB, then the rest). */
async function footerBytes(buffer: AsyncBuffer): Promise<Uint8Array> {
  const size = buffer.byteLength;
  const tailStart = Math.max(0, size - FOOTER_FETCH);
  const tail = new Uint8Array(await buffer.slice(tailStart, size));
  const view = new DataView(tail.buffer, tail.byteOffset, tail.byteLength);
  if (tail.length < 8 || view.getUint32(tail.length - 4, true) !== 0x31524150) throw new Error('parquet file invalid (footer != PAR1)');
  const length = view.getUint32(tail.length - 8, true);
  if (length > size - 8) throw new Error(`parquet metadata length ${length} exceeds available buffer ${size - 8}`);
  if (length + 8 <= tail.length) return tail.subarray(tail.length - 8 - length, tail.length - 8);
  const start = size - 8 - length;
  const head = new Uint8Array(await buffer.slice(start, tailStart));
  const out = new Uint8Array(length);
  out.set(head, 0);
  out.set(tail.subarray(0, tail.length - 8), head.length);
  return out;
}

/**
 * A min/max statistic of a plain signed integer column as hyparquet converts it (INT32 a number, INT64 a
 * bigint); undefined for any other column (its row groups are then never skipped by `findRows`).
 */
function plainInteger(bytes: Uint8Array, leaf: SchemaElement | undefined): number | bigint | undefined {
  if (!leaf || leaf.converted_type !== undefined || leaf.logical_type !== undefined) return undefined;
  // little-endian; a 32-bit one without a DataView per row group (a footer of thousands is searched cold)
  if (leaf.type === 'INT32' && bytes.length === 4) return bytes[0] | (bytes[1] << 8) | (bytes[2] << 16) | (bytes[3] << 24);
  if (leaf.type === 'INT64' && bytes.length === 8) return new DataView(bytes.buffer, bytes.byteOffset, 8).getBigInt64(0, true);
  return undefined;
}

/** A decoder's complaint in words (some throw plain strings). */
function problemOf(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}
