// The five hourly streams as partition readers: each declares its block type, parser and how a block
// parsed on another thread joins this store's id tables.
import { EngineSeriesBlock, EngineSeriesParser } from './engineSeriesBlock.ts';
import { GpuUtilBlock, GpuUtilParser } from './gpuUtilBlock.ts';
import type { EngineSeriesTable, LaneTable, StringTable } from './interning.ts';
import type { TelemetryIo } from './io.ts';
import type { BlockKind, HourBlock } from './partitionBlock.ts';
import { PartitionReader } from './partitionReader.ts';
import type { ParsedColumns } from './parseJob.ts';
import { PhaseBlock, PhaseParser } from './phaseBlock.ts';
import type { GpuProcessSample, TrajectoryEvent } from './records.ts';
import { RecordBlock, gpuProcessOf, parseRecordLines, trajectoryEventOf } from './recordBlock.ts';
import type { RecordValidator } from './recordBlock.ts';
import type { WarnLine } from './flatStreams.ts';

/** The id tables every block of a store shares. */
export interface StoreTables {
  readonly lanes: LaneTable;
  readonly engineSeries: EngineSeriesTable;
  readonly strings: StringTable;
}

export interface PartitionReaders {
  gpu_util: PartitionReader<GpuUtilBlock>;
  engine_series: PartitionReader<EngineSeriesBlock>;
  phases: PartitionReader<PhaseBlock>;
  trajectories: PartitionReader<RecordBlock<TrajectoryEvent>>;
  gpu_processes: PartitionReader<RecordBlock<GpuProcessSample>>;
}

/** One reader per partitioned stream of the `dashboard/` directory `dir`, each keeping `capacity` blocks. */
export function partitionReaders(dir: string, tables: StoreTables, io: TelemetryIo, warn: WarnLine, capacity: number): PartitionReaders {
  const gpuParser = new GpuUtilParser(tables.lanes);
  const engineParser = new EngineSeriesParser(tables.engineSeries);
  // the low-volume streams (trajectories, gpu_processes) are kept as validated records
  const records = <T extends { ts: number }>(stream: 'trajectories' | 'gpu_processes', bytesPerRow: number, validate: RecordValidator<T>): PartitionReader<RecordBlock<T>> =>
    new PartitionReader<RecordBlock<T>>(
      dir,
      stream,
      {
        bytesPerRow,
        create: (k, lo, hi) => new RecordBlock<T>(k, lo, hi),
        parse: (b, s, e, blk, l, bad) => parseRecordLines(validate, b, s, e, blk, l, bad),
        adopt: (k, lo, hi, d) => RecordBlock.adopt<T>(k, lo, hi, as(d, stream).rows as T[]),
      },
      warn,
      capacity,
      io,
    );
  return {
    gpu_util: new PartitionReader<GpuUtilBlock>(
      dir,
      'gpu_util',
      {
        bytesPerRow: 80,
        // a lane view costs about half a whole parse: a second distinct selection reads the hour whole
        viewsBeforeWhole: 1,
        create: (k, lo, hi, n) => new GpuUtilBlock(k, lo, hi, n),
        parse: (b, s, e, blk, l, bad) => gpuParser.parse(b, s, e, blk, l, bad),
        parseView: (view, b, s, e, blk, l, bad) => gpuParser.parseView(view, b, s, e, blk, l, bad),
        adopt: (k, lo, hi, d) => GpuUtilBlock.adopt(k, lo, hi, as(d, 'gpu_util').columns, as(d, 'gpu_util').lanes.map(([n, g]) => tables.lanes.id(n, g))),
        export: (b) => ({ stream: 'gpu_util', columns: b.columns(), lanes: tables.lanes.places() }),
      },
      warn,
      capacity,
      io,
    ),
    engine_series: new PartitionReader<EngineSeriesBlock>(
      dir,
      'engine_series',
      {
        bytesPerRow: 150,
        // a metric view costs about a fifth of a whole parse: the fourth distinct ask reads the hour whole
        viewsBeforeWhole: 3,
        ...engineSeriesColumnsKind(tables.engineSeries),
        parseView: (view, b, s, e, blk) => engineParser.parseView(view, b, s, e, blk),
      },
      warn,
      capacity,
      io,
    ),
    phases: new PartitionReader<PhaseBlock>(
      dir,
      'phases',
      {
        bytesPerRow: 110,
        ...phaseColumnsKind(tables.strings),
      },
      warn,
      capacity,
      io,
    ),
    trajectories: records('trajectories', 120, trajectoryEventOf),
    gpu_processes: records('gpu_processes', 100, gpuProcessOf),
  };
}

/** The parsed columns of one stream (a worker result always matches the reader that asked). */
function as<S extends ParsedColumns['stream']>(d: ParsedColumns, stream: S): Extract<ParsedColumns, { stream: S }> {
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
    adopt: (k, lo, hi, d) => EngineSeriesBlock.adopt(k, lo, hi, as(d, 'engine_series').columns, as(d, 'engine_series').series.map(([a, m, l]) => table.id(a, m, l))),
    export: (b) => ({ stream: 'engine_series', columns: b.columns(), series: table.rows() }),
  };
}

export function phaseColumnsKind(strings: StringTable): ColumnsKind<PhaseBlock> {
  const parser = new PhaseParser(strings);
  return {
    create: (k, lo, hi, n) => new PhaseBlock(k, lo, hi, strings, n),
    parse: (b, s, e, blk, l, bad) => parser.parse(b, s, e, blk, l, bad),
    adopt: (k, lo, hi, d) => PhaseBlock.adopt(k, lo, hi, strings, as(d, 'phases').columns, as(d, 'phases').strings.map((x) => strings.id(x))),
    export: (b) => ({ stream: 'phases', columns: b.columns(), strings: Array.from({ length: strings.size }, (_, i) => strings.str(i)) }),
  };
}
