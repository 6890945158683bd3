// Shapes of the API answers the app reads (see the server's routes); where the server's own type is the JSON, it is used as is.
import type { LocatedAdvisory } from '../src/queries/advisory.ts';
import type { Fleet } from '../src/queries/fleet.ts';
import type { HeatmapHeader } from '../src/queries/heatmap.ts';
import type { PhaseRow } from '../src/queries/phases.ts';
import type { TokenView } from '../src/queries/tokens.ts';
import type { MetaJson } from '../src/server/meta.ts';

export type Meta = MetaJson;

export interface Series {
  x: number[];
  y: (number | null)[];
  ts: number[];
}

export interface EngineSeries {
  addr: string;
  labels: Record<string, string>;
  ts: number[];
  value: (number | null)[];
}

export interface Lane {
  node: string;
  gpu: number;
  index: number;
}

export interface Engine {
  addr: string;
  worker_type?: string;
  engine_rank?: number;
  gpus: [string, number][];
}

export interface Topology {
  lanes: Lane[];
  windows: { t0: number; t1: number | null; engines: Engine[] }[];
}

export type Phase = PhaseRow;

export interface GpuSeries {
  ts: number[];
  util: number[];
  mem_mb: number[];
  power_w?: number[];
}

export type Advisory = LocatedAdvisory;

export interface Mfu {
  latest: number;
  mean: number;
  steps: number;
  peak: number | null;
}

export type { Fleet };

export interface Outlier {
  node: string;
  gpu: number;
  score: number;
}

export interface Bubble {
  step: number;
  ts: number;
  step_time: number | null;
  wait_ratio: number | null;
}

export type Cell = string | number | boolean | null;
export type Row = Record<string, Cell>;

export interface Table {
  rollout_id: number;
  evaluation: boolean;
  columns: string[];
  rows: Row[];
}

export interface Segment {
  kind: 'gen' | 'tool';
  t0: number | null;
  t1: number | null;
  turn: number;
  weight_version: string | null;
}

export interface Trajectory {
  sample_index: number;
  group_index: number;
  first_ts: number;
  last_ts: number;
  segments: Segment[];
  attempts: { t0: number; t1: number | null }[];
  status: string | null;
  versions: number[];
}

export interface Trajectories {
  lanes: Trajectory[];
  consume_ts: number | null;
  t0: number | null;
}

export interface ToolCall {
  id?: string;
  type?: string;
  function?: { name?: string; arguments?: unknown };
  name?: string;
  arguments?: unknown;
}

export interface Message {
  role: string;
  content: unknown;
  reasoning_content?: string | null;
  tool_calls?: ToolCall[] | null;
  name?: string | null;
  tool_call_id?: string | null;
}

export interface Conversation {
  sample_index: number;
  group_index: number;
  status: string | null;
  reward: number | null;
  prompt: unknown;
  messages: Message[];
}

export const TOKEN_STATS = [
  'lp_diff',
  'imp_ratio',
  'entropy',
  'advantages',
  'rollout_log_probs',
  'train_log_probs',
  'ref_log_probs',
  'ref_entropy',
  'returns',
] as const;
export type TokenStat = (typeof TOKEN_STATS)[number];

export type Tokens = TokenView;

export type { HeatmapHeader };
