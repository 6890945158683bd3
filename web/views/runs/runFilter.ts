// The Runs table's filter: words that must all occur in a run's name, folder, status, formats, args (`arg=value`) or
// shown columns (`label=shown value`); a `name=number` word also matches a column or arg holding that number
// however it is written (`lr=1e-6` matches the shown `1.00e-6` and the recorded `0.000001`).
import type { RunListing } from '../../../src/wire/index.ts';

/** A column as the filter sees it: its id and label, and a run's value in it and as shown. */
export interface FilterColumn {
  id: string;
  label: string;
  value: (r: RunListing) => string | number | null;
  text: (r: RunListing) => string;
}

/** The filter's words: a label of several words before `=` is one word (`group size=8`). */
export function filterWords(needle: string, columns: readonly FilterColumn[]): string[] {
  let q = needle.trim().toLowerCase();
  for (const c of columns) {
    const label = c.label.toLowerCase();
    if (label.includes(' ')) q = q.split(`${label}=`).join(`${c.id.toLowerCase()}=`);
  }
  return q.split(/\s+/).filter(Boolean);
}

const sameNumber = (a: number, b: number): boolean => a === b || Math.abs(a - b) <= 1e-9 * Math.max(Math.abs(a), Math.abs(b));

/** Whether run `r` holds every word of the filter (`filterWords`). */
export function runMatches(r: RunListing, words: readonly string[], columns: readonly FilterColumn[]): boolean {
  const text = [
    r.id,
    r.name,
    r.folder ?? '',
    r.status,
    ...r.formats,
    ...Object.entries(r.config).map(([k, v]) => `${k}=${v}`),
    ...columns.map((c) => `${c.id}=${c.text(r)} ${c.label}=${c.text(r)}`),
  ]
    .join(' ')
    .toLowerCase();
  return words.every((w) => {
    if (text.includes(w)) return true;
    const eq = /^([^=]+)=(.+)$/.exec(w);
    const wanted = eq ? Number(eq[2]) : NaN;
    if (!eq || !Number.isFinite(wanted)) return false;
    const key = eq[1]!;
    const values: unknown[] = columns.filter((c) => c.id.toLowerCase() === key || c.label.toLowerCase() === key).map((c) => c.value(r));
    for (const [k, v] of Object.entries(r.config)) if (k.toLowerCase() === key) values.push(v);
    return values.some((v) => (typeof v === 'number' || typeof v === 'string') && v !== '' && sameNumber(Number(v), wanted));
  });
}
