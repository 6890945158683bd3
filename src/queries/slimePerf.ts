// slime's per-step rollout metrics from dumped samples: the `perf/` keys exactly as slime computes them
// (compat), a corrected `perf_fixed/` set (streaming requests, PD values from child spans, request
// counts, percentiles), the `rollout/` sample metrics and the eval metrics.
import { deflateSync } from 'node:zlib';
import {
  effectiveResponseLength,
  isRecord,
  pyIntOrFloat,
  pyNumber,
  responseLength,
  rewardValue,
  sampleStatus,
  sampleTrace,
  traceEvents,
  type SlimeSample,
  type SlimeValue,
  type TraceEventRecord,
} from '../run/model.ts';

export type MetricDict = Record<string, number>;

/** Inputs slime's functions read that a dump does not hold; a metric needing an absent one is left out. */
export interface PerfInputs {
  /** Seconds slime measured around the rollout (a dump does not hold it); absent → the rate metrics are left out. */
  rolloutTime?: number;
  /** `args.rollout_num_gpus`; absent or 0 → `*tokens_per_gpu_per_sec` left out, as slime does (they need `rolloutTime` too). */
  rolloutNumGpus?: number;
}

export interface SampleMetricArgs {
  /** `args.advantage_estimator`; `ppo` skips the zero-std counts. */
  advantageEstimator?: string;
  rewardKey?: string | null;
  /** `args.sglang_speculative_algorithm`: when set, the speculative-decoding acceptance metrics. */
  speculative?: boolean;
}

export const REQUEST_PERF_FIELDS: ReadonlyArray<readonly [string, string]> = [
  ['request/e2e_latency', 'e2e_latency'],
  ['request/queue_time', 'queue_time'],
  ['decode/throughput', 'decode_throughput'],
];
export const PREFILL_PERF_FIELDS: ReadonlyArray<readonly [string, string]> = [
  ['prefill/bootstrap_queue_duration', 'pd_prefill_bootstrap_queue_duration'],
  ['prefill/bootstrap_duration', 'pd_prefill_bootstrap_duration'],
  ['prefill/alloc_wait_duration', 'pd_prefill_alloc_wait_duration'],
  ['prefill/forward_duration', 'pd_prefill_forward_duration'],
  ['prefill/transfer_queue_duration', 'pd_prefill_transfer_queue_duration'],
  ['prefill/transfer_speed_gb_s', 'pd_transfer_speed_gb_s'],
  ['prefill/transfer_total_mb', 'pd_transfer_total_mb'],
  ['prefill/retry_count', 'pd_prefill_retry_count'],
];
export const DECODE_PERF_FIELDS: ReadonlyArray<readonly [string, string]> = [
  ['decode/prealloc_duration', 'pd_decode_prealloc_duration'],
  ['decode/bootstrap_duration', 'pd_decode_bootstrap_duration'],
  ['decode/alloc_wait_duration', 'pd_decode_alloc_wait_duration'],
  ['decode/transfer_duration', 'pd_decode_transfer_duration'],
  ['decode/forward_duration', 'pd_decode_forward_duration'],
];
const ALL_PERF_FIELDS = [...REQUEST_PERF_FIELDS, ...PREFILL_PERF_FIELDS, ...DECODE_PERF_FIELDS];

/** The prefix of the corrected metrics (slime's own stay under `perf/`). */
export const FIXED_PERF_PREFIX = 'perf_fixed/';

/** NumPy's pairwise summation (what `np.mean` adds with), so means match slime to the last bit. */
export function pairwiseSum(a: ArrayLike<number>, from = 0, n = a.length): number {
  if (n < 8) {
    let res = 0;
    for (let i = 0; i < n; i++) res += a[from + i];
    return res;
  }
  if (n <= 128) {
    const r = [0, 0, 0, 0, 0, 0, 0, 0];
    for (let j = 0; j < 8; j++) r[j] = a[from + j];
    let i = 8;
    for (; i < n - (n % 8); i += 8) for (let j = 0; j < 8; j++) r[j] += a[from + i + j];
    let res = r[0] + r[1] + (r[2] + r[3]) + (r[4] + r[5] + (r[6] + r[7]));
    for (; i < n; i++) res += a[from + i];
    return res;
  }
  let n2 = Math.floor(n / 2);
  n2 -= n2 % 8;
  return pairwiseSum(a, from, n2) + pairwiseSum(a, from + n2, n - n2);
}

/** `compute_statistics`: mean / median / max / min as NumPy gives them. Callers never pass an empty list. */
export function computeStatistics(values: readonly number[]): { mean: number; median: number; max: number; min: number } {
  const n = values.length;
  const sorted = [...values].sort((a, b) => a - b);
  const median = n % 2 === 1 ? sorted[(n - 1) / 2] : (0 + sorted[n / 2 - 1] + sorted[n / 2]) / 2;
  return { mean: pairwiseSum(values) / n, median, max: sorted[n - 1], min: sorted[0] };
}

/** The `p`-th percentile with linear interpolation between closest ranks (NumPy's default). */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 1) return sorted[0];
  const pos = ((sorted.length - 1) * p) / 100;
  const lo = Math.floor(pos);
  const hi = Math.min(lo + 1, sorted.length - 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo);
}

function addStats(out: MetricDict, key: string, values: readonly number[]): void {
  const s = computeStatistics(values);
  out[`${key}/mean`] = s.mean;
  out[`${key}/median`] = s.median;
  out[`${key}/max`] = s.max;
  out[`${key}/min`] = s.min;
}

/** slime's value filter, to the letter: `isinstance(v, (int, float))`, not a bool, finite (numpy float32/int64 and strings fail it). */
function slimePerfValue(v: SlimeValue | undefined): number | undefined {
  const n = pyIntOrFloat(v);
  return n !== undefined && Number.isFinite(n) ? n : undefined;
}

/** `_compute_sglang_request_perf_metrics`: the `sglang_generate` end attrs only (slime's behaviour). */
export function requestPerfMetricsCompat(samples: readonly SlimeSample[]): MetricDict {
  const byMetric = new Map<string, number[]>();
  let requests = 0;
  for (const s of samples) {
    for (const ev of traceEvents(sampleTrace(s))) {
      if (ev.type !== 'span_end' || ev.name !== 'sglang_generate' || !isRecord(ev.attrs)) continue;
      requests++;
      for (const [metric, field] of ALL_PERF_FIELDS) {
        const v = slimePerfValue(ev.attrs[field]);
        if (v === undefined) continue;
        let list = byMetric.get(metric);
        if (!list) byMetric.set(metric, (list = []));
        list.push(v);
      }
    }
  }
  const out: MetricDict = {};
  if (requests === 0) return out;
  for (const [metric, values] of byMetric) addStats(out, metric, values);
  return out;
}

/** The names of request spans: slime's non-streaming and streaming generate calls. */
const REQUEST_SPANS = new Set(['sglang_generate', 'sglang_generate_stream']);

/** One request found in a trace: its span's end attrs joined with the PD values of its synthetic children. */
export interface TraceRequest {
  name: string;
  spanId: string | null;
  values: Map<string, number>;
  /** The `sglang_pd_*` span whose end attrs gave a value (by key): absent for the request's own attrs and for events. */
  from: Map<string, string>;
}

/**
 * Every request of one trace with the fields slime's perf code would want: the request span's end
 * attrs (legacy flat `pd_*` included), plus the `pd_*` values of the `sglang_pd_*` spans below it and of
 * its `sglang_pd_summary` event (the current layout).
 */
export function traceRequests(events: readonly TraceEventRecord[]): TraceRequest[] {
  const parentOf = new Map<string, string>();
  const nameOf = new Map<string, string>();
  for (const ev of events) {
    if (ev.type === 'span_start' && typeof ev.span_id === 'string') {
      if (typeof ev.parent_span_id === 'string') parentOf.set(ev.span_id, ev.parent_span_id);
      if (typeof ev.name === 'string') nameOf.set(ev.span_id, ev.name);
    }
  }
  const requests: TraceRequest[] = [];
  const bySpan = new Map<string, TraceRequest>();
  const pending: Array<[string, { [key: string]: SlimeValue }, string | null]> = [];
  for (const ev of events) {
    const name = typeof ev.name === 'string' ? ev.name : '';
    if (ev.type === 'span_end' && REQUEST_SPANS.has(name)) {
      const r: TraceRequest = { name, spanId: typeof ev.span_id === 'string' ? ev.span_id : null, values: new Map(), from: new Map() };
      if (isRecord(ev.attrs)) for (const [, field] of ALL_PERF_FIELDS) {
        const v = slimePerfValue(ev.attrs[field]);
        if (v !== undefined) r.values.set(field, v);
      }
      requests.push(r);
      if (r.spanId) bySpan.set(r.spanId, r);
    } else if (name.startsWith('sglang_pd_') && isRecord(ev.attrs)) {
      // span_end never carries its parent: find it through the span's start; an event names it itself.
      const self = typeof ev.span_id === 'string' ? ev.span_id : null;
      const parent = ev.type === 'event' ? (typeof ev.parent_span_id === 'string' ? ev.parent_span_id : null) : self ? (parentOf.get(self) ?? null) : null;
      if (parent) pending.push([parent, ev.attrs, ev.type === 'span_end' ? self : null]);
    }
  }
  for (const [parent, attrs, span] of pending) {
    let at: string | undefined = parent;
    for (let hops = 0; at && hops < 4 && !bySpan.has(at); hops++) at = parentOf.get(at);
    const r = at ? bySpan.get(at) : undefined;
    if (!r) continue;
    for (const [k, raw] of Object.entries(attrs)) {
      if (!k.startsWith('pd_')) continue;
      const v = slimePerfValue(raw);
      if (v === undefined || r.values.has(k)) continue;
      r.values.set(k, v);
      if (span) r.from.set(k, span);
    }
  }
  return requests;
}

/** The corrected request metrics (keys without the prefix): counts, the four statistics and p50/p90/p99. */
export function requestPerfMetricsFixed(samples: readonly SlimeSample[]): MetricDict {
  const byMetric = new Map<string, number[]>();
  let count = 0;
  let profiled = 0;
  let streaming = 0;
  for (const s of samples) {
    for (const r of traceRequests(traceEvents(sampleTrace(s)))) {
      count++;
      if (r.name === 'sglang_generate_stream') streaming++;
      let any = false;
      for (const [metric, field] of ALL_PERF_FIELDS) {
        const v = r.values.get(field);
        if (v === undefined) continue;
        any = true;
        let list = byMetric.get(metric);
        if (!list) byMetric.set(metric, (list = []));
        list.push(v);
      }
      if (any) profiled++;
    }
  }
  const out: MetricDict = { 'request/count': count, 'request/profiled_count': profiled, 'request/streaming_count': streaming };
  for (const [metric, values] of byMetric) {
    addStats(out, metric, values);
    const sorted = [...values].sort((a, b) => a - b);
    out[`${metric}/p50`] = percentile(sorted, 50);
    out[`${metric}/p90`] = percentile(sorted, 90);
    out[`${metric}/p99`] = percentile(sorted, 99);
  }
  return out;
}

/** `compute_perf_metrics_from_samples` (keys without `perf/`), leaving out what needs an absent input. */
export function perfMetricsCompat(samples: readonly SlimeSample[], inputs: PerfInputs = {}): MetricDict {
  const out: MetricDict = {};
  if (samples.length === 0) return out;
  const ngt = samples.map((s) => pyNumber(s.fields.non_generation_time) ?? 0);
  const t = inputs.rolloutTime;
  if (t !== undefined) out.rollout_time = t;
  const maxNgt = Math.max(...ngt);
  if (maxNgt > 0) addStats(out, 'non_generation_time', ngt);
  // `token_perf`: the rates divide by rollout_time (left out without it); the longest samples' non-generation
  // time needs only the samples, and is kept either way
  const tokenPerf = (lengths: number[], key: string): void => {
    const longest = Math.max(...lengths);
    if (t !== undefined) {
      if (inputs.rolloutNumGpus) out[`${key}tokens_per_gpu_per_sec`] = lengths.reduce((a, b) => a + b, 0) / t / inputs.rolloutNumGpus;
      out[`longest_${key}sample_tokens_per_sec`] = longest / t;
    }
    if (maxNgt === 0) return;
    const sel = ngt.filter((_, i) => lengths[i] === longest);
    const m = sel.reduce((a, b) => a + b, 0) / sel.length;
    out[`longest_${key}sample_non_generation_time`] = m;
    if (t !== undefined) out[`longest_${key}sample_tokens_per_sec_without_non_generation`] = longest / (t - m);
  };
  tokenPerf(samples.map(responseLength), '');
  tokenPerf(samples.map(effectiveResponseLength), 'effective_');
  Object.assign(out, requestPerfMetricsCompat(samples));
  return out;
}

function hasRepetition(text: string): boolean {
  if (text.length <= 10000) return false;
  const tail = Buffer.from(Array.from(text).slice(-10000).join(''), 'utf8');
  return tail.length / deflateSync(tail, { level: 9 }).length > 10;
}

/** `compute_metrics_from_samples` (keys without `rollout/` or `eval/<dataset>/`). */
export function sampleMetrics(samples: readonly SlimeSample[], args: SampleMetricArgs = {}): MetricDict {
  const out: MetricDict = {};
  if (samples.length === 0) return out;
  addStats(out, 'response_len', samples.map(effectiveResponseLength));
  if (args.advantageEstimator !== 'ppo') {
    const groups = new Map<string, SlimeSample[]>();
    for (const s of samples) {
      const g = String(pyNumber(s.fields.group_index) ?? 'None');
      let list = groups.get(g);
      if (!list) groups.set(g, (list = []));
      list.push(s);
    }
    for (const members of groups.values()) {
      const rewards = members.map((s) => rewardValue(s, args.rewardKey));
      if (rewards.some((r) => r === undefined) || !rewards.every((r) => r === rewards[0])) continue;
      const key = `zero_std/count_${pyRound1(rewards[0]!)}`;
      out[key] = (out[key] ?? 0) + 1;
    }
  }
  if (args.speculative) {
    const rates: number[] = [];
    const lengths: number[] = [];
    for (const s of samples) {
      const info = s.fields.spec_info;
      if (!isRecord(info)) continue;
      const draft = pyNumber(info.spec_draft_token_num) ?? 0;
      const accept = pyNumber(info.spec_accept_token_num) ?? 0;
      const verify = pyNumber(info.spec_verify_ct) ?? 0;
      const completion = pyNumber(info.completion_token_num) ?? 0;
      rates.push(draft > 0 ? accept / draft : 0);
      lengths.push(verify > 0 ? completion / verify : 0);
    }
    if (rates.length) {
      out.spec_accept_rate = rates.reduce((a, b) => a + b, 0) / rates.length;
      out.spec_accept_length = lengths.reduce((a, b) => a + b, 0) / lengths.length;
    }
  }
  let cached = 0;
  let prompt = 0;
  let withInfo = 0;
  for (const s of samples) {
    const info = s.fields.prefix_cache_info;
    if (!isRecord(info)) continue;
    withInfo++;
    cached += pyNumber(info.cached_tokens) ?? 0;
    prompt += pyNumber(info.total_prompt_tokens) ?? 0;
  }
  // every slime sample has the record (zeros without a cache); samples another trainer recorded may have none
  if (withInfo > 0) {
    out.prefix_cache_hit_rate = prompt > 0 ? cached / prompt : 0;
    out.avg_cached_tokens_per_sample = cached / samples.length;
  }
  let kept = 0;
  let tokens = 0;
  for (const s of samples) {
    const off = s.topPOffsets;
    if (!off || s.fields.remove_sample === true || off.length !== responseLength(s) + 1) continue;
    const mask = s.fields.loss_mask;
    if (Array.isArray(mask)) {
      for (let i = 0; i + 1 < off.length && i < mask.length; i++) {
        if (pyNumber(mask[i]) || mask[i] === true) kept += off[i + 1] - off[i];
      }
      tokens += effectiveResponseLength(s);
    } else {
      kept += off[off.length - 1] - off[0];
      tokens += responseLength(s);
    }
  }
  if (tokens > 0) out.top_p_kept_vocab_per_token = kept / tokens;
  out.repetition_frac = samples.filter((s) => typeof s.fields.response === 'string' && hasRepetition(s.fields.response)).length / samples.length;
  out.truncated_ratio = samples.filter((s) => sampleStatus(s) === 'truncated').length / samples.length;
  return out;
}

/** `str(round(x, 1))` for a reward: `1.0`, `0.5`, `-1.0`. */
function pyRound1(x: number): string {
  const r = Math.round(x * 10) / 10;
  return Number.isInteger(r) ? `${r}.0` : String(r);
}

export interface RolloutMetricsOptions extends PerfInputs, SampleMetricArgs {
  /** The rollout's extra metrics slime logs first (the dynamic filter's drop counts), when known. */
  extra?: MetricDict;
}

/**
 * What slime's `log_rollout_data` logs for one train step (without `rollout/step`): extra metrics,
 * `rollout/…`, then `perf/…`; followed by rlsight's corrected `perf_fixed/…` keys.
 */
export function rolloutStepMetrics(samples: readonly SlimeSample[], opts: RolloutMetricsOptions = {}): MetricDict {
  const out: MetricDict = { ...(opts.extra ?? {}) };
  for (const [k, v] of Object.entries(sampleMetrics(samples, opts))) out[`rollout/${k}`] = v;
  for (const [k, v] of Object.entries(perfMetricsCompat(samples, opts))) out[`perf/${k}`] = v;
  // the corrected request keys read the request traces: samples with none (another trainer's) have no such keys
  if (samples.some((s) => traceEvents(sampleTrace(s)).length > 0)) {
    for (const [k, v] of Object.entries(requestPerfMetricsFixed(samples))) out[`${FIXED_PERF_PREFIX}${k}`] = v;
  }
  return out;
}

/**
 * The eval datasets of a flattened eval dump. slime does not store dataset names; it writes each
 * dataset's samples sorted by index, so a new dataset starts where the index does not increase.
 * Names come from `names` in order, else `dataset<i>`.
 */
export function evalDatasets(samples: readonly SlimeSample[], names: readonly string[] = []): Array<{ name: string; samples: SlimeSample[] }> {
  const sets: SlimeSample[][] = [];
  let last = -Infinity;
  for (const s of samples) {
    const idx = pyNumber(s.fields.index) ?? last + 1;
    if (sets.length === 0 || idx <= last) sets.push([]);
    sets[sets.length - 1].push(s);
    last = idx;
  }
  return sets.map((list, i) => ({ name: names[i] ?? `dataset${i}`, samples: list }));
}

/** `log_eval_rollout_data` (without `eval/step`): per dataset its mean reward, sample metrics and truncated ratio. */
export function evalMetrics(
  datasets: ReadonlyArray<{ name: string; samples: readonly SlimeSample[] }>,
  args: SampleMetricArgs = {},
): MetricDict {
  const out: MetricDict = {};
  for (const { name, samples } of datasets) {
    if (samples.length === 0) continue;
    const rewards = samples.map((s) => rewardValue(s, args.rewardKey) ?? 0);
    out[`eval/${name}`] = rewards.reduce((a, b) => a + b, 0) / rewards.length;
    const m = sampleMetrics(samples, args);
    for (const [k, v] of Object.entries(m)) out[`eval/${name}/${k}`] = v;
    out[`eval/${name}-truncated_ratio`] = m.truncated_ratio;
  }
  return out;
}
