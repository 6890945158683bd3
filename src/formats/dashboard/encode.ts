// Each record as the exact line miles' collector writes: `json.dumps(asdict(record),
// separators=(",", ":"))` — dataclass key order, Python float repr, ASCII escapes. The positional
// encoders serve writers that produce millions of lines (no record object per line).
import { PyFloat, pyDumps, pyFloat, pyString, type PyJson } from '../pythonJson.ts';
import type { StreamName } from './layout.ts';
import type {
  DataBufferSample,
  EngineInfo,
  EngineSample,
  GpuProcessSample,
  GpuSample,
  MetricsRecord,
  MetricValue,
  PhaseEvent,
  RunMeta,
  StreamRecord,
  TopologySnapshot,
  TrajectoryEvent,
} from './records.ts';

/** An int field: Python prints ints without a fraction. */
const int = (n: number): string => String(n);
/** A number that is an int when whole (power_w: NVML gives integer watts, nvidia-smi fractional ones). */
const intOrFloat = (n: number): string => (Number.isInteger(n) ? String(n) : pyFloat(n));

/** `{"ts":…,"node":…,"gpu":` — shared by every GPU of one node's tick. */
export function gpuUtilPrefix(ts: number, node: string): string {
  return `{"ts":${pyFloat(ts)},"node":${pyString(node)},"gpu":`;
}

export function gpuUtilRest(prefix: string, gpu: number, util: number, memMb: number, powerW: number): string {
  return `${prefix}${int(gpu)},"util":${int(util)},"mem_mb":${int(memMb)},"power_w":${intOrFloat(powerW)}}`;
}

export function gpuUtilLine(ts: number, node: string, gpu: number, util: number, memMb: number, powerW: number): string {
  return gpuUtilRest(gpuUtilPrefix(ts, node), gpu, util, memMb, powerW);
}

export function encodeGpuSample(s: GpuSample): string {
  return gpuUtilLine(s.ts, s.node, s.gpu, s.util, s.mem_mb, s.power_w);
}

export function gpuProcessLine(ts: number, node: string, gpu: number, pid: number, name: string, memMb: number): string {
  return `{"ts":${pyFloat(ts)},"node":${pyString(node)},"gpu":${int(gpu)},"pid":${int(pid)},"name":${pyString(name)},"mem_mb":${int(memMb)}}`;
}

export function encodeGpuProcess(s: GpuProcessSample): string {
  return gpuProcessLine(s.ts, s.node, s.gpu, s.pid, s.name, s.mem_mb);
}

/** The compact labels object in its own key order, e.g. `{}` or `{"engine_type":"unified","dp_rank":"0"}`. */
export function engineLabelsJson(labels: Readonly<Record<string, string>>): string {
  let out = '';
  for (const k in labels) out += `${out ? ',' : ''}${pyString(k)}:${pyString(labels[k])}`;
  return `{${out}}`;
}

/** `{"ts":…,"addr":…,"metric":"` — shared by every metric of one engine's scrape. */
export function engineSamplePrefix(ts: number, addr: string): string {
  return `{"ts":${pyFloat(ts)},"addr":${pyString(addr)},"metric":`;
}

export function engineSampleRest(prefix: string, metric: string, labelsJson: string, value: number): string {
  return `${prefix}${pyString(metric)},"labels":${labelsJson},"value":${pyFloat(value)}}`;
}

/** `labelsJson` is the already-encoded labels object (see `engineLabelsJson`). */
export function engineSampleLine(ts: number, addr: string, metric: string, labelsJson: string, value: number): string {
  return engineSampleRest(engineSamplePrefix(ts, addr), metric, labelsJson, value);
}

export function encodeEngineSample(s: EngineSample): string {
  return engineSampleLine(s.ts, s.addr, s.metric, engineLabelsJson(s.labels), s.value);
}

export function phaseLine(e: PhaseEvent): string {
  return `{"name":${pyString(e.name)},"t0":${pyFloat(e.t0)},"t1":${pyFloat(e.t1)},"node":${pyString(e.node)},"gpus":[${e.gpus.map(int).join(',')}],"rank":${int(e.rank)},"role":${pyString(e.role)}}`;
}

export function trajectoryLine(e: TrajectoryEvent): string {
  return `{"ts":${pyFloat(e.ts)},"kind":${pyString(e.kind)},"sample_index":${int(e.sample_index)},"group_index":${int(e.group_index)},"turn":${int(e.turn)},"weight_version":${pyString(e.weight_version)},"detail":${pyString(e.detail)}}`;
}

/**
 * A metrics line. JavaScript numbers do not say whether Python held an int or a float, so `isFloat`
 * names the keys whose integral values are floats (`95.0`); non-integral and non-finite values are
 * always floats.
 */
export function encodeMetrics(r: MetricsRecord, isFloat: (key: string) => boolean = () => false): string {
  const body: Record<string, PyJson> = {};
  for (const k in r.metrics) {
    const v: MetricValue = r.metrics[k];
    body[k] = typeof v === 'number' && isFloat(k) ? new PyFloat(v) : v;
  }
  return `{"ts":${pyFloat(r.ts)},"step_key":${r.step_key === null ? 'null' : pyString(r.step_key)},"step":${r.step === null ? 'null' : int(r.step)},"metrics":${pyDumps(body, { compact: true })}}`;
}

/** Tracking code logs floats, except step counters (keys ending in `/step`) and the keys named in `ints`. */
export function metricsLine(ts: number, stepKey: string | null, step: number | null, metrics: Record<string, MetricValue>, ints: ReadonlySet<string> = new Set()): string {
  return encodeMetrics({ ts, step_key: stepKey, step, metrics }, (k) => !k.endsWith('/step') && !ints.has(k));
}

function engineInfoJson(e: EngineInfo): string {
  const gpus = e.gpus.map(([n, g]) => `[${pyString(n)},${int(g)}]`).join(',');
  const uuids = e.gpu_uuids.map((u) => (u === null ? 'null' : pyString(u))).join(',');
  return `{"addr":${pyString(e.addr)},"worker_type":${pyString(e.worker_type)},"engine_rank":${int(e.engine_rank)},"gpus":[${gpus}],"gpu_uuids":[${uuids}]}`;
}

export function topologyLine(ts: number, engines: readonly EngineInfo[]): string {
  return `{"ts":${pyFloat(ts)},"engines":[${engines.map(engineInfoJson).join(',')}]}`;
}

export function encodeTopology(s: TopologySnapshot): string {
  return topologyLine(s.ts, s.engines);
}

export function dataBufferLine(ts: number, length: number): string {
  return `{"ts":${pyFloat(ts)},"length":${int(length)}}`;
}

export function encodeDataBuffer(s: DataBufferSample): string {
  return dataBufferLine(s.ts, s.length);
}

/**
 * Any record as its line (without the newline). `floatKeys` applies to metrics only (see `encodeMetrics`).
 */
export function encodeRecord<S extends StreamName>(stream: S, record: StreamRecord[S], floatKeys?: ReadonlySet<string>): string {
  if (stream === 'metrics') return encodeMetrics(record as MetricsRecord, floatKeys ? (k) => floatKeys.has(k) : undefined);
  const encode = ENCODERS[stream] as ((r: StreamRecord[S]) => string) | undefined;
  if (encode === undefined) throw new Error(`unknown stream ${stream as string}`);
  return encode(record);
}

/** Each stream's line encoder (metrics also takes its float keys, see `encodeRecord`). */
const ENCODERS: { [S in StreamName]: (record: StreamRecord[S]) => string } = {
  metrics: (r) => encodeMetrics(r),
  topology: encodeTopology,
  data_buffer: encodeDataBuffer,
  gpu_util: encodeGpuSample,
  engine_series: encodeEngineSample,
  phases: phaseLine,
  trajectories: trajectoryLine,
  gpu_processes: encodeGpuProcess,
};

/** `meta.json`: `json.dumps(asdict(meta), indent=1)`; `args` values as Python holds them. */
export function metaJson(runName: string, startTs: number, args: Record<string, PyJson>): string {
  return pyDumps({ run_name: runName, start_ts: new PyFloat(startTs), args, schema_version: 1 }, { indent: 1 });
}

export function encodeMeta(meta: RunMeta): string {
  return metaJson(meta.run_name, meta.start_ts, meta.args as Record<string, PyJson>);
}
