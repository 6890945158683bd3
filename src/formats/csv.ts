// CSV (RFC 4180): a header row, then one line per row; null is an empty cell, text is quoted when it must be.
// NaN and ±infinity are `NaN`, `Infinity` and `-Infinity`, the spellings DuckDB, pandas and Spark (whose
// defaults take `Inf` and `Infinity`, not `inf`) all read as numbers.
export type CsvCell = string | number | boolean | null | undefined;

function cell(v: CsvCell): string {
  if (v === null || v === undefined) return '';
  if (typeof v === 'number') return String(v);
  if (typeof v === 'boolean') return v ? 'true' : 'false';
  return /[",\r\n]/.test(v) || v !== v.trim() ? `"${v.replaceAll('"', '""')}"` : v;
}

export function encodeCsv(columns: readonly string[], rows: readonly (readonly CsvCell[])[]): string {
  const lines = [columns.map(cell).join(',')];
  for (const r of rows) lines.push(columns.map((_, i) => cell(r[i])).join(','));
  return `${lines.join('\r\n')}\r\n`;
}
