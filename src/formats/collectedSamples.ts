// rlsight's collected samples: one Parquet file per rollout step (`samples/rollout_{id}.parquet`,
// `samples/eval_{id}.parquet`, zstd), one row per sample in batch order, written whole under a temporary
// name and renamed (a step's file is complete or absent; `{name}.pending` says its samples are still
// arriving). Typed columns serve DuckDB, pandas or Spark; `sample` holds every other field of the sample as
// Python writes JSON, so a reader gets back exactly what the trainer recorded. The writer is
// collectedSamplesWrite.ts (apart, so a reader never loads the Parquet writer).
import { parsePyJson, PyFloat, type PyJson } from './pythonJson.ts';

export const SAMPLES_DIR = 'samples';
export const PENDING_SUFFIX = '.pending';

/** `rollout_000003.parquet` / `eval_000000.parquet`. */
export function sampleStepFile(rolloutId: number, evaluation: boolean): string {
  return `${evaluation ? 'eval' : 'rollout'}_${String(rolloutId).padStart(6, '0')}.parquet`;
}

/** The step a file name in `samples/` is for (a `.pending` marker included), or null. */
export function parseSampleStepFile(name: string): { rolloutId: number; evaluation: boolean; pending: boolean } | null {
  const m = /^(rollout|eval)_(\d{6,15})\.parquet(\.pending)?$/.exec(name);
  if (m === null) return null;
  return { rolloutId: Number(m[2]), evaluation: m[1] === 'eval', pending: m[3] !== undefined };
}

/** Per-token columns: lists of numbers, taken out of `sample` (INT32 for ids and masks, DOUBLE otherwise). */
export const TOKEN_COLUMNS = {
  tokens: 'INT32',
  loss_mask: 'INT32',
  rollout_log_probs: 'DOUBLE',
  log_probs: 'DOUBLE',
  ref_log_probs: 'DOUBLE',
  entropy: 'DOUBLE',
  advantages: 'DOUBLE',
} as const;
export type TokenColumn = keyof typeof TOKEN_COLUMNS;
export const TOKEN_NAMES = Object.keys(TOKEN_COLUMNS) as TokenColumn[];

export type SampleFields = { [key: string]: PyJson };

/** A row read back (hyparquet objects) as the sample's fields, in their recorded form. */
export function sampleFieldsOfRow(row: Record<string, unknown>): SampleFields {
  const fields = parsePyJson(String(row.sample ?? '{}'), true);
  if (fields === null || typeof fields !== 'object' || Array.isArray(fields) || fields instanceof PyFloat) throw new Error('column sample is not a JSON object');
  for (const k of TOKEN_NAMES) {
    const v = row[k];
    // a float list keeps its integral values as floats (as Python wrote them: `0.0`, not `0`)
    if (Array.isArray(v)) fields[k] = TOKEN_COLUMNS[k] === 'DOUBLE' ? v.map((x) => (Number.isInteger(x) ? new PyFloat(Number(x)) : Number(x))) : v.map(Number);
  }
  return fields;
}

/** The columns a reader needs to rebuild the samples (the typed copies are for other tools). */
export const SAMPLE_READ_COLUMNS = ['position', ...TOKEN_NAMES, 'sample'];
