// Writes a table of scalar cells as one parquet file (hyparquet-writer): numbers as DOUBLE, booleans as
// BOOLEAN, text as UTF-8 strings; a column mixing kinds is written as text. Nulls stay nulls. A column the
// caller names integral (a step, an index, a length) is INT32, or INT64 beyond its range, when every value
// in it is a whole number; otherwise DOUBLE, so no value changes.
import { parquetWriteBuffer } from 'hyparquet-writer';

export type ParquetCell = number | string | boolean | null;

type ColumnType = 'DOUBLE' | 'BOOLEAN' | 'STRING' | 'INT32' | 'INT64';

const INT32_MIN = -(2 ** 31);
const INT32_MAX = 2 ** 31 - 1;

/** INT32 or INT64 when every number of a DOUBLE column is a safe integer (null otherwise). */
function integerType(values: readonly ParquetCell[]): 'INT32' | 'INT64' | null {
  let wide = false;
  for (const v of values) {
    if (v === null) continue;
    if (!Number.isSafeInteger(v) || Object.is(v, -0)) return null;
    if ((v as number) < INT32_MIN || (v as number) > INT32_MAX) wide = true;
  }
  return wide ? 'INT64' : 'INT32';
}

function columnType(values: readonly ParquetCell[]): ColumnType {
  let kind: ColumnType | null = null;
  for (const v of values) {
    if (v === null) continue;
    const k: ColumnType = typeof v === 'number' ? 'DOUBLE' : typeof v === 'boolean' ? 'BOOLEAN' : 'STRING';
    if (kind === null) kind = k;
    else if (kind !== k) return 'STRING';
  }
  return kind ?? 'DOUBLE';
}

export function encodeParquet(columns: readonly string[], rows: readonly (readonly ParquetCell[])[], integral: ReadonlySet<string> = new Set()): Uint8Array {
  const columnData = columns.map((name, i) => {
    const values = rows.map((r) => r[i] ?? null);
    let type: ColumnType = columnType(values);
    if (type === 'DOUBLE' && integral.has(name)) type = integerType(values) ?? 'DOUBLE';
    const data =
      type === 'STRING' ? values.map((v) => (v === null ? null : String(v))) : type === 'INT64' ? values.map((v) => (v === null ? null : BigInt(v as number))) : values;
    return { name, data, type, nullable: true };
  });
  return new Uint8Array(parquetWriteBuffer({ columnData }));
}
