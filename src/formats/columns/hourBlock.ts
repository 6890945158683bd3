// What a partition block is to the reader that fills it: its bounds and residency, and how one stream's
// blocks are made, parsed (whole or a view), adopted from a parse thread and exported for the partition cache.
import type { BadLine } from './lineScan.ts';
import type { ParsedColumns } from './parsedColumns.ts';
import type { TimeBounds } from './timeBounds.ts';

/** What every block type offers the reader. */
export interface HourBlock {
  readonly key: string;
  readonly lo: number;
  readonly hi: number;
  readonly length: number;
  tsMin: number;
  tsMax: number;
  /** The view a selectively read block holds (null = every row of the file). */
  view?: string | null;
  trim(): void;
  bytesResident(): number;
}

/** How one stream's blocks are made and filled. */
export interface BlockKind<B extends HourBlock> {
  /** Typical bytes per line, to size a block before a cold fill. */
  bytesPerRow: number;
  create(key: string, lo: number, hi: number, rowsHint: number): B;
  /** Parses complete lines `buf[start, end)` into `block`; returns the number of lines consumed. */
  parse(buf: Uint8Array, start: number, end: number, block: B, firstLine: number, bad: BadLine): number;
  /**
   * Optional selective parse for a named subset (a "view", e.g. some engine metrics): parses only the
   * lines of `buf[start, end)` the view selects. Returns the number of lines walked (0 when it does not
   * count them), or -1 when the bytes do not allow it (the reader then falls back to the whole block).
   */
  parseView?(view: string, buf: Uint8Array, start: number, end: number, block: B, firstLine: number, bad: BadLine, bounds?: TimeBounds): number;
  /**
   * `parseView` takes `bounds`: it may leave out the lines whose stamp lies outside them (a window's edge
   * hours are then read for the window only), keeping every row of the view inside them.
   */
  boundedViews?: boolean;
  /** A block over columns another thread parsed (see parseJob.ts); needed to share cold parses with a pool. */
  adopt?(key: string, lo: number, hi: number, data: ParsedColumns): B;
  /** One block of the rows of `parts` in order: pieces of one file parsed on several threads at once. */
  join?(key: string, lo: number, hi: number, parts: readonly B[]): B;
  /** A whole block as the columns a parse thread would hand over (what the partition cache persists). */
  export?(block: B): ParsedColumns;
  /**
   * Distinct views of one file read selectively before a further one reads the whole file instead
   * (which then serves every view): a few asks are cheaper as views, many are not. Default: no limit.
   */
  viewsBeforeWhole?: number;
}
