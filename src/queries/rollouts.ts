// Per-sample, per-group and per-step views of one rollout step (the rollouts table and the dump/* metrics).
import { BadArgument } from './limits.ts';
import type { SampleRecord, StepRecords, TrainDigest } from '../run/model.ts';
import type { StepAggregateMetric } from '../wire/metrics.ts';
import type { RolloutTable, TableRow } from '../wire/rollout.ts';

export type { RolloutTable, TableRow };

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

/** The weight versions that are plain non-negative integers, as numbers. */
function numericVersions(versions: readonly string[]): number[] {
  return versions.filter((v) => /^[0-9]+$/.test(v)).map((v) => parseInt(v, 10));
}

/**
 * What a step's staleness is measured from: its rollout id when weight versions are rollout ids; else (they
 * count weight updates) the newest version any of its samples was generated with, null when none has one.
 */
function stalenessOrigin(step: StepRecords): number | null {
  if (step.weightVersionScale !== 'update') return step.rolloutId;
  let newest: number | null = null;
  for (const s of step.samples) for (const v of numericVersions(s.weightVersions)) if (newest === null || v > newest) newest = v;
  return newest;
}

/**
 * One summary row: the sample's columns, then the train columns (from its digest, or nulls), in the order
 * of SUMMARY_COLUMNS_WITH_TRAIN / SUMMARY_COLUMNS_WITHOUT_TRAIN. Written as two full literals: spreading a
 * shared base into 31 keys costs far more per row than the rest of the summary.
 */
function summaryRow(s: SampleRecord, stalenessFrom: number | null, d: TrainDigest | undefined, rawReward: number | null): TableRow {
  const versions = s.weightVersions;
  const numeric = numericVersions(versions);
  const vmin = numeric.length ? Math.min(...numeric) : null;
  const weightVersion = versions.length ? versions[versions.length - 1] : null;
  const mixed = versions.length ? new Set(versions).size > 1 : null;
  const staleness = vmin === null || stalenessFrom === null ? null : stalenessFrom - vmin;
  const turns = s.turns !== undefined ? s.turns : versions.length ? versions.length : null;
  const specAcceptRate = s.specDraftTokens ? finite((s.specAcceptTokens ?? 0) / s.specDraftTokens) : null;
  const prefixHitRate = s.totalPromptTokens ? finite((s.cachedTokens ?? 0) / s.totalPromptTokens) : null;
  // the rollout side's columns, first in both shapes
  const head = {
    sample_index: s.index,
    group_index: s.groupIndex,
    status: s.status,
    remove_sample: s.removeSample,
    response_length: s.responseLength,
    total_length: s.totalLength,
    reward: finite(s.reward),
    weight_version: weightVersion,
    weight_version_min: vmin,
    mixed_version: mixed,
    staleness,
    turns,
    tool_calls: s.toolCalls !== undefined ? s.toolCalls : s.promptToolMessages,
    non_generation_time: finite(s.nonGenerationTime),
    spec_accept_rate: specAcceptRate,
    prefix_cache_hit_rate: prefixHitRate,
  };
  if (d) {
    return {
      ...head,
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
    ...head,
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
 * One row per rollout sample, in batch order, with its train-side columns when the step has a digest for it
 * (the raw reward is the train side's batch-global value at the sample's position).
 */
export function rolloutSummary(step: StepRecords): RolloutTable {
  const { rolloutId, evaluation, samples, digests, rawRewards } = step;
  // Like the reference's {index: position} map, a repeated index resolves to its last position.
  const position = new Map<number, number>();
  for (const s of samples) if (s.index !== null) position.set(s.index, s.position);
  const rawAt = (s: SampleRecord): number | null => (!rawRewards || s.index === null ? null : finite(rawRewards[position.get(s.index)!]));
  const origin = stalenessOrigin(step);
  const rows = samples.map((s): TableRow => {
    const d = s.index === null ? undefined : digests.get(s.index);
    return summaryRow(s, origin, d, d ? rawAt(s) : null);
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
  const table: RolloutTable = { rollout_id: rolloutId, evaluation, columns, rows: ordered };
  if (step.weightVersionScale === 'update') table.staleness_from = 'newest_version';
  return table;
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

/**
 * Per-group reward statistics; a group of two or more samples whose rewards do not vary is zero-std.
 * A lone sample (an eval prompt sampled once) has no standard deviation: `zero_std` is null there,
 * where the reference flags it.
 */
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
      zero_std: members.length < 2 ? null : rewardMean !== null && (rewardStd ?? 0) <= 1e-12,
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

/** Tables kept per step record: a step the model keeps resident is assembled once. */
const tables = new WeakMap<StepRecords, { summary: RolloutTable; groups: RolloutTable }>();

/** The summary and groups tables of one step (assembled once per resident step record). */
export function stepTables(step: StepRecords): { summary: RolloutTable; groups: RolloutTable } {
  let t = tables.get(step);
  if (!t) {
    const summary = rolloutSummary(step);
    t = { summary, groups: rolloutGroups(summary) };
    tables.set(step, t);
  }
  return t;
}
