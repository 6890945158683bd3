// Writes a table of scalar cells as one parquet file (hyparquet-writer): numbers as DOUBLE, booleans as
// BOOLEAN, text as UTF-8 strings; a column mixing kinds is written as text. Nulls stay nulls.
import { parquetWriteBuffer } from 'hyparquet-writer';

export type ParquetCell = number | string | boolean | null;

type ColumnType = 'DOUBLE' | 'BOOLEAN' | 'STRING';

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

export function encodeParquet(columns: readonly string[], rows: readonly (readonly ParquetCell[])[]): Uint8Array {
  const columnData = columns.map((name, i) => {
    const values = rows.map((r) => r[i] ?? null);
    const type = columnType(values);
    const data = type === 'STRING' ? values.map((v) => (v === null ? null : String(v))) : values;
    return { name, data, type, nullable: true };
  });
  return new Uint8Array(parquetWriteBuffer({ columnData }));
}
