// The record of each telemetry stream, field for field as miles' dataclasses declare them (the key
// order of every line on disk).
import type { StreamName } from './layout.ts';
import type { Engine, GpuProcess } from '../../wire/timeline.ts';

/** `meta.json`. */
export interface RunMeta {
  run_name: string;
  start_ts: number;
  args: Record<string, unknown>;
  schema_version: number;
}

export type MetricValue = number | string | boolean;

/** One `log()` call: the scalar metrics logged against one step key. */
export interface MetricsRecord {
  ts: number;
  step_key: string | null;
  step: number | null;
  metrics: Record<string, MetricValue>;
}

/** One engine of a topology record, as the app is served it (`gpus`: `[node, gpu]` of every GPU of every member node). */
export type EngineInfo = Engine;

/** The full engine topology; snapshot N holds until snapshot N+1. */
export interface TopologySnapshot {
  ts: number;
  engines: EngineInfo[];
}

export type PhaseRole = 'train' | 'rollout_manager' | string;

/** One timed interval on one process. */
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

/** One SMI reading of one GPU. */
export interface GpuSample {
  ts: number;
  node: string;
  gpu: number;
  util: number;
  mem_mb: number;
  power_w: number;
}

/** One scraped SGLang metric value; every sample of one scrape tick has the same `ts`. */
export interface EngineSample {
  ts: number;
  addr: string;
  metric: string;
  /** Only `engine_type` and `dp_rank` are kept. */
  labels: Record<string, string>;
  value: number;
}

export type TrajectoryKind = 'attempt_start' | 'gen_start' | 'gen_end' | 'tool_start' | 'tool_end' | 'attempt_end';
export const TRAJECTORY_KINDS: readonly TrajectoryKind[] = ['attempt_start', 'gen_start', 'gen_end', 'tool_start', 'tool_end', 'attempt_end'];

/** One lifecycle boundary of one sample. */
export interface TrajectoryEvent {
  ts: number;
  kind: TrajectoryKind | string;
  sample_index: number;
  group_index: number;
  turn: number;
  weight_version: string;
  detail: string;
}

/** VRAM one process holds on one GPU (as the app is served it). */
export type GpuProcessSample = GpuProcess;

export interface DataBufferSample {
  ts: number;
  length: number;
}

export interface StreamRecord {
  metrics: MetricsRecord;
  topology: TopologySnapshot;
  data_buffer: DataBufferSample;
  gpu_util: GpuSample;
  engine_series: EngineSample;
  phases: PhaseEvent;
  trajectories: TrajectoryEvent;
  gpu_processes: GpuProcessSample;
}

/** Every stream's fields in declaration order: the key order of its lines. */
export const FIELDS = {
  metrics: ['ts', 'step_key', 'step', 'metrics'],
  topology: ['ts', 'engines'],
  data_buffer: ['ts', 'length'],
  gpu_util: ['ts', 'node', 'gpu', 'util', 'mem_mb', 'power_w'],
  engine_series: ['ts', 'addr', 'metric', 'labels', 'value'],
  phases: ['name', 't0', 't1', 'node', 'gpus', 'rank', 'role'],
  trajectories: ['ts', 'kind', 'sample_index', 'group_index', 'turn', 'weight_version', 'detail'],
  gpu_processes: ['ts', 'node', 'gpu', 'pid', 'name', 'mem_mb'],
} as const satisfies { [S in StreamName]: readonly (keyof StreamRecord[S])[] };

export const ENGINE_INFO_FIELDS = ['addr', 'worker_type', 'engine_rank', 'gpus', 'gpu_uuids'] as const;
export const META_FIELDS = ['run_name', 'start_ts', 'args', 'schema_version'] as const;
/** The only SGLang labels an engine sample keeps. */
export const KEPT_ENGINE_LABELS = ['engine_type', 'dp_rank'] as const;

/** The SGLang metrics miles scrapes by default, as stored (`:` → `_`), in its order. */
export const DEFAULT_ENGINE_METRICS: readonly string[] = [
  'sglang_num_running_reqs',
  'sglang_num_queue_reqs',
  'sglang_gen_throughput',
  'sglang_token_usage',
  'sglang_cache_hit_rate',
  'sglang_num_prefill_prealloc_queue_reqs',
  'sglang_num_prefill_inflight_queue_reqs',
  'sglang_num_decode_prealloc_queue_reqs',
  'sglang_num_decode_transfer_queue_reqs',
  'sglang_kv_transfer_speed_gb_s',
  'sglang_kv_transfer_latency_ms',
  'sglang_prompt_tokens_total',
  'sglang_generation_tokens_total',
  'sglang_num_requests_total',
  'sglang_num_aborted_requests_total',
  'sglang_time_to_first_token_seconds_sum',
  'sglang_time_to_first_token_seconds_count',
  'sglang_inter_token_latency_seconds_sum',
  'sglang_inter_token_latency_seconds_count',
  'sglang_time_per_output_token_seconds_sum',
  'sglang_time_per_output_token_seconds_count',
  'sglang_e2e_request_latency_seconds_sum',
  'sglang_e2e_request_latency_seconds_count',
];
