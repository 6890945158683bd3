// rlsight's collected samples: one Parquet file per rollout step (`samples/rollout_{id}.parquet`,
// `samples/eval_{id}.parquet`, zstd), one row per sample in batch order, written whole under a temporary
// name and renamed (a step's file is complete or absent; `{name}.pending` says its samples are still
// arriving). Typed columns serve DuckDB, pandas or Spark; `sample` holds every other field of the sample as
// Python writes JSON, so a reader gets back exactly what the trainer recorded.
import { parquetWriteBuffer } from 'hyparquet-writer';
import { parsePyJson, PyFloat, pyDumps, type PyJson } from './pythonJson.ts';

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
type TokenColumn = keyof typeof TOKEN_COLUMNS;
const TOKEN_NAMES = Object.keys(TOKEN_COLUMNS) as TokenColumn[];

/** Copies of sample fields for queries (the values themselves stay in `sample`). */
const SCALAR_COLUMNS = [
  ['index', 'INT64'],
  ['group_index', 'INT64'],
  ['status', 'STRING'],
  ['reward', 'DOUBLE'],
  ['response_length', 'INT64'],
  ['prompt', 'STRING'],
  ['response', 'STRING'],
] as const;

export type SampleFields = { [key: string]: PyJson };

function scalar(v: PyJson | undefined, type: 'INT64' | 'DOUBLE' | 'STRING'): bigint | number | string | null {
  if (v === undefined || v === null) return null;
  const n = v instanceof PyFloat ? v.value : typeof v === 'number' ? v : typeof v === 'boolean' && type !== 'STRING' ? Number(v) : null;
  if (type === 'STRING') return typeof v === 'string' ? v : pyDumps(v);
  if (n === null || !Number.isFinite(n)) return null;
  if (type === 'INT64') return Number.isInteger(n) ? BigInt(n) : null;
  return n;
}

function numberList(v: PyJson | undefined): number[] | null {
  if (!Array.isArray(v)) return null;
  const out: number[] = [];
  for (const x of v) {
    const n = x instanceof PyFloat ? x.value : typeof x === 'number' ? x : typeof x === 'boolean' ? Number(x) : null;
    if (n === null) return null;
    out.push(n);
  }
  return out;
}

/** Whether every value fits an INT32 list column. */
const int32s = (xs: number[]): boolean => xs.every((x) => Number.isInteger(x) && x >= -2147483648 && x <= 2147483647);

/** One step's samples as a Parquet file (pages compressed with `zstd` when given). */
export function encodeSampleStep(samples: readonly SampleFields[], zstd?: (input: Uint8Array) => Uint8Array): Uint8Array {
  const tokenData: Record<TokenColumn, (number[] | null)[]> = Object.fromEntries(TOKEN_NAMES.map((k) => [k, []])) as never;
  const rest: string[] = [];
  for (const s of samples) {
    const left: SampleFields = {};
    for (const [k, v] of Object.entries(s)) {
      const list = (TOKEN_COLUMNS as Record<string, string>)[k] !== undefined ? numberList(v) : null;
      // a per-token value that is not a list of numbers (or ints that do not fit) stays in `sample` as it is
      if (list !== null && (TOKEN_COLUMNS[k as TokenColumn] !== 'INT32' || int32s(list))) tokenData[k as TokenColumn].push(list);
      else left[k] = v;
    }
    for (const k of TOKEN_NAMES) if (tokenData[k].length < rest.length + 1) tokenData[k].push(null);
    rest.push(pyDumps(left));
  }
  const columnData = [
    { name: 'position', data: Int32Array.from(samples, (_, i) => i) },
    ...SCALAR_COLUMNS.map(([name, type]) => ({ name, data: samples.map((s) => scalar(s[name], type)) })),
    ...TOKEN_NAMES.map((name) => ({ name, data: tokenData[name] })),
    { name: 'sample', data: rest },
  ];
  const schema = [
    { name: 'root', num_children: columnData.length },
    { name: 'position', type: 'INT32', repetition_type: 'REQUIRED' },
    ...SCALAR_COLUMNS.map(([name, type]) =>
      type === 'STRING' ? { name, type: 'BYTE_ARRAY', converted_type: 'UTF8', repetition_type: 'OPTIONAL' } : { name, type, repetition_type: 'OPTIONAL' },
    ),
    ...TOKEN_NAMES.flatMap((name) => [
      { name, repetition_type: 'OPTIONAL', converted_type: 'LIST', num_children: 1 },
      { name: 'list', repetition_type: 'REPEATED', num_children: 1 },
      { name: 'element', type: TOKEN_COLUMNS[name], repetition_type: 'REQUIRED' },
    ]),
    { name: 'sample', type: 'BYTE_ARRAY', converted_type: 'UTF8', repetition_type: 'REQUIRED' },
  ];
  const buf = parquetWriteBuffer({
    columnData: columnData as never,
    schema: schema as never,
    ...(zstd ? { codec: 'ZSTD', compressors: { ZSTD: zstd } } : {}),
  } as never);
  return new Uint8Array(buf);
}

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
