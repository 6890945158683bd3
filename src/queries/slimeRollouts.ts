// The Rollouts and Sample views over slime samples: the same tables, conversation and token answers the
// miles reader gives, from what `Sample.to_dict()` holds (slime writes no train dumps, no sidecars).
import type { RolloutSample } from '../run/dumps/rolloutDump.ts';
import type { SlimeDump } from '../run/slime/dump.ts';
import { isRecord, pyNumber, responseLength, sampleIndex, type SlimeSample, type SlimeValue } from '../run/slime/sample.ts';
import type { MetricSeries, MetricsAnswer } from '../wire/metrics.ts';
import type { Conversation, Message, RolloutTable, TokenView } from '../wire/rollout.ts';
import { rolloutGroups, rolloutSummary, STEP_AGGREGATE_METRICS, stepAggregate } from './rollouts.ts';
import { evalDatasets, evalMetrics, rolloutStepMetrics, type RolloutMetricsOptions } from './slimePerf.ts';
import { tokenView, type TokenWindow } from './tokens.ts';

function numberList(v: SlimeValue | undefined): number[] {
  return Array.isArray(v) ? v.map((x) => pyNumber(x) ?? (x === true ? 1 : 0)) : [];
}

function plainReward(v: SlimeValue | undefined): RolloutSample['reward'] {
  if (v === undefined || v === null) return null;
  const n = pyNumber(v);
  if (n !== undefined) return n;
  if (typeof v === 'boolean') return v;
  return null;
}

/** A slime sample as the rollouts table reads samples. */
export function asRolloutSample(s: SlimeSample): RolloutSample {
  const f = s.fields;
  const tokens = numberList(f.tokens);
  const spec = isRecord(f.spec_info) ? f.spec_info : {};
  const cache = isRecord(f.prefix_cache_info) ? f.prefix_cache_info : {};
  const prompt = f.prompt;
  return {
    position: s.row,
    index: sampleIndex(s),
    groupIndex: pyNumber(f.group_index) ?? null,
    status: typeof f.status === 'string' ? f.status : 'unknown',
    removeSample: f.remove_sample === true,
    responseLength: responseLength(s),
    totalLength: tokens.length,
    reward: plainReward(f.reward),
    weightVersions: Array.isArray(f.weight_versions) ? f.weight_versions.map((v) => String(pyNumber(v) ?? v)) : [],
    promptToolMessages: Array.isArray(prompt) ? prompt.filter((m) => isRecord(m) && m.role === 'tool').length : null,
    nonGenerationTime: pyNumber(f.non_generation_time) ?? 0,
    specAcceptTokens: pyNumber(spec.spec_accept_token_num) ?? null,
    specDraftTokens: pyNumber(spec.spec_draft_token_num) ?? null,
    cachedTokens: pyNumber(cache.cached_tokens) ?? null,
    totalPromptTokens: pyNumber(cache.total_prompt_tokens) ?? null,
  };
}

/**
 * The step's samples table. slime dumps samples before reward normalisation, so the raw reward is the
 * sample's own reward; the train-side columns stay empty (slime writes no train dumps by default).
 */
export function slimeSummary(dump: SlimeDump): RolloutTable {
  const t = rolloutSummary(dump.rolloutId, dump.evaluation, dump.samples.map(asRolloutSample), new Map());
  for (const r of t.rows) r.raw_reward = r.reward;
  return t;
}

export function slimeGroups(dump: SlimeDump): RolloutTable {
  return rolloutGroups(slimeSummary(dump));
}

function plain(v: SlimeValue | undefined): unknown {
  if (v === undefined) return null;
  if (Array.isArray(v)) return v.map(plain);
  if (isRecord(v)) return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, plain(x)]));
  const n = pyNumber(v);
  if (n !== undefined) return n;
  if (v === null || typeof v === 'boolean' || typeof v === 'string') return v;
  return String(v);
}

/** The conversation: the chat prompt (or the prompt text as a user turn) and the response. */
export function slimeConversation(s: SlimeSample): Conversation {
  const f = s.fields;
  const messages: Message[] = [];
  if (Array.isArray(f.prompt)) {
    for (const m of f.prompt) if (isRecord(m)) messages.push(plain(m) as Message);
  } else if (typeof f.prompt === 'string') messages.push({ role: 'user', content: f.prompt });
  if (typeof f.response === 'string') messages.push({ role: 'assistant', content: f.response });
  const reward = pyNumber(f.reward);
  return {
    sample_index: sampleIndex(s) ?? s.row,
    group_index: pyNumber(f.group_index) ?? -1,
    status: typeof f.status === 'string' ? f.status : null,
    reward: reward !== undefined && Number.isFinite(reward) ? reward : null,
    prompt: plain(f.prompt),
    messages,
    label: plain(f.label),
    metadata: plain(f.metadata),
  };
}

/** Tokens of one sample with its rollout log-probs and loss mask (slime dumps no train-side values). */
export function slimeTokens(dump: SlimeDump, s: SlimeSample, window: TokenWindow, decodeToken: ((id: number) => string) | null = null): TokenView {
  const tokens = numberList(s.fields.tokens);
  const lp = Array.isArray(s.fields.rollout_log_probs) ? numberList(s.fields.rollout_log_probs) : null;
  const view = tokenView(
    {
      rolloutId: dump.rolloutId,
      sampleIndex: sampleIndex(s) ?? s.row,
      evaluation: dump.evaluation,
      totalLength: tokens.length,
      responseLength: responseLength(s),
      tokens,
      rolloutLogProbs: lp,
      trainRow: null,
      decodeToken,
    },
    window,
  );
  const mask = Array.isArray(s.fields.loss_mask) ? numberList(s.fields.loss_mask) : null;
  if (mask) {
    const promptLen = view.total_len - responseLength(s);
    const a = Math.max(0, view.start - promptLen);
    const b = Math.max(0, view.end - promptLen);
    view.loss_mask = mask.slice(a, b);
  }
  return view;
}

export interface StepMetricsInputs extends RolloutMetricsOptions {
  /** Per train rollout id: the seconds slime measured around it, when the user knows them. */
  rolloutTimes?: ReadonlyMap<number, number>;
  /** Names of the eval datasets, in dump order. */
  evalDatasetNames?: readonly string[];
}

/** Every step's slime metrics: train dumps keyed by rollout id, eval dumps too (their `eval/` keys). */
export function slimeStepMetrics(train: readonly SlimeDump[], evals: readonly SlimeDump[], inputs: StepMetricsInputs = {}): Array<{ rolloutId: number; metrics: Record<string, number> }> {
  const out: Array<{ rolloutId: number; metrics: Record<string, number> }> = [];
  for (const d of train) {
    const metrics = rolloutStepMetrics(d.samples, { ...inputs, rolloutTime: inputs.rolloutTimes?.get(d.rolloutId) ?? inputs.rolloutTime });
    // The dump/* step aggregates the Rollouts view summarises (the same as for a miles run).
    const summary = slimeSummary(d);
    const agg = stepAggregate(summary, rolloutGroups(summary));
    for (const name of STEP_AGGREGATE_METRICS) {
      const v = agg[name];
      if (v !== null) metrics[`dump/${name}`] = v;
    }
    out.push({ rolloutId: d.rolloutId, metrics });
  }
  for (const d of evals) out.push({ rolloutId: d.rolloutId, metrics: evalMetrics(evalDatasets(d.samples, inputs.evalDatasetNames), inputs) });
  return out;
}

/** `/api/metrics` over slime's step metrics: x is the rollout id (slime logs on `rollout/step` = rollout id). */
export function slimeMetricsAnswer(steps: ReturnType<typeof slimeStepMetrics>, keys: readonly string[]): MetricsAnswer {
  const out: MetricsAnswer = {};
  for (const key of keys) {
    const series: MetricSeries = { x: [], y: [], ts: [] };
    for (const s of steps) {
      const v = s.metrics[key];
      if (v === undefined) continue;
      series.x.push(s.rolloutId);
      series.y.push(Number.isFinite(v) ? v : null);
    }
    out[key] = series;
  }
  return out;
}

/** Every key the steps log, in first-seen order. */
export function slimeMetricKeys(steps: ReturnType<typeof slimeStepMetrics>): string[] {
  const seen = new Set<string>();
  for (const s of steps) for (const k of Object.keys(s.metrics)) seen.add(k);
  return [...seen];
}
