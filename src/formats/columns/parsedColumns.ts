// One partition file's parse as a parse thread hands it over and the column files (`.cols.rlc`) persist it:
// each stream's columns with the id tables they refer to, where the parse stopped and what it skipped.
import type { EngineSeriesColumns } from './engineSeriesBlock.ts';
import type { GpuUtilColumns } from './gpuUtilBlock.ts';
import type { PhaseColumns } from './phaseBlock.ts';

export type ParsedColumns =
  | { stream: 'gpu_util'; columns: GpuUtilColumns; lanes: [string, number][] }
  | { stream: 'engine_series'; columns: EngineSeriesColumns; series: [string, string, string][] }
  | { stream: 'phases'; columns: PhaseColumns; strings: string[] }
  | { stream: 'trajectories'; rows: { ts: number }[]; tsMin: number; tsMax: number }
  | { stream: 'gpu_processes'; rows: { ts: number }[]; tsMin: number; tsMax: number };

export interface ParseResult {
  data: ParsedColumns;
  /** Where the next read starts, and lines consumed. */
  offset: number;
  lines: number;
  /** The view actually applied (null when the file had to be read whole). */
  view: string | null;
  warnings: [number, string][];
  /** The parse thread persisted the parse itself (a warm-up parse): `data` is empty. */
  persisted?: boolean;
  /** How long a warm-up parse paused for requests, ms (absent: it did not pause). */
  pausedMs?: number;
}
