// The columnar streams' (engine_series, phases) blocks, parse and hand-over over one id table: the one kind
// the reader's partitions, the parse threads' results and the collector's hour columns all use.
import { EngineSeriesBlock, EngineSeriesParser } from './engineSeriesBlock.ts';
import type { EngineSeriesTable, StringTable } from './interning.ts';
import type { BlockKind, HourBlock } from './hourBlock.ts';
import type { ParsedColumns } from './parsedColumns.ts';
import { PhaseBlock, PhaseParser } from './phaseBlock.ts';

/** The parsed columns of one stream (a worker result always matches the reader that asked). */
export function parsedAs<S extends ParsedColumns['stream']>(d: ParsedColumns, stream: S): Extract<ParsedColumns, { stream: S }> {
  if (d.stream !== stream) throw new Error(`parse worker answered ${d.stream} for ${stream}`);
  return d as Extract<ParsedColumns, { stream: S }>;
}

/** The columnar streams' blocks, parse and hand-over over one id table: shared by the reader and the collector. */
export type ColumnsKind<B extends HourBlock> = Required<Pick<BlockKind<B>, 'create' | 'parse' | 'adopt' | 'export'>>;

export function engineSeriesColumnsKind(table: EngineSeriesTable): ColumnsKind<EngineSeriesBlock> {
  const parser = new EngineSeriesParser(table);
  return {
    create: (k, lo, hi, n) => new EngineSeriesBlock(k, lo, hi, n),
    parse: (b, s, e, blk, l, bad) => parser.parse(b, s, e, blk, l, bad),
    adopt: (k, lo, hi, d) => EngineSeriesBlock.adopt(k, lo, hi, parsedAs(d, 'engine_series').columns, parsedAs(d, 'engine_series').series.map(([a, m, l]) => table.id(a, m, l))),
    export: (b) => ({ stream: 'engine_series', columns: b.columns(), series: table.rows() }),
  };
}

export function phaseColumnsKind(strings: StringTable): ColumnsKind<PhaseBlock> {
  const parser = new PhaseParser(strings);
  return {
    create: (k, lo, hi, n) => new PhaseBlock(k, lo, hi, strings, n),
    parse: (b, s, e, blk, l, bad) => parser.parse(b, s, e, blk, l, bad),
    adopt: (k, lo, hi, d) => PhaseBlock.adopt(k, lo, hi, strings, parsedAs(d, 'phases').columns, parsedAs(d, 'phases').strings.map((x) => strings.id(x))),
    export: (b) => ({ stream: 'phases', columns: b.columns(), strings: Array.from({ length: strings.size }, (_, i) => strings.str(i)) }),
  };
}
