// The record shapes of the eight telemetry streams under `dashboard/`, and their hourly partition keys.

export { FLAT_STREAMS, OPEN_T1, PARTITIONED_STREAMS, hourKey, hourStart, phasePartitionTs } from '../../formats/dashboard/layout.ts';
export type { FlatStream, PartitionedStream, StreamName } from '../../formats/dashboard/layout.ts';
export type * from '../../formats/dashboard/records.ts';

/** Phase reads look this far past the window's end: phases are filed by their END hour. */
export const PHASE_LOOKAHEAD_S = 14400;
/** Parsed hour blocks kept per partitioned stream. */
export const PARTITION_CACHE_BLOCKS = 24;
export const INITIALIZE_PHASE = 'initialize';

/** Snapshot N holds on `[t0, t1)`; the last window has `t1 = null` (the shape the app is served). */
export type { TopologyWindow } from '../../wire/timeline.ts';

/** One GPU lane as the lane index serves it; `index` is its position in `(node, gpu)` order. */
export interface LaneEntry {
  node: string;
  gpu: number;
  ranks: number[];
  engine_addrs: string[];
  roles: string[];
  index: number;
}

/** A complete line that could not be read; the line is skipped, never fatal. */
export interface TelemetryWarning {
  /** Path relative to the `dashboard/` directory, e.g. `gpu_util/20250821_18.jsonl`. */
  file: string;
  /** 1-based line number within the file. */
  line: number;
  message: string;
}

/** A warning as a run states it, naming the file relative to the run: `dashboard/metrics.jsonl:3: not JSON`. */
export function telemetryWarningText(w: TelemetryWarning): string {
  return `dashboard/${w.file}${w.line > 0 ? `:${w.line}` : ''}: ${w.message}`;
}

/** The streams the warm-up reads ahead (a partial answer names those it reads). */
export type WarmedStream = 'gpu_util' | 'engine_series' | 'phases';

/** A partial answer's way to the hours read so far: what they cover, and `run(fn)` over a view that sees only them. */
export interface FoldedView<V> {
  coverage: { hours_done: number; hours_total: number; unread: [number, number][] };
  run<T>(fn: (view: V) => T): T;
}
