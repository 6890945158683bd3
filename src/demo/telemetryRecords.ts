// One telemetry record as the exact JSON line miles writes (field order = the dataclass order).
import type { PhaseEvent } from '../run/telemetry/records.ts';
import { PyFloat, pyDumps, pyFloat, pyString, type PyJson } from './pythonJson.ts';

export { OPEN_T1, phasePartitionTs } from '../run/telemetry/records.ts';

export function phaseLine(e: PhaseEvent): string {
  return `{"name":${pyString(e.name)},"t0":${pyFloat(e.t0)},"t1":${pyFloat(e.t1)},"node":"${e.node}","gpus":[${e.gpus.join(',')}],"rank":${e.rank},"role":"${e.role}"}`;
}

export function gpuUtilLine(ts: number, node: string, gpu: number, util: number, memMb: number, powerW: number): string {
  return `{"ts":${pyFloat(ts)},"node":"${node}","gpu":${gpu},"util":${util},"mem_mb":${memMb},"power_w":${powerW}}`;
}

export function gpuProcessLine(ts: number, node: string, gpu: number, pid: number, name: string, memMb: number): string {
  return `{"ts":${pyFloat(ts)},"node":"${node}","gpu":${gpu},"pid":${pid},"name":${pyString(name)},"mem_mb":${memMb}}`;
}

/** `labelsJson` is the already-encoded compact labels object, e.g. `{}` or `{"engine_type":"unified","dp_rank":"0"}`. */
export function engineSampleLine(ts: number, addr: string, metric: string, labelsJson: string, value: number): string {
  return `{"ts":${pyFloat(ts)},"addr":"${addr}","metric":"${metric}","labels":${labelsJson},"value":${pyFloat(value)}}`;
}

export function engineLabelsJson(engineType: string | null, dpRank: number | null): string {
  const parts: string[] = [];
  if (engineType !== null) parts.push(`"engine_type":${pyString(engineType)}`);
  if (dpRank !== null) parts.push(`"dp_rank":"${dpRank}"`);
  return `{${parts.join(',')}}`;
}

export type TrajectoryKind = 'attempt_start' | 'gen_start' | 'gen_end' | 'tool_start' | 'tool_end' | 'attempt_end';

export interface TrajectoryEvent {
  ts: number;
  kind: TrajectoryKind;
  sampleIndex: number;
  groupIndex: number;
  turn: number;
  weightVersion: string;
  detail: string;
}

export function trajectoryLine(e: TrajectoryEvent): string {
  return `{"ts":${pyFloat(e.ts)},"kind":"${e.kind}","sample_index":${e.sampleIndex},"group_index":${e.groupIndex},"turn":${e.turn},"weight_version":${pyString(e.weightVersion)},"detail":${pyString(e.detail)}}`;
}

/**
 * Metric values are Python floats (as tracking code logs them), except step counters (keys ending in /step)
 * and the keys named in `ints`.
 */
export function metricsLine(ts: number, stepKey: string | null, step: number | null, metrics: Record<string, number | string | boolean>, ints: ReadonlySet<string> = new Set()): string {
  const body: Record<string, PyJson> = {};
  for (const [k, v] of Object.entries(metrics)) body[k] = typeof v === 'number' && !k.endsWith('/step') && !ints.has(k) ? new PyFloat(v) : v;
  return `{"ts":${pyFloat(ts)},"step_key":${stepKey === null ? 'null' : pyString(stepKey)},"step":${step === null ? 'null' : step},"metrics":${pyDumps(body, { compact: true })}}`;
}

export interface EngineInfo {
  addr: string;
  workerType: string;
  engineRank: number;
  gpus: [string, number][];
  gpuUuids: (string | null)[];
}

export function topologyLine(ts: number, engines: EngineInfo[]): string {
  const list = engines.map(
    (e) =>
      `{"addr":"${e.addr}","worker_type":"${e.workerType}","engine_rank":${e.engineRank},"gpus":[${e.gpus.map(([n, g]) => `["${n}",${g}]`).join(',')}],"gpu_uuids":[${e.gpuUuids.map((u) => (u === null ? 'null' : pyString(u))).join(',')}]}`,
  );
  return `{"ts":${pyFloat(ts)},"engines":[${list.join(',')}]}`;
}

export function dataBufferLine(ts: number, length: number): string {
  return `{"ts":${pyFloat(ts)},"length":${length}}`;
}

/** `meta.json`: `json.dumps(asdict(meta), indent=1)`. */
export function metaJson(runName: string, startTs: number, args: Record<string, PyJson>): string {
  return pyDumps({ run_name: runName, start_ts: new PyFloat(startTs), args, schema_version: 1 }, { indent: 1 });
}

export interface LaneEntry {
  ranks: Set<number>;
  engineAddrs: Set<string>;
  roles: Set<string>;
}

/** `lane_catalog.json` with default separators and every list sorted. */
export function laneCatalogJson(lanes: Map<string, LaneEntry>): string {
  const body: Record<string, PyJson> = {};
  for (const key of [...lanes.keys()].sort()) {
    const lane = lanes.get(key)!;
    body[key] = {
      ranks: [...lane.ranks].sort((a, b) => a - b),
      engine_addrs: [...lane.engineAddrs].sort(),
      roles: [...lane.roles].sort(),
    };
  }
  return pyDumps({ version: 1, lanes: body });
}
