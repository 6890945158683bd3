// Tables for the tools teams already use: the run's metrics W&B-style (one row per step key and step), one step's rollout
// table, TensorBoard scalars, and one sample as JSON. Pure: encoders in src/formats turn them into bytes.
import { encodeCsv } from '../formats/csv.ts';
import { encodeParquet, type DeclaredType } from '../formats/parquetWrite.ts';
import { encodeEventFile, type ScalarEvent } from '../formats/tfevents.ts';
import type { MetricsRecord } from '../run/model.ts';
import { unreadStepProblem } from '../run/errors.ts';
import type { TraceAnswer } from '../wire/trace.ts';
import type { RunSources } from './runAnswers.ts';
import { BadArgument } from './limits.ts';
import type { MetricsAnswer } from '../wire/metrics.ts';
import { MFU_STEP_KEY } from './advisory.ts';
import { NoConversationRecorded } from './messages.ts';
import { DUMP_METRIC_PREFIX } from './metrics.ts';
import { STEP_AGGREGATE_METRICS, SUMMARY_COLUMNS_WITH_TRAIN, type StepAggregate } from './rollouts.ts';

export type ExportCell = number | string | boolean | null;

export interface ExportTable {
  columns: string[];
  rows: ExportCell[][];
  /** The Parquet type of the columns whose kind is known by name (every file alike); the others' from their values. */
  types?: Readonly<Record<string, DeclaredType>>;
}

export const TABLE_FORMATS = ['csv', 'parquet'] as const;
export type TableFormat = (typeof TABLE_FORMATS)[number];

export function tableFormat(raw: string | undefined, param = 'format'): TableFormat {
  const f = raw ?? 'csv';
  if (!(TABLE_FORMATS as readonly string[]).includes(f)) throw new BadArgument(param, `${param}: expected csv or parquet, got '${f}'`);
  return f as TableFormat;
}

export const STEP_COLUMN = '_step';
/** The step key (`rollout/step`, `train/step`, …) a metrics row's `_step` counts. */
export const STEP_KEY_COLUMN = '_step_key';

function cellOf(v: unknown): ExportCell {
  if (v === null || v === undefined) return null;
  if (typeof v === 'number' || typeof v === 'string' || typeof v === 'boolean') return v;
  if (typeof v === 'bigint') return Number(v);
  return JSON.stringify(v);
}

/** Step keys in row order: named ones ascending, then records logged with a step and no key. */
function stepKeyOrder(a: string | null, b: string | null): number {
  if (a === b) return 0;
  if (a === null) return 1;
  if (b === null) return -1;
  return a < b ? -1 : 1;
}

/**
 * The run's metrics with one row per step key and step (`_step_key`, `_step`), ordered by step key then step, and
 * one column per logged key, per `dump/*` aggregate and per key of `series` (on `rollout/step`: metrics computed
 * from the dumps, such as a slime run's). A key has values in the rows of the step key it was logged against
 * only: `train/step` 7 (a train step of rollout 3 when a rollout takes two) is not `rollout/step` 7's row. The
 * `dump/*` aggregates are on `rollout/step` (their step is the rollout id); a key logged twice at a step keeps the last.
 */
export function metricsTable(records: readonly MetricsRecord[], aggregates: readonly StepAggregate[], series: MetricsAnswer = {}): ExportTable {
  const byKey = new Map<string | null, Map<number, Map<string, ExportCell>>>();
  const keys = new Set<string>();
  const row = (stepKey: string | null, step: number): Map<string, ExportCell> => {
    let steps = byKey.get(stepKey);
    if (!steps) byKey.set(stepKey, (steps = new Map()));
    let r = steps.get(step);
    if (!r) steps.set(step, (r = new Map()));
    return r;
  };
  for (const rec of records) {
    if (rec.step === null) continue;
    const r = row(rec.step_key, rec.step);
    for (const [k, v] of Object.entries(rec.metrics)) {
      keys.add(k);
      r.set(k, cellOf(v));
    }
  }
  for (const a of aggregates) {
    const r = row(MFU_STEP_KEY, a.rollout_id);
    for (const m of STEP_AGGREGATE_METRICS) {
      const k = DUMP_METRIC_PREFIX + m;
      keys.add(k);
      r.set(k, a[m]);
    }
  }
  for (const [k, s] of Object.entries(series)) {
    keys.add(k);
    s.x.forEach((step, i) => row(MFU_STEP_KEY, step).set(k, cellOf(s.y[i])));
  }
  const named = [...keys].sort();
  const rows: ExportCell[][] = [];
  for (const stepKey of [...byKey.keys()].sort(stepKeyOrder)) {
    const steps = byKey.get(stepKey)!;
    for (const step of [...steps.keys()].sort((a, b) => a - b)) {
      const r = steps.get(step)!;
      rows.push([stepKey, step, ...named.map((k) => r.get(k) ?? null)]);
    }
  }
  return { columns: [STEP_KEY_COLUMN, STEP_COLUMN, ...named], rows, types: { [STEP_KEY_COLUMN]: 'STRING', [STEP_COLUMN]: 'INTEGER' } };
}

/**
 * A metrics table with no two column names alike as DuckDB and Spark compare them (ignoring case): of the columns
 * named alike — a metric key `_step` beside the step column, `train/loss` beside `train/Loss` — the step columns,
 * else the one holding the most values (the run's history, not a stray record), keeps its name, and the others are
 * written as `NAME#2` (`#3`, … the first name no column has). Each rename is said in a warning naming both.
 */
export function withDistinctColumns(table: ExportTable): { table: ExportTable; warnings: string[] } {
  const fold = (c: string): string => c.toLowerCase();
  // the values each column holds (the step columns always keep their names), counted once
  const counts = table.columns.map((_, i) => (i < 2 ? Infinity : table.rows.reduce((n, r) => n + (r[i] === null ? 0 : 1), 0)));
  const filled = (i: number): number => counts[i]!;
  // who keeps each folded name: the most values, the first column on a tie
  const keeper = new Map<string, number>();
  table.columns.forEach((c, i) => {
    const k = keeper.get(fold(c));
    if (k === undefined || filled(i) > filled(k)) keeper.set(fold(c), i);
  });
  const every = new Set(table.columns.map(fold));
  const warnings: string[] = [];
  const columns = table.columns.map((c, i) => {
    const kept = keeper.get(fold(c))!;
    if (kept === i) return c;
    let n = 2;
    while (every.has(fold(`${c}#${n}`))) n++;
    const renamed = `${c}#${n}`;
    every.add(fold(renamed));
    const first = table.columns[kept]!;
    const other = first === STEP_COLUMN || first === STEP_KEY_COLUMN ? `the ${first} column` : `metric key '${first}'${filled(kept) > filled(i) ? ', which holds more values' : ''}`;
    warnings.push(`metric key '${c}' is written as column '${renamed}': DuckDB and Spark, which ignore case in column names, would not tell it from ${other}`);
    return renamed;
  });
  return warnings.length === 0 ? { table, warnings } : { table: { ...table, columns }, warnings };
}

/**
 * TensorBoard scalars of a metrics table: one event per row (a step of one step key) with every numeric cell of
 * it (tags are the column names; NaN and ±inf as they are, which TensorBoard shows). `wallTimes` by `stepTimeKey`.
 */
export function scalarEvents(table: ExportTable, wallTimes: ReadonlyMap<string, number>, fallbackWallTime: number): ScalarEvent[] {
  return table.rows.map((r) => {
    const stepKey = r[0] as string | null;
    const step = r[1] as number;
    const scalars = new Map<string, number>();
    table.columns.forEach((c, i) => {
      const v = r[i];
      if (i < 2) return;
      if (typeof v === 'number') scalars.set(c, v);
      else if (typeof v === 'boolean') scalars.set(c, v ? 1 : 0);
    });
    return { step, wallTime: wallTimes.get(stepTimeKey(stepKey, step)) ?? fallbackWallTime, scalars };
  });
}

/** A step of one step key, as `stepWallTimes` keys it. */
export function stepTimeKey(stepKey: string | null, step: number): string {
  return JSON.stringify([stepKey, step]);
}

/** When each step of each step key was logged (its newest record), for the events' wall_time; keyed by `stepTimeKey`. */
export function stepWallTimes(records: readonly MetricsRecord[]): Map<string, number> {
  const out = new Map<string, number>();
  for (const r of records) {
    if (r.step === null) continue;
    const key = stepTimeKey(r.step_key, r.step);
    out.set(key, Math.max(out.get(key) ?? -Infinity, r.ts));
  }
  return out;
}

export function encodeTable(table: ExportTable, format: TableFormat): Uint8Array {
  if (format === 'csv') return new TextEncoder().encode(encodeCsv(table.columns, table.rows));
  return encodeParquet(table.columns, table.rows, table.types);
}

/** The run's metrics table: every key the app lists for the run (logged keys, `dump/*` aggregates, metrics computed from its dumps). */
async function runMetricsRows(run: RunSources): Promise<ExportTable> {
  const records = run.metricsRecords();
  const aggregates = await run.stepAggregates();
  const logged = new Set(metricsTable(records, aggregates).columns);
  for (const r of records) for (const k of Object.keys(r.metrics)) logged.add(k);
  // Keys no record carries (a slime run's perf/, rollout/ and eval/, computed from its dumps) come from the series the charts draw.
  const listed = (await run.meta({ follow: false, useUtilizationOverview: false })).metric_keys;
  const computed = listed.filter((k) => !logged.has(k));
  const series = computed.length > 0 ? await run.metrics({ keys: computed, x: MFU_STEP_KEY }) : {};
  return metricsTable(records, aggregates, series);
}

/**
 * The run's metrics as a CSV or Parquet table (`metricsTable`, its column names made distinct), and a warning for
 * each key written under another name: the CLI's file and the app's download alike.
 */
export async function runMetricsTable(run: RunSources): Promise<{ table: ExportTable; warnings: string[] }> {
  return withDistinctColumns(await runMetricsRows(run));
}

/**
 * Every rollout table column's Parquet type, fixed by its name: a column null in every row of one step (a run
 * without weight versions has no `mixed_version`) is of the same type as in the next step's file, so the files
 * read as one table. A whole-number column is INT32 (INT64 past its range).
 */
export const ROLLOUT_COLUMN_TYPES: Readonly<Record<string, DeclaredType>> = {
  sample_index: 'INTEGER',
  group_index: 'INTEGER',
  status: 'STRING',
  remove_sample: 'BOOLEAN',
  response_length: 'INTEGER',
  total_length: 'INTEGER',
  reward: 'DOUBLE',
  weight_version: 'STRING',
  weight_version_min: 'INTEGER',
  mixed_version: 'BOOLEAN',
  staleness: 'INTEGER',
  turns: 'INTEGER',
  tool_calls: 'INTEGER',
  non_generation_time: 'DOUBLE',
  spec_accept_rate: 'DOUBLE',
  prefix_cache_hit_rate: 'DOUBLE',
  raw_reward: 'DOUBLE',
  normalized_reward: 'DOUBLE',
  truncated: 'BOOLEAN',
  dumped_rank: 'INTEGER',
  mean_entropy: 'DOUBLE',
  max_entropy: 'DOUBLE',
  ref_entropy_mean: 'DOUBLE',
  mean_abs_lp_diff: 'DOUBLE',
  max_abs_lp_diff: 'DOUBLE',
  mean_imp_ratio: 'DOUBLE',
  adv_mean: 'DOUBLE',
  adv_std: 'DOUBLE',
  return_mean: 'DOUBLE',
  alignment_failed: 'BOOLEAN',
};

/**
 * A rollout table's columns in one order whatever the step holds: the Rollouts view puts `truncated` last
 * for a step without train data (an eval step, a slime run, a step whose train dumps are missing) and after
 * `normalized_reward` otherwise, but a script reading exports by position needs every file alike.
 */
function inRolloutExportOrder(table: ExportTable): ExportTable {
  const order: readonly string[] = SUMMARY_COLUMNS_WITH_TRAIN;
  const rank = (c: string): number => (order.includes(c) ? order.indexOf(c) : order.length);
  const picked = table.columns.map((_, i) => i).sort((a, b) => rank(table.columns[a]) - rank(table.columns[b]) || a - b);
  if (picked.every((from, i) => from === i)) return table;
  return { ...table, columns: picked.map((i) => table.columns[i]), rows: table.rows.map((r) => picked.map((i) => r[i])) };
}

/**
 * One step's rollout table, the Rollouts view's rows, in the column order every export of it shares (the CLI's
 * file and the app's download alike).
 */
export async function rolloutTable(run: RunSources, step: number, evaluation: boolean): Promise<ExportTable> {
  const t = await run.summary(step, evaluation);
  const table = inRolloutExportOrder({ columns: [...t.columns], rows: t.rows.map((r) => t.columns.map((c) => cellOf(r[c]))) });
  return { ...table, types: ROLLOUT_COLUMN_TYPES };
}

/**
 * When each step was logged: its newest record; a train step no record logged (a slime run's metrics are
 * computed from its dumps: their rows are on `rollout/step`) when its last request trace ended.
 */
async function runStepWallTimes(run: RunSources): Promise<Map<string, number>> {
  const out = stepWallTimes(run.metricsRecords());
  if (!run.hasTraces) return out;
  const meta = await run.meta({ follow: false, useUtilizationOverview: false });
  for (const id of meta.rollout_ids.train) {
    const key = stepTimeKey(MFU_STEP_KEY, id);
    if (out.has(key)) continue;
    let trace: TraceAnswer;
    try {
      trace = await run.trace(id, false);
    } catch (e) {
      if (unreadStepProblem(e) === null) throw e;
      continue; // an unread step's problem is the metrics table's to report
    }
    let end = -Infinity;
    for (const row of trace.rows) end = Math.max(end, trace.t0 + row.end);
    if (Number.isFinite(end)) out.set(key, end);
  }
  return out;
}

/**
 * The run as one TensorBoard event file: the metrics table's rows as events, each key a tag under its own name
 * (TensorBoard tells `train/Loss` from `train/loss`) at the steps of the step key it was logged against.
 */
export async function runEventFile(run: RunSources, createdAt: number): Promise<Uint8Array> {
  const table = await runMetricsRows(run);
  const events = scalarEvents(table, await runStepWallTimes(run), createdAt);
  return encodeEventFile(events, createdAt);
}

/** One sample as JSON: its summary row, recorded conversation (when there is one) and per-token series. */
export async function sampleDocument(run: RunSources, step: number, sampleIndex: number, evaluation: boolean): Promise<Record<string, unknown>> {
  const tokens = await run.tokens(step, sampleIndex, { start: 0, evaluation });
  const summary = await run.summary(step, evaluation);
  const row = summary.rows.find((r) => r.sample_index === sampleIndex) ?? null;
  let conversation: unknown = null;
  try {
    conversation = await run.messages(step, sampleIndex, evaluation);
  } catch (e) {
    // A sample without a recorded conversation still exports its tokens.
    if (!(e instanceof NoConversationRecorded)) throw e;
  }
  return { run: run.name, step, evaluation, sample_index: sampleIndex, summary: row, conversation, tokens };
}
