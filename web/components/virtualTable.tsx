// A sortable table that renders only the rows in view (fixed row height), with a sticky header and first column.
// Each header is a button (sorting works from the keyboard too) and, given `rowHref`, each row's first cell is a
// link to what a click on the row opens, so a keyboard or screen-reader user reaches any row directly.
import { useLayoutEffect, useMemo, useRef, useState } from 'preact/hooks';
import { fmtNum, naturalCompare } from '../format.ts';
import { navigate } from '../route.ts';
import type { Cell, TableRow as Row } from '../../src/wire/index.ts';

interface Props {
  rows: Row[];
  columns: string[];
  sort: { col: string; desc: boolean } | null;
  onSort: (col: string) => void;
  /** What a click on the row does; given only `rowHref`, it opens that address. */
  onRowClick?: (row: Row) => void;
  /** Where the row's first cell links to: the place a click on the row opens. */
  rowHref?: (row: Row) => string;
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

export function VirtualTable({ rows, columns, sort, onSort, onRowClick: onClick, rowHref, rowClass, height = 440, testId, cell }: Props) {
  // the row opens what its link does, so the two are given once
  const onRowClick = onClick ?? (rowHref ? (r: Row) => navigate(rowHref(r)) : undefined);
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
              // A click anywhere in the header cell sorts; its button (whose clicks bubble here) is what Tab and a screen reader reach.
              <th key={c} scope="col" class={sort?.col === c ? 'sorted' : ''} aria-sort={sort?.col === c ? (sort.desc ? 'descending' : 'ascending') : 'none'} onClick={() => onSort(c)}>
                <button type="button" title={`sort by ${c}`}>
                  {c.split('_').map((part, i) => (i ? [<wbr key={i} />, `_${part}`] : part))}
                  {sort?.col === c ? (sort.desc ? ' ▾' : ' ▴') : ''}
                </button>
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
              // A click on the row's link is the link's own (a new tab, a copied address): the row does not act too.
              onClick={onRowClick ? (e) => !(e.target as Element).closest('a') && onRowClick(r) : undefined}
            >
              {columns.map((c, k) => {
                const v = r[c] ?? null;
                const text = cell ? cell(c, v, r) : fmtNum(v);
                return (
                  <td key={c} class={typeof v === 'string' ? 'str' : ''}>
                    {k === 0 && rowHref ? <a href={rowHref(r)}>{text}</a> : text}
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
