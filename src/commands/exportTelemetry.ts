// `rlsight export telemetry DIR --format parquet --out DIR2`: every telemetry stream as
// Hive-partitioned Parquet (`stream=gpu_util/hour=20250821_18/part-0.parquet`; single-file streams under
// `hour=all`), typed columns, zstd, one hour in memory at a time — for DuckDB, Spark or Trino when one
// machine's viewer is not the tool. Lists (a phase's GPUs, labels, a metrics record's values) are JSON text.
import { zstdCompressor } from '../formats/zstd.ts';
import { mkdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parquetWriteFile } from 'hyparquet-writer';
import { openTelemetry } from '../run/open.ts';
import { realpathOfFuture } from '../formats/fileAccess.ts';
import { CommandUsageError, incompleteness, namesIn, outPath, runDirArgs } from './common.ts';
import { isDirectory, namesDumpFiles } from './runPaths.ts';
import type { ExportKind } from './common.ts';


type ParquetType = 'DOUBLE' | 'INT32' | 'STRING';
interface Column {
  name: string;
  type: ParquetType;
  data: ArrayLike<number | string | null>;
}


const isInt32 = (xs: ArrayLike<number>): boolean => {
  for (let i = 0; i < xs.length; i++) if (!Number.isInteger(xs[i]) || xs[i] > 2147483647 || xs[i] < -2147483648) return false;
  return true;
};
const numbers = (n: number, at: (i: number) => number): Float64Array => Float64Array.from({ length: n }, (_, i) => at(i));
/** An integer-valued column as INT32 when every value fits, else DOUBLE (values are never altered). */
const intOrDouble = (name: string, xs: Float64Array): Column => (isInt32(xs) ? { name, type: 'INT32', data: Int32Array.from(xs) } : { name, type: 'DOUBLE', data: xs });

/** Each partition of each stream as columns, one at a time (the store keeps only its memory budget resident). */
function* partitions(store: ReturnType<typeof openTelemetry>): Generator<{ stream: string; hour: string; columns: Column[] }> {
  const p = store.partitions;
  for (const f of p.gpu_util.files()) {
    const b = p.gpu_util.block(f);
    const n = b.length;
    yield {
      stream: 'gpu_util',
      hour: f.key,
      columns: [
        { name: 'ts', type: 'DOUBLE', data: b.ts },
        { name: 'node', type: 'STRING', data: Array.from(b.lane, (l) => store.lanes.node(l)) },
        { name: 'gpu', type: 'INT32', data: Int32Array.from(b.lane, (l) => store.lanes.gpu(l)) },
        intOrDouble('util', Float64Array.from(b.util)),
        intOrDouble('mem_mb', numbers(n, (i) => b.memMb(i))),
        intOrDouble('power_w', numbers(n, (i) => b.powerW(i))),
      ],
    };
  }
  for (const f of p.engine_series.files()) {
    const b = p.engine_series.block(f);
    const key = (i: number) => store.engineSeries.key(b.series[i]);
    yield {
      stream: 'engine_series',
      hour: f.key,
      columns: [
        { name: 'ts', type: 'DOUBLE', data: b.ts },
        { name: 'addr', type: 'STRING', data: Array.from(b.series, (_, i) => key(i).addr) },
        { name: 'metric', type: 'STRING', data: Array.from(b.series, (_, i) => key(i).metric) },
        { name: 'labels', type: 'STRING', data: Array.from(b.series, (_, i) => key(i).labelsJson) },
        { name: 'value', type: 'DOUBLE', data: b.value },
      ],
    };
  }
  for (const f of p.phases.files()) {
    const b = p.phases.block(f);
    const s = store.strings;
    const starts = b.gpuStart;
    yield {
      stream: 'phases',
      hour: f.key,
      columns: [
        { name: 'name', type: 'STRING', data: Array.from(b.name, (id) => s.str(id)) },
        { name: 't0', type: 'DOUBLE', data: b.t0 },
        { name: 't1', type: 'DOUBLE', data: b.t1 },
        { name: 'node', type: 'STRING', data: Array.from(b.node, (id) => s.str(id)) },
        { name: 'gpus', type: 'STRING', data: Array.from(b.rank, (_, i) => JSON.stringify(Array.from(b.gpuList.subarray(starts[i], starts[i + 1])))) },
        { name: 'rank', type: 'INT32', data: b.rank },
        { name: 'role', type: 'STRING', data: Array.from(b.role, (id) => s.str(id)) },
      ],
    };
  }
  const records = <T extends Record<string, unknown>>(stream: string, hour: string, rows: readonly T[], types: Record<keyof T & string, ParquetType>) => ({
    stream,
    hour,
    columns: Object.entries(types).map(([name, type]) => ({
      name,
      type,
      data: type === 'STRING' ? rows.map((r) => (typeof r[name] === 'string' ? (r[name] as string) : JSON.stringify(r[name]))) : type === 'INT32' ? Int32Array.from(rows, (r) => r[name] as number) : Float64Array.from(rows, (r) => (r[name] as number | null) ?? NaN),
    })) as Column[],
  });
  for (const f of p.trajectories.files()) {
    const rows = p.trajectories.block(f).rows;
    yield records('trajectories', f.key, rows as never, { ts: 'DOUBLE', kind: 'STRING', sample_index: 'INT32', group_index: 'INT32', turn: 'INT32', weight_version: 'STRING', detail: 'STRING' } as never);
  }
  for (const f of p.gpu_processes.files()) {
    const rows = p.gpu_processes.block(f).rows;
    yield records('gpu_processes', f.key, rows as never, { ts: 'DOUBLE', node: 'STRING', gpu: 'INT32', pid: 'INT32', name: 'STRING', mem_mb: 'DOUBLE' } as never);
  }
  yield records('metrics', 'all', store.metricsRecords() as never, { ts: 'DOUBLE', step_key: 'STRING', step: 'DOUBLE', metrics: 'STRING' } as never);
  yield records('topology', 'all', store.topologySnapshots() as never, { ts: 'DOUBLE', engines: 'STRING' } as never);
  yield records('data_buffer', 'all', store.dataBufferSamples() as never, { ts: 'DOUBLE', length: 'INT32' } as never);
}

/**
 * Writes the run's telemetry under `outDir`; returns the files and rows written per stream. `skipped` gets
 * the lines that could not be read (`dashboard/FILE:LINE: why`; `dashboard/FILE: why` for a whole hour partition).
 */
export async function writeTelemetryParquet(dashboardDir: string, outDir: string, skipped: string[] = []): Promise<Record<string, { files: number; rows: number }>> {
  const compress = await zstdCompressor();
  const store = openTelemetry(dashboardDir);
  const out: Record<string, { files: number; rows: number }> = {};
  try {
    for (const part of partitions(store)) {
      const rows = part.columns[0].data.length;
      if (rows === 0) continue;
      const dir = join(outDir, `stream=${part.stream}`, `hour=${part.hour}`);
      mkdirSync(dir, { recursive: true });
      const path = join(dir, 'part-0.parquet');
      parquetWriteFile({
        filename: `${path}.partial`,
        columnData: part.columns.map((c) => ({ name: c.name, data: c.data as never, type: c.type, nullable: false })),
        codec: 'ZSTD',
        compressors: { ZSTD: compress },
      });
      renameSync(`${path}.partial`, path);
      const s = (out[part.stream] ??= { files: 0, rows: 0 });
      s.files++;
      s.rows += rows;
    }
    // named as the run names it everywhere else: an hour partition (line 0) without a line number
    for (const w of store.warnings()) skipped.push(`dashboard/${w.file}${w.line > 0 ? `:${w.line}` : ''}: ${w.message}`);
  } finally {
    store.close();
  }
  return out;
}

export const telemetryExport: ExportKind = {
  usage: 'telemetry DIR --format parquet --out DIR2   every telemetry stream as Hive-partitioned Parquet (zstd)',
  async run(argv) {
    const { run, values: v } = runDirArgs(argv, 'export telemetry', { format: { type: 'string' }, out: { type: 'string' } });
    const dir = resolve(run.dir);
    if (!isDirectory(dir)) {
      if (namesDumpFiles(run.dir)) throw new CommandUsageError(`${run.label}: slime dump files (FILE.pt|GLOB) hold no telemetry; export telemetry reads a run directory's dashboard/`);
      throw new CommandUsageError(`${run.label}: no such directory: ${run.dir}`);
    }
    if (!isDirectory(join(dir, 'dashboard'))) throw new CommandUsageError(`${run.label}: no telemetry: ${run.dir} holds no dashboard/ folder`);
    const out = outPath(v.out, run, 'dir');
    if ((v.format ?? 'parquet') !== 'parquet') throw new CommandUsageError(`--format: expected parquet, got '${v.format}'`);
    // a reader globbing DIR2 sees a whole export or none: written beside it, then moved into place; an earlier
    // export left there would mix its hours with this one's
    if (namesIn(out).length > 0) throw new CommandUsageError(`--out: ${v.out} is not empty; give a new or empty directory`);
    const partial = `${out}.partial`;
    rmSync(partial, { recursive: true, force: true });
    let written: Awaited<ReturnType<typeof writeTelemetryParquet>>;
    const skipped: string[] = [];
    try {
      written = await writeTelemetryParquet(join(dir, 'dashboard'), partial, skipped);
      mkdirSync(partial, { recursive: true });
      // onto what `--out` resolves to: a directory cannot be moved over a link to one
      renameSync(partial, realpathOfFuture(out));
    } catch (e) {
      rmSync(partial, { recursive: true, force: true });
      throw e;
    }
    for (const [stream, s] of Object.entries(written)) console.log(`${stream}: ${s.rows} rows in ${s.files} file(s)`);
    console.log(`wrote ${out}`);
    return incompleteness(null, skipped);
  },
};
