// The five hourly streams as partition readers: each declares its block type, parser and how a block
// parsed on another thread joins this store's id tables.
import { type EngineSeriesBlock, EngineSeriesParser } from '../../formats/columns/engineSeriesBlock.ts';
import { GpuUtilBlock, GpuUtilParser } from '../../formats/columns/gpuUtilBlock.ts';
import type { EngineSeriesTable, LaneTable, StringTable } from '../../formats/columns/interning.ts';
import type { TelemetryIo } from './io.ts';
import { PartitionReader } from './partitionReader.ts';
import type { PhaseBlock } from '../../formats/columns/phaseBlock.ts';
import { engineSeriesColumnsKind, parsedAs, phaseColumnsKind } from '../../formats/columns/columnsKind.ts';
import type { GpuProcessSample, TrajectoryEvent } from './records.ts';
import { RecordBlock, gpuProcessOf, parseRecordLines, trajectoryEventOf } from '../../formats/columns/recordBlock.ts';
import type { RecordValidator } from '../../formats/columns/recordBlock.ts';
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
        adopt: (k, lo, hi, d) => RecordBlock.adopt<T>(k, lo, hi, parsedAs(d, stream).rows as T[]),
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
        parseView: (view, b, s, e, blk, l, bad, bounds) => gpuParser.parseView(view, b, s, e, blk, l, bad, bounds),
        boundedViews: true,
        adopt: (k, lo, hi, d) => GpuUtilBlock.adopt(k, lo, hi, parsedAs(d, 'gpu_util').columns, parsedAs(d, 'gpu_util').lanes.map(([n, g]) => tables.lanes.id(n, g))),
        join: (k, lo, hi, parts) => GpuUtilBlock.join(k, lo, hi, parts),
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
