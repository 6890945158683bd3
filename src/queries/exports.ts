// Tables for the tools teams already use: the run's metrics W&B-style (one row per step), one step's rollout
// table, TensorBoard scalars, and one sample as JSON. Pure: encoders in src/formats turn them into bytes.
import { encodeCsv } from '../formats/csv.ts';
import { encodeParquet } from '../formats/parquetWrite.ts';
import { encodeEventFile, type ScalarEvent } from '../formats/tfevents.ts';
import type { MetricsRecord } from '../run/model.ts';
import { unreadStepProblem } from '../run/errors.ts';
import type { TraceAnswer } from '../wire/trace.ts';
import type { RunSources } from './runAnswers.ts';
import { BadArgument } from './limits.ts';
import type { MetricsAnswer } from '../wire/metrics.ts';
import { MFU_STEP_KEY } from './advisory.ts';
import { DUMP_METRIC_PREFIX } from './metrics.ts';
import { STEP_AGGREGATE_METRICS, type StepAggregate } from './rollouts.ts';

export type ExportCell = number | string | boolean | null;

export interface ExportTable {
  columns: string[];
  rows: ExportCell[][];
}

export const TABLE_FORMATS = ['csv', 'parquet'] as const;
export type TableFormat = (typeof TABLE_FORMATS)[number];

export function tableFormat(raw: string | undefined, param = 'format'): TableFormat {
  const f = raw ?? 'csv';
  if (!(TABLE_FORMATS as readonly string[]).includes(f)) throw new BadArgument(param, `${param}: expected csv or parquet, got '${f}'`);
  return f as TableFormat;
}

export const STEP_COLUMN = '_step';

function cellOf(v: unknown): ExportCell {
  if (v === null || v === undefined) return null;
  if (typeof v === 'number' || typeof v === 'string' || typeof v === 'boolean') return v;
  if (typeof v === 'bigint') return Number(v);
  return JSON.stringify(v);
}

/**
 * The run's metrics with one row per step (`_step`), one column per logged key, per `dump/*` aggregate and per
 * key of `series` (steps as x: metrics computed from the dumps, such as a slime run's). Records logged against
 * any step key share a row by step number; a key logged twice at a step keeps the last.
 */
export function metricsTable(records: readonly MetricsRecord[], aggregates: readonly StepAggregate[], series: MetricsAnswer = {}): ExportTable {
  const byStep = new Map<number, Map<string, ExportCell>>();
  const keys = new Set<string>();
  const row = (step: number): Map<string, ExportCell> => {
    let r = byStep.get(step);
    if (!r) byStep.set(step, (r = new Map()));
    return r;
  };
  for (const rec of records) {
    if (rec.step === null) continue;
    const r = row(rec.step);
    for (const [k, v] of Object.entries(rec.metrics)) {
      keys.add(k);
      r.set(k, cellOf(v));
    }
  }
  for (const a of aggregates) {
    const r = row(a.rollout_id);
    for (const m of STEP_AGGREGATE_METRICS) {
      const k = DUMP_METRIC_PREFIX + m;
      keys.add(k);
      r.set(k, a[m]);
    }
  }
  for (const [k, s] of Object.entries(series)) {
    keys.add(k);
    s.x.forEach((step, i) => row(step).set(k, cellOf(s.y[i])));
  }
  const columns = [STEP_COLUMN, ...[...keys].sort()];
  const rows = [...byStep.keys()].sort((a, b) => a - b).map((s) => {
    const r = byStep.get(s)!;
    return [s, ...columns.slice(1).map((k) => r.get(k) ?? null)];
  });
  return { columns, rows };
}

/** TensorBoard scalars: one event per step with every numeric cell of its row (tags are the column names; NaN and ±inf as they are, which TensorBoard shows). */
export function scalarEvents(table: ExportTable, wallTimes: ReadonlyMap<number, number>, fallbackWallTime: number): ScalarEvent[] {
  return table.rows.map((r) => {
    const step = r[0] as number;
    const scalars = new Map<string, number>();
    table.columns.forEach((c, i) => {
      const v = r[i];
      if (i === 0) return;
      if (typeof v === 'number') scalars.set(c, v);
      else if (typeof v === 'boolean') scalars.set(c, v ? 1 : 0);
    });
    return { step, wallTime: wallTimes.get(step) ?? fallbackWallTime, scalars };
  });
}

/** When each step was logged (its newest record), for the events' wall_time. */
export function stepWallTimes(records: readonly MetricsRecord[]): Map<number, number> {
  const out = new Map<number, number>();
  for (const r of records) if (r.step !== null) out.set(r.step, Math.max(out.get(r.step) ?? -Infinity, r.ts));
  return out;
}

/** Columns that hold whole numbers by nature (steps, indices, counts, lengths): Parquet integers, not doubles. */
const INTEGRAL_COLUMNS: ReadonlySet<string> = new Set([
  STEP_COLUMN,
  'sample_index',
  'group_index',
  'response_length',
  'total_length',
  'weight_version_min',
  'staleness',
  'turns',
  'tool_calls',
  'dumped_rank',
]);

export function encodeTable(table: ExportTable, format: TableFormat): Uint8Array {
  if (format === 'csv') return new TextEncoder().encode(encodeCsv(table.columns, table.rows));
  return encodeParquet(table.columns, table.rows, INTEGRAL_COLUMNS);
}

/** The run's metrics table: every key the app lists for the run (logged keys, `dump/*` aggregates, metrics computed from its dumps). */
export async function runMetricsTable(run: RunSources): Promise<ExportTable> {
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

/** One step's rollout table, as the Rollouts view shows it. */
export async function rolloutTable(run: RunSources, step: number, evaluation: boolean): Promise<ExportTable> {
  const t = await run.summary(step, evaluation);
  return { columns: [...t.columns], rows: t.rows.map((r) => t.columns.map((c) => cellOf(r[c]))) };
}

/**
 * When each step was logged: its newest record; a train step no record logged (a slime run's metrics are
 * computed from its dumps) when its last request trace ended.
 */
async function runStepWallTimes(run: RunSources): Promise<Map<number, number>> {
  const out = stepWallTimes(run.metricsRecords());
  if (!run.hasTraces) return out;
  const meta = await run.meta({ follow: false, useUtilizationOverview: false });
  for (const id of meta.rollout_ids.train) {
    if (out.has(id)) continue;
    let trace: TraceAnswer;
    try {
      trace = await run.trace(id, false);
    } catch (e) {
      if (unreadStepProblem(e) === null) throw e;
      continue; // an unread step's problem is the metrics table's to report
    }
    let end = -Infinity;
    for (const row of trace.rows) end = Math.max(end, trace.t0 + row.end);
    if (Number.isFinite(end)) out.set(id, end);
  }
  return out;
}

/** The run as one TensorBoard event file. */
export async function runEventFile(run: RunSources, createdAt: number): Promise<Uint8Array> {
  const table = await runMetricsTable(run);
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
    if (!(e instanceof Error && e.name === 'DumpNotFound')) throw e;
  }
  return { run: run.name, step, evaluation, sample_index: sampleIndex, summary: row, conversation, tokens };
}
