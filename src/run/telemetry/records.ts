// The record shapes of the eight telemetry streams under `dashboard/`, and their hourly partition keys.

export const PARTITIONED_STREAMS = ['gpu_util', 'engine_series', 'phases', 'trajectories', 'gpu_processes'] as const;
export const FLAT_STREAMS = ['metrics', 'topology', 'data_buffer'] as const;
export type PartitionedStream = (typeof PARTITIONED_STREAMS)[number];
export type FlatStream = (typeof FLAT_STREAMS)[number];
export type StreamName = PartitionedStream | FlatStream;

/** Phase reads look this far past the window's end: phases are filed by their END hour. */
export const PHASE_LOOKAHEAD_S = 14400;
/** Parsed hour blocks kept per partitioned stream. */
export const PARTITION_CACHE_BLOCKS = 24;
/** `t1` of a phase still running. */
export const OPEN_T1 = -1.0;
export const INITIALIZE_PHASE = 'initialize';

export interface RunMeta {
  run_name: string;
  start_ts: number;
  args: Record<string, unknown>;
  schema_version: number;
}

export type MetricValue = number | string | boolean;

export interface MetricsRecord {
  ts: number;
  step_key: string | null;
  step: number | null;
  metrics: Record<string, MetricValue>;
}

export interface EngineInfo {
  addr: string;
  worker_type: string;
  engine_rank: number;
  gpus: [string, number][];
  gpu_uuids: (string | null)[];
}

export interface TopologySnapshot {
  ts: number;
  engines: EngineInfo[];
}

/** Snapshot N holds on `[t0, t1)`; the last window has `t1 = null`. */
export interface TopologyWindow {
  t0: number;
  t1: number | null;
  engines: EngineInfo[];
}

export type PhaseRole = 'train' | 'rollout_manager' | string;

export interface PhaseEvent {
  name: string;
  t0: number;
  /** `-1.0` (OPEN_T1) while the interval is still running. */
  t1: number;
  node: string;
  gpus: number[];
  rank: number;
  role: PhaseRole;
}

export interface GpuSample {
  ts: number;
  node: string;
  gpu: number;
  util: number;
  mem_mb: number;
  power_w: number;
}

export interface EngineSample {
  ts: number;
  addr: string;
  metric: string;
  labels: Record<string, string>;
  value: number;
}

export type TrajectoryKind = 'attempt_start' | 'gen_start' | 'gen_end' | 'tool_start' | 'tool_end' | 'attempt_end';

export interface TrajectoryEvent {
  ts: number;
  kind: TrajectoryKind | string;
  sample_index: number;
  group_index: number;
  turn: number;
  weight_version: string;
  detail: string;
}

export interface GpuProcessSample {
  ts: number;
  node: string;
  gpu: number;
  pid: number;
  name: string;
  mem_mb: number;
}

export interface DataBufferSample {
  ts: number;
  length: number;
}

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

/** UTC hour key `YYYYMMDD_HH` of an epoch-seconds timestamp. */
export function hourKey(ts: number): string {
  const d = new Date(Math.floor(ts) * 1000);
  const p = (n: number, w = 2): string => String(n).padStart(w, '0');
  return `${p(d.getUTCFullYear(), 4)}${p(d.getUTCMonth() + 1)}${p(d.getUTCDate())}_${p(d.getUTCHours())}`;
}

/** Start (epoch seconds) of the hour named by a `YYYYMMDD_HH` key, or null if the key is not one. */
export function hourStart(key: string): number | null {
  const m = /^(\d{4})(\d{2})(\d{2})_(\d{2})$/.exec(key);
  if (!m) return null;
  return Date.UTC(+m[1], +m[2] - 1, +m[3], +m[4]) / 1000;
}

/** Partition timestamp: `t1` for a closed phase, `t0` for an open marker, `ts` otherwise. */
export function phasePartitionTs(e: Pick<PhaseEvent, 't0' | 't1'>): number {
  return e.t1 === OPEN_T1 ? e.t0 : e.t1;
}

