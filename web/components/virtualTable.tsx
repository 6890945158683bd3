// A sortable table that renders only the rows in view (fixed row height), with a sticky header and first column.
import { useLayoutEffect, useMemo, useRef, useState } from 'preact/hooks';
import { fmtNum, naturalCompare } from '../format.ts';
import type { Cell, TableRow as Row } from '../../src/wire/index.ts';

interface Props {
  rows: Row[];
  columns: string[];
  sort: { col: string; desc: boolean } | null;
  onSort: (col: string) => void;
  onRowClick?: (row: Row) => void;
  rowClass?: (row: Row) => string;
  height?: number;
  testId?: string;
  cell?: (col: string, v: Cell, row: Row) => string;
}

const ROW_H = 26;
const OVERSCAN = 8;

export function compareCells(a: Cell, b: Cell): number {
  if (a === b) return 0;
  if (a === null || a === undefined) return 1;
  if (b === null || b === undefined) return -1;
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  if (typeof a === 'boolean' && typeof b === 'boolean') return Number(a) - Number(b);
  return naturalCompare(String(a), String(b));
}

export function sortRows(rows: Row[], sort: { col: string; desc: boolean } | null): Row[] {
  if (!sort) return rows;
  const out = [...rows];
  out.sort((x, y) => {
    const a = x[sort.col] ?? null;
    const b = y[sort.col] ?? null;
    // Nulls stay last in both directions.
    if (a === null || b === null) return compareCells(a, b);
    return sort.desc ? compareCells(b, a) : compareCells(a, b);
  });
  return out;
}

export function VirtualTable({ rows, columns, sort, onSort, onRowClick, rowClass, height = 440, testId, cell }: Props) {
  const ref = useRef<HTMLDivElement>(null);
  const [scrollTop, setScrollTop] = useState(0);
  const sorted = useMemo(() => sortRows(rows, sort), [rows, sort?.col, sort?.desc]);
  useLayoutEffect(() => {
    if (ref.current && ref.current.scrollTop > sorted.length * ROW_H) ref.current.scrollTop = 0;
  }, [sorted.length]);
  const bodyH = Math.min(height, (sorted.length + 1) * ROW_H + 32);
  const first = Math.max(0, Math.floor(scrollTop / ROW_H) - OVERSCAN);
  const last = Math.min(sorted.length, Math.ceil((scrollTop + height) / ROW_H) + OVERSCAN);
  const slice = sorted.slice(first, last);
  return (
    <div class="vtable" ref={ref} style={{ maxHeight: `${bodyH}px` }} onScroll={(e) => setScrollTop((e.target as HTMLDivElement).scrollTop)} data-testid={testId}>
      <table>
        <thead>
          <tr>
            {columns.map((c) => (
              <th
                key={c}
                class={sort?.col === c ? 'sorted' : ''}
                onClick={() => onSort(c)}
                aria-sort={sort?.col === c ? (sort.desc ? 'descending' : 'ascending') : 'none'}
                title={`sort by ${c}`}
              >
                {c.split('_').map((part, i) => (i ? [<wbr key={i} />, `_${part}`] : part))}
                {sort?.col === c ? (sort.desc ? ' ▾' : ' ▴') : ''}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {first > 0 && (
            <tr style={{ height: `${first * ROW_H}px` }} aria-hidden="true">
              <td colSpan={columns.length} />
            </tr>
          )}
          {slice.map((r, i) => (
            <tr
              key={first + i}
              class={`${onRowClick ? 'clickable' : ''} ${rowClass?.(r) ?? ''}`}
              onClick={onRowClick ? () => onRowClick(r) : undefined}
            >
              {columns.map((c) => {
                const v = r[c] ?? null;
                return (
                  <td key={c} class={typeof v === 'string' ? 'str' : ''}>
                    {cell ? cell(c, v, r) : fmtNum(v)}
                  </td>
                );
              })}
            </tr>
          ))}
          {last < sorted.length && (
            <tr style={{ height: `${(sorted.length - last) * ROW_H}px` }} aria-hidden="true">
              <td colSpan={columns.length} />
            </tr>
          )}
        </tbody>
      </table>
    </div>
  );
}
