// `/api/timeline/*` and `/api/rlsight/lanes`: lanes, topology, phases, GPU and engine series, heatmap frames, fleet, outliers, bubbles.

/** One GPU lane; `index` is its position in lane order (node in cluster order, then gpu). */
export interface Lane {
  node: string;
  gpu: number;
  index: number;
}

/** A lane with what runs on it (`/api/rlsight/lanes`), joined by the server so the app labels lanes without deriving it per draw. */
export interface LaneDetail extends Lane {
  ranks: number[];
  engine_addrs: string[];
  roles: string[];
}

export interface LanesAnswer {
  lanes: LaneDetail[];
}

/** One SGLang engine of a topology snapshot and the GPUs it holds. */
export interface Engine {
  addr: string;
  worker_type: string;
  engine_rank: number;
  gpus: [string, number][];
  gpu_uuids: (string | null)[];
}

/** Snapshot N holds on `[t0, t1)`; the last window has `t1 = null`. */
export interface TopologyWindow {
  t0: number;
  t1: number | null;
  engines: Engine[];
}

export interface Topology {
  /** In cluster order (node naturally, then GPU). */
  lanes: Lane[];
  windows: TopologyWindow[];
}

/** One phase interval on one lane. */
export interface Phase {
  name: string;
  t0: number;
  t1: number;
  node: string;
  gpu: number;
  rank: number;
  /** `train`, `rollout_manager`, or `derived` for the synthesized `initialize` band. */
  role: string;
  /** Its open marker was never closed (its trainer was killed): it ends where its rank's next phase began. */
  unfinished?: true;
  /**
   * Its open marker has no end yet and no phase of its rank follows: it is drawn to the data edge (`t1`, which
   * may equal `t0`): still running, or its trainer stopped with nothing written after it.
   */
  open?: true;
}

export interface PhasesAnswer {
  phases: Phase[];
}

/** One lane's NVML samples as parallel columns. */
/** Arrays of numbers on the wire (JSON arrays; typed arrays where the answer is built or decoded). */
export type NumberColumn = ArrayLike<number>;

export interface GpuSeries {
  ts: NumberColumn;
  util: NumberColumn;
  mem_mb: NumberColumn;
  power_w: NumberColumn;
}

/** Keyed by `"<node>:<gpu>"`. */
export interface GpuAnswer {
  lanes: Record<string, GpuSeries>;
}

export interface GpuProcess {
  ts: number;
  node: string;
  gpu: number;
  pid: number;
  name: string;
  mem_mb: number;
}

export interface GpuProcessesAnswer {
  processes: GpuProcess[];
}

export type HeatmapRow =
  | { node: string; gpu: number; index: number; roles: string[] }
  | { sample_index: number; group_index: number }
  /** A density row (lifecycle with `max_rows`): `count` consecutive requests, by first event time, drawn as one. */
  | { first_sample: number; last_sample: number; count: number; t0: number; t1: number };

/** The JSON header of a heatmap frame (`[u32 LE header length][header][u8 rows × x_buckets]`), in the reference's key order. */
/**
 * How much of a whole-window answer's telemetry was read: present only on a partial answer, given while the
 * server still reads the run's history (the warm-up). A complete answer has no `coverage`.
 */
export interface Coverage {
  /** Hours of the window read, of all it overlaps. */
  hours_done: number;
  hours_total: number;
  /** The stretches of the window not read yet (`[t0, t1]`, ascending): the answer is empty there. */
  unread: [number, number][];
}

export interface HeatmapHeader {
  rows: HeatmapRow[];
  /** Lifecycle only: trajectories before the row cap. */
  rows_total?: number;
  x_buckets: number;
  t0: number;
  t1: number;
  metric: string;
  scale: { max: number } | null;
  palette: string[] | null;
  coverage?: Coverage;
}

export interface FleetBand {
  p10: (number | null)[];
  p50: (number | null)[];
  p90: (number | null)[];
  min: (number | null)[];
}

export interface Fleet {
  t0: number;
  t1: number;
  x_buckets: number;
  /** Lanes in the lane index (the composition's denominator). */
  lanes: number;
  palette: string[];
  composition: Record<string, number[]>;
  band: FleetBand;
  coverage?: Coverage;
}

export interface Outlier {
  node: string;
  gpu: number;
  score: number;
  /** `start_lag` only: the lane is an outlier against its peers' spread in most steps (a straggler), not just behind the median. */
  straggler?: boolean;
}

export interface OutliersAnswer {
  outliers: Outlier[];
  coverage?: Coverage;
}

/** One engine series (one engine, or one DP rank of it). */
export interface EngineSeries {
  addr: string;
  labels: Record<string, string>;
  ts: number[];
  /** NaN and ±Infinity are held as null in JSON: see `nonfinite`. */
  value: number[];
  /**
   * rlsight's own: the points scraped as NaN or ±Infinity, by their index in `value`, with the value as
   * Python writes it (as `MetricSeries.nonfinite`). Absent when every point is finite.
   */
  nonfinite?: [number, 'NaN' | 'Infinity' | '-Infinity'][];
}

export interface EngineSeriesAnswer {
  series: EngineSeries[];
  coverage?: Coverage;
}

/** Per rollout step: how long it took and what fraction of it training waited. */
export interface Bubble {
  step: number | null;
  /** Wall-clock time the step's metrics were logged (the end of the step). */
  ts: number;
  step_time: number | null;
  wait_ratio: number | null;
}

export interface BubblesAnswer {
  bubbles: Bubble[];
}
