// Per-sample, per-group and per-step views of one rollout step (the rollouts table and the dump/* metrics).
import { BadArgument } from '../run/dumps/errors.ts';
import type { RolloutSample } from '../run/dumps/rolloutDump.ts';
import type { TrainRow } from '../run/dumps/trainDump.ts';
import type { Numbers } from '../run/dumps/torchDocument.ts';
import type { StepAggregateMetric } from '../wire/metrics.ts';
import type { RolloutTable, TableRow } from '../wire/rollout.ts';

export type { RolloutTable, TableRow };

/**
 * The train-side columns of one sample, reduced from its joined train row (per-token arrays dropped).
 * The raw reward (batch-global) and a missing `truncated` are settled against the rollout sample by `rolloutSummary`.
 */
export interface TrainDigest {
  normalized_reward: number | null;
  truncated: boolean | null;
  dumped_rank: number;
  mean_entropy: number | null;
  max_entropy: number | null;
  ref_entropy_mean: number | null;
  mean_abs_lp_diff: number | null;
  max_abs_lp_diff: number | null;
  mean_imp_ratio: number | null;
  adv_mean: number | null;
  adv_std: number | null;
  return_mean: number | null;
  alignment_failed: boolean;
}

const SAMPLE_COLUMNS = [
  'sample_index',
  'group_index',
  'status',
  'remove_sample',
  'response_length',
  'total_length',
  'reward',
  'weight_version',
  'weight_version_min',
  'mixed_version',
  'staleness',
  'turns',
  'tool_calls',
  'non_generation_time',
  'spec_accept_rate',
  'prefix_cache_hit_rate',
] as const;
const TRAIN_STAT_COLUMNS = [
  'mean_entropy',
  'max_entropy',
  'ref_entropy_mean',
  'mean_abs_lp_diff',
  'max_abs_lp_diff',
  'mean_imp_ratio',
  'adv_mean',
  'adv_std',
  'return_mean',
] as const;
/** Column order of a row with train data: `truncated` follows `normalized_reward`. */
export const SUMMARY_COLUMNS_WITH_TRAIN = [
  ...SAMPLE_COLUMNS,
  'raw_reward',
  'normalized_reward',
  'truncated',
  'dumped_rank',
  ...TRAIN_STAT_COLUMNS,
  'alignment_failed',
];
/** Column order of a row without train data (eval, missing train dumps): `truncated` comes last. */
export const SUMMARY_COLUMNS_WITHOUT_TRAIN = [
  ...SAMPLE_COLUMNS,
  'raw_reward',
  'normalized_reward',
  'dumped_rank',
  ...TRAIN_STAT_COLUMNS,
  'alignment_failed',
  'truncated',
];

export const GROUP_COLUMNS = [
  'group_index',
  'n',
  'reward_mean',
  'reward_std',
  'response_length_mean',
  'truncated_frac',
  'zero_std',
];

export const STEP_AGGREGATE_METRICS = [
  'reward_mean',
  'reward_std',
  'response_length_mean',
  'truncated_frac',
  'zero_std_group_frac',
  'mean_abs_lp_diff',
  'mean_entropy',
  'mixed_version_frac',
] as const satisfies readonly StepAggregateMetric[];
// Every aggregate the wire names is computed (a compile error otherwise).
true satisfies Exclude<StepAggregateMetric, (typeof STEP_AGGREGATE_METRICS)[number]> extends never ? true : never;
export type { StepAggregateMetric };

export interface StepAggregate extends Record<StepAggregateMetric, number | null> {
  rollout_id: number;
  n_samples: number;
}

/** A finite number, or null (NaN/±inf serialize as null). */
function finite(x: number | null | undefined): number | null {
  return x === null || x === undefined || !Number.isFinite(x) ? null : x;
}

/** Mean and max of `x[i]` over the positions where the loss mask is set. */
interface MaskedStats {
  n: number;
  mean: number;
  max: number;
}

/** Loss-masked mean/max; null when `x` is absent or nothing is selected (NaN propagates to both). */
function maskedStats(x: ArrayLike<number> | null, mask: ArrayLike<number> | null): MaskedStats | null {
  if (!x || !mask) return null;
  const n = Math.min(x.length, mask.length);
  let count = 0;
  let sum = 0;
  let max = -Infinity;
  for (let i = 0; i < n; i++) {
    if (!(mask[i] > 0)) continue;
    const v = x[i];
    count++;
    sum += v;
    if (!(v <= max)) max = Number.isNaN(max) ? max : v;
  }
  if (count === 0) return null;
  return { n: count, mean: sum / count, max };
}

/** Unbiased (n-1) standard deviation of the masked values; NaN for a single value. */
function maskedStd(x: ArrayLike<number> | null, mask: ArrayLike<number> | null, stats: MaskedStats | null): number | null {
  if (!x || !mask || !stats) return null;
  if (stats.n === 1) return NaN;
  const n = Math.min(x.length, mask.length);
  let s = 0;
  for (let i = 0; i < n; i++) {
    if (!(mask[i] > 0)) continue;
    const d = Math.fround(x[i]) - stats.mean;
    s += d * d;
  }
  return Math.sqrt(s / (stats.n - 1));
}

function mean(xs: number[] | null): number | null {
  if (!xs || xs.length === 0) return null;
  let s = 0;
  for (const x of xs) s += x;
  return s / xs.length;
}

/** Unbiased (n-1) standard deviation; NaN for a single value. */
function sampleStd(xs: number[] | null): number | null {
  if (!xs || xs.length === 0) return null;
  if (xs.length === 1) return NaN;
  const m = mean(xs)!;
  let s = 0;
  for (const x of xs) s += (x - m) * (x - m);
  return Math.sqrt(s / (xs.length - 1));
}

/** `log_probs - rollout_log_probs` in float32, or null unless both exist with equal lengths. */
export function lpDiff(row: TrainRow): Float32Array | null {
  const a = row.logProbs;
  const b = row.rolloutLogProbs;
  if (!a || !b || a.length !== b.length) return null;
  const out = new Float32Array(a.length);
  for (let i = 0; i < a.length; i++) out[i] = Math.fround(a[i]) - Math.fround(b[i]);
  return out;
}

/** Loss-masked mean/max of |lp_diff| and mean of exp(lp_diff), in one pass without materializing lp_diff. */
function lpDiffStats(row: TrainRow, mask: ArrayLike<number> | null): { absMean: number; absMax: number; ratioMean: number } | null {
  const a = row.logProbs;
  const b = row.rolloutLogProbs;
  if (!a || !b || !mask || a.length !== b.length) return null;
  const n = Math.min(a.length, mask.length);
  let count = 0;
  let absSum = 0;
  let absMax = -Infinity;
  let ratioSum = 0;
  for (let i = 0; i < n; i++) {
    if (!(mask[i] > 0)) continue;
    const d = Math.fround(Math.fround(a[i]) - Math.fround(b[i]));
    const ad = Math.abs(d);
    count++;
    absSum += ad;
    if (!(ad <= absMax)) absMax = Number.isNaN(absMax) ? absMax : ad;
    ratioSum += Math.fround(Math.exp(d));
  }
  if (count === 0) return null;
  return { absMean: absSum / count, absMax, ratioMean: ratioSum / count };
}

/** Reduces a joined train row to its summary columns (loss-masked means over the response). */
export function digestTrainRow(row: TrainRow): TrainDigest {
  const mask = row.lossMask;
  const diff = lpDiffStats(row, mask);
  const entropy = maskedStats(row.entropy, mask);
  const adv = maskedStats(row.advantages, mask);
  return {
    normalized_reward: finite(row.reward),
    truncated: row.truncated === null ? null : row.truncated !== 0,
    dumped_rank: row.rank,
    mean_entropy: finite(entropy?.mean),
    max_entropy: finite(entropy?.max),
    ref_entropy_mean: finite(maskedStats(row.refEntropy, mask)?.mean),
    mean_abs_lp_diff: finite(diff?.absMean),
    max_abs_lp_diff: finite(diff?.absMax),
    mean_imp_ratio: finite(diff?.ratioMean),
    adv_mean: finite(adv?.mean),
    adv_std: finite(maskedStd(row.advantages, mask, adv)),
    return_mean: finite(maskedStats(row.returns, mask)?.mean),
    alignment_failed: row.alignmentFailed,
  };
}

/**
 * One summary row: the sample's columns, then the train columns (from its digest, or nulls), in the order
 * of SUMMARY_COLUMNS_WITH_TRAIN / SUMMARY_COLUMNS_WITHOUT_TRAIN. Written as two full literals: spreading a
 * shared base into 31 keys costs far more per row than the rest of the summary.
 */
function summaryRow(s: RolloutSample, rolloutId: number, d: TrainDigest | undefined, rawReward: number | null): TableRow {
  const versions = s.weightVersions;
  const numeric = versions.filter((v) => /^[0-9]+$/.test(v)).map((v) => parseInt(v, 10));
  const vmin = numeric.length ? Math.min(...numeric) : null;
  const reward = typeof s.reward === 'number' ? s.reward : typeof s.reward === 'boolean' ? (s.reward ? 1 : 0) : typeof s.reward === 'bigint' ? Number(s.reward) : null;
  const weightVersion = versions.length ? versions[versions.length - 1] : null;
  const mixed = versions.length ? new Set(versions).size > 1 : null;
  const staleness = vmin === null ? null : rolloutId - vmin;
  const turns = versions.length ? versions.length : null;
  const specAcceptRate = s.specDraftTokens ? finite((s.specAcceptTokens ?? 0) / s.specDraftTokens) : null;
  const prefixHitRate = s.totalPromptTokens ? finite((s.cachedTokens ?? 0) / s.totalPromptTokens) : null;
  if (d) {
    return {
      sample_index: s.index,
      group_index: s.groupIndex,
      status: s.status,
      remove_sample: s.removeSample,
      response_length: s.responseLength,
      total_length: s.totalLength,
      reward: finite(reward),
      weight_version: weightVersion,
      weight_version_min: vmin,
      mixed_version: mixed,
      staleness,
      turns,
      tool_calls: s.promptToolMessages,
      non_generation_time: finite(s.nonGenerationTime),
      spec_accept_rate: specAcceptRate,
      prefix_cache_hit_rate: prefixHitRate,
      raw_reward: rawReward,
      normalized_reward: d.normalized_reward,
      truncated: d.truncated ?? s.status === 'truncated',
      dumped_rank: d.dumped_rank,
      mean_entropy: d.mean_entropy,
      max_entropy: d.max_entropy,
      ref_entropy_mean: d.ref_entropy_mean,
      mean_abs_lp_diff: d.mean_abs_lp_diff,
      max_abs_lp_diff: d.max_abs_lp_diff,
      mean_imp_ratio: d.mean_imp_ratio,
      adv_mean: d.adv_mean,
      adv_std: d.adv_std,
      return_mean: d.return_mean,
      alignment_failed: d.alignment_failed,
    };
  }
  return {
    sample_index: s.index,
    group_index: s.groupIndex,
    status: s.status,
    remove_sample: s.removeSample,
    response_length: s.responseLength,
    total_length: s.totalLength,
    reward: finite(reward),
    weight_version: weightVersion,
    weight_version_min: vmin,
    mixed_version: mixed,
    staleness,
    turns,
    tool_calls: s.promptToolMessages,
    non_generation_time: finite(s.nonGenerationTime),
    spec_accept_rate: specAcceptRate,
    prefix_cache_hit_rate: prefixHitRate,
    raw_reward: null,
    normalized_reward: null,
    dumped_rank: null,
    mean_entropy: null,
    max_entropy: null,
    ref_entropy_mean: null,
    mean_abs_lp_diff: null,
    max_abs_lp_diff: null,
    mean_imp_ratio: null,
    adv_mean: null,
    adv_std: null,
    return_mean: null,
    alignment_failed: false,
    truncated: s.status === 'truncated',
  };
}

/**
 * One row per rollout sample, in batch order. `digests` maps `Sample.index` to its train-side columns;
 * `rawRewards` is the train dumps' batch-global raw reward list, indexed by a sample's position in the dump.
 */
export function rolloutSummary(
  rolloutId: number,
  evaluation: boolean,
  samples: readonly RolloutSample[],
  digests: ReadonlyMap<number, TrainDigest>,
  rawRewards: readonly unknown[] | null = null,
): RolloutTable {
  // Like the reference's {index: position} map, a repeated index resolves to its last position.
  const position = new Map<number, number>();
  for (const s of samples) if (s.index !== null) position.set(s.index, s.position);
  const rawAt = (s: RolloutSample): number | null => {
    if (!rawRewards || s.index === null) return null;
    const v = rawRewards[position.get(s.index)!];
    return typeof v === 'number' ? finite(v) : typeof v === 'boolean' ? (v ? 1 : 0) : typeof v === 'bigint' ? Number(v) : null;
  };
  const rows = samples.map((s): TableRow => {
    const d = s.index === null ? undefined : digests.get(s.index);
    return summaryRow(s, rolloutId, d, d ? rawAt(s) : null);
  });
  // A table has one column order; like the reference's frame, it is the first row's. Rows built alike
  // already have it; only the others (and any with a missing value) are rebuilt.
  const columns = rows.length === 0 ? [] : Object.keys(rows[0]);
  const firstHasTrain = rows.length > 0 && samples[0].index !== null && digests.has(samples[0].index);
  const ordered = rows.map((r, i) => {
    const s = samples[i];
    const hasTrain = s.index !== null && digests.has(s.index);
    if (hasTrain === firstHasTrain && columns.every((c) => r[c] !== undefined)) return r;
    return Object.fromEntries(columns.map((c) => [c, r[c] ?? null]));
  });
  return { rollout_id: rolloutId, evaluation, columns, rows: ordered };
}

function numbers(rows: readonly TableRow[], column: string): number[] {
  const out: number[] = [];
  for (const r of rows) {
    const v = r[column];
    if (typeof v === 'number') out.push(v);
    else if (typeof v === 'boolean') out.push(v ? 1 : 0);
  }
  return out;
}

function stdDdof1(xs: number[]): number | null {
  if (xs.length < 2) return null;
  return sampleStd(xs);
}

/** Per-group reward statistics; a group whose rewards do not vary (or that has one sample) is zero-std. */
export function rolloutGroups(summary: RolloutTable): RolloutTable {
  const rewardColumn = summary.evaluation ? 'reward' : 'raw_reward';
  const byGroup = new Map<number | null, TableRow[]>();
  for (const r of summary.rows) {
    const g = r.group_index as number | null;
    let list = byGroup.get(g);
    if (!list) byGroup.set(g, (list = []));
    list.push(r);
  }
  const keys = [...byGroup.keys()].sort((a, b) => (a === null ? -1 : b === null ? 1 : a - b));
  const rows = keys.map((g): TableRow => {
    const members = byGroup.get(g)!;
    const rewards = numbers(members, rewardColumn);
    const rewardMean = mean(rewards);
    const rewardStd = stdDdof1(rewards);
    return {
      group_index: g,
      n: members.length,
      reward_mean: finite(rewardMean),
      reward_std: finite(rewardStd),
      response_length_mean: finite(mean(numbers(members, 'response_length'))),
      truncated_frac: finite(mean(numbers(members, 'truncated'))),
      zero_std: rewardMean !== null && (rewardStd ?? 0) <= 1e-12,
    };
  });
  return {
    rollout_id: summary.rollout_id,
    evaluation: summary.evaluation,
    columns: rows.length ? [...GROUP_COLUMNS] : [],
    rows,
  };
}

/** The `dump/*` row of one train step: means of per-sample values (not token-weighted). */
export function stepAggregate(summary: RolloutTable, groups: RolloutTable): StepAggregate {
  const rows = summary.rows;
  const rewards = numbers(rows, 'raw_reward');
  return {
    rollout_id: summary.rollout_id,
    n_samples: rows.length,
    reward_mean: finite(mean(rewards)),
    reward_std: finite(stdDdof1(rewards)),
    response_length_mean: finite(mean(numbers(rows, 'response_length'))),
    truncated_frac: finite(mean(numbers(rows, 'truncated'))),
    zero_std_group_frac: finite(mean(numbers(groups.rows, 'zero_std'))),
    mean_abs_lp_diff: finite(mean(numbers(rows, 'mean_abs_lp_diff'))),
    mean_entropy: finite(mean(numbers(rows, 'mean_entropy'))),
    mixed_version_frac: finite(mean(numbers(rows, 'mixed_version'))),
  };
}

export interface MetricSeries {
  x: number[];
  y: number[];
  ts: number[];
}

/** Whether `name` (without the `dump/` prefix) is a step aggregate. */
export function isStepAggregateMetric(name: string): name is StepAggregateMetric {
  return (STEP_AGGREGATE_METRICS as readonly string[]).includes(name);
}

/** The series of one `dump/<metric>` key: x = rollout id, null points skipped, no timestamps. */
export function stepAggregateSeries(aggregates: readonly StepAggregate[], metric: StepAggregateMetric): MetricSeries {
  const x: number[] = [];
  const y: number[] = [];
  for (const a of aggregates) {
    const v = a[metric];
    if (v === null) continue;
    x.push(a.rollout_id);
    y.push(v);
  }
  return { x, y, ts: [] };
}

/** The series of a `dump/<metric>` key; an unknown metric is a bad argument. */
export function dumpMetricSeries(aggregates: readonly StepAggregate[], key: string): MetricSeries {
  const name = key.startsWith('dump/') ? key.slice('dump/'.length) : key;
  if (!isStepAggregateMetric(name)) throw new BadArgument('keys', `unknown dump metric '${key}'`);
  return stepAggregateSeries(aggregates, name);
}
