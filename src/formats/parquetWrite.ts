// Writes a table of scalar cells as one parquet file (hyparquet-writer): numbers as DOUBLE, booleans as
// BOOLEAN, text as UTF-8 strings; a column mixing kinds is written as text. Nulls stay nulls. A column the
// caller declares INTEGER (a step, an index, a length) is INT32, or INT64 beyond its range, when every value
// in it is a whole number; otherwise DOUBLE, so no value changes. A declared type holds whatever the values
// (a column null in every row keeps it); a value of another kind than declared (text in a DOUBLE column) makes
// the column's type the one its values give, so no value changes.
import { parquetWriteBuffer } from 'hyparquet-writer';

export type ParquetCell = number | string | boolean | null;

/** A column's type as a caller knows it by name. */
export type DeclaredType = 'INTEGER' | 'DOUBLE' | 'BOOLEAN' | 'STRING';

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

/** The kind the values have: null when every one is null, STRING when they mix kinds. */
function valuesType(values: readonly ParquetCell[]): 'DOUBLE' | 'BOOLEAN' | 'STRING' | null {
  let kind: 'DOUBLE' | 'BOOLEAN' | 'STRING' | null = null;
  for (const v of values) {
    if (v === null) continue;
    const k = typeof v === 'number' ? 'DOUBLE' : typeof v === 'boolean' ? 'BOOLEAN' : 'STRING';
    if (kind === null) kind = k;
    else if (kind !== k) return 'STRING';
  }
  return kind;
}

function columnType(values: readonly ParquetCell[], declared: DeclaredType | undefined): ColumnType {
  const kind = valuesType(values);
  if (declared === 'STRING') return 'STRING';
  const wanted = declared === 'INTEGER' ? 'DOUBLE' : declared;
  // a value of another kind than declared: the type the values give, so none changes
  const type = kind !== null && wanted !== undefined && kind !== wanted ? kind : (wanted ?? kind ?? 'DOUBLE');
  return type === 'DOUBLE' && declared === 'INTEGER' ? (integerType(values) ?? 'DOUBLE') : type;
}

export function encodeParquet(columns: readonly string[], rows: readonly (readonly ParquetCell[])[], declared: Readonly<Record<string, DeclaredType>> = {}): Uint8Array {
  const columnData = columns.map((name, i) => {
    const values = rows.map((r) => r[i] ?? null);
    const type = columnType(values, Object.hasOwn(declared, name) ? declared[name] : undefined);
    const data =
      type === 'STRING' ? values.map((v) => (v === null ? null : String(v))) : type === 'INT64' ? values.map((v) => (v === null ? null : BigInt(v as number))) : values;
    // Booleans PLAIN: hyparquet-writer would write more than 16 as RLE in its v2 data pages, which Spark before
    // 3.3 (vectorized reader), Presto/Velox and StarRocks refuse; PLAIN every Parquet reader takes.
    return { name, data, type, nullable: true, ...(type === 'BOOLEAN' ? { encoding: 'PLAIN' as const } : {}) };
  });
  return new Uint8Array(parquetWriteBuffer({ columnData }));
}
