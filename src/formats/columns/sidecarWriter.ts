// Everything rlsight's writers (the collector, the synthetic run) write beside the partitions they append to (files the reference never
// reads): the gpu_util rollups and the parsed columns of engine_series and phases hours. Told of every
// append, written after each flush (the growing hour at most once a minute) and at the final flush.
import { COLUMNS_STREAMS, isColumnsStream, partitionKeyOf, type ColumnsStream } from '../dashboard/index.ts';
import { CollectorGpuRollups } from './gpuRollupWriter.ts';
import { CollectorHourColumns, type ColumnsFs } from './hourColumnsWriter.ts';

export class CollectorSidecars {
  readonly rollups: CollectorGpuRollups;
  readonly columns: Record<ColumnsStream, CollectorHourColumns>;

  constructor(fs: ColumnsFs, now: () => number) {
    this.rollups = new CollectorGpuRollups(fs, now);
    this.columns = Object.fromEntries(COLUMNS_STREAMS.map((s) => [s, new CollectorHourColumns(s, fs, now)])) as Record<ColumnsStream, CollectorHourColumns>;
  }

  /** `data` (complete lines) was appended to `rel` (relative to the dashboard directory) at byte `start`; `file` is its identity. */
  appended(rel: string, start: number, data: Uint8Array, file: { ino: number; born: number } | null): void {
    const slash = rel.indexOf('/');
    if (slash < 0) return;
    const stream = rel.slice(0, slash);
    const key = partitionKeyOf(rel.slice(slash + 1));
    if (key === null) return;
    if (stream === 'gpu_util') this.rollups.appended(key, start, data, file);
    else if (isColumnsStream(stream)) this.columns[stream].appended(key, start, data, file);
  }

  /** Writes what changed (see `CollectorGpuRollups.write`, `CollectorHourColumns.write`). */
  write(final = false): void {
    this.rollups.write(final);
    for (const s of COLUMNS_STREAMS) this.columns[s].write(final);
  }
}
