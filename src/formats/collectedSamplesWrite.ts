// One step's collected samples as a Parquet file (the layout is described in collectedSamples.ts).
import { parquetWriteBuffer } from 'hyparquet-writer';
import { TOKEN_COLUMNS, TOKEN_NAMES, type SampleFields, type TokenColumn } from './collectedSamples.ts';
import { PyFloat, pyDumps, type PyJson } from './pythonJson.ts';

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

function scalar(v: PyJson | undefined, type: 'INT64' | 'DOUBLE' | 'STRING'): bigint | number | string | null {
  if (v === undefined || v === null) return null;
  const n = v instanceof PyFloat ? v.value : typeof v === 'number' ? v : typeof v === 'boolean' && type !== 'STRING' ? Number(v) : null;
  if (type === 'STRING') return typeof v === 'string' ? v : pyDumps(v);
  if (n === null || !Number.isFinite(n)) return null;
  // an integer an INT64 cannot hold (a 64-bit hash as a sample id) leaves the copy empty: `sample` keeps the value
  if (type === 'INT64') return Number.isInteger(n) && n >= INT64_MIN && n < -INT64_MIN ? BigInt(n) : null;
  return n;
}

const INT64_MIN = -(2 ** 63);

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

