// The edit alignment of two responses' token ids: which stretches both share, which only A has (deleted) and
// which only B has (inserted), so per-token series line up by content rather than by position. Myers' diff
// (the `diff` package's array diff) between the common prefix and suffix, bounded by an edit cap.
import { diffArrays } from 'diff';
import type { AlignedStretch, StretchKind, TokenAlignment } from '../wire/index.ts';
import { TOKEN_ALIGNMENT_EDIT_CAP } from './limits.ts';

/** Builds stretches in order, merging a stretch into the previous one of the same kind. */
class Stretches {
  readonly list: AlignedStretch[] = [];
  private a = 0;
  private b = 0;
  private column = 0;
  add(kind: StretchKind, n: number): void {
    if (n <= 0) return;
    const da = kind === 'inserted' ? 0 : n;
    const db = kind === 'deleted' ? 0 : n;
    const last = this.list.at(-1);
    if (last && last.kind === kind) {
      last.a_end += da;
      last.b_end += db;
    } else this.list.push({ kind, column: this.column, a_start: this.a, a_end: this.a + da, b_start: this.b, b_end: this.b + db });
    this.a += da;
    this.b += db;
    this.column += n;
  }
  get columns(): number {
    return this.column;
  }
}

/**
 * Aligns two token sequences. Within `editCap` edits the alignment is a shortest edit script (fewest
 * inserted plus deleted tokens); past it, `fell_back` is set and the alignment is the common prefix, the
 * rest of A deleted, the rest of B inserted, the common suffix — still a valid alignment, only not minimal.
 */
export function alignTokens(a: ArrayLike<number>, b: ArrayLike<number>, editCap = TOKEN_ALIGNMENT_EDIT_CAP): TokenAlignment {
  let prefix = 0;
  while (prefix < a.length && prefix < b.length && a[prefix] === b[prefix]) prefix++;
  let suffix = 0;
  while (suffix < a.length - prefix && suffix < b.length - prefix && a[a.length - 1 - suffix] === b[b.length - 1 - suffix]) suffix++;
  const midA = Array.from({ length: a.length - prefix - suffix }, (_, i) => a[prefix + i]!);
  const midB = Array.from({ length: b.length - prefix - suffix }, (_, i) => b[prefix + i]!);

  const out = new Stretches();
  out.add('same', prefix);
  let fellBack = false;
  if (midA.length === 0 || midB.length === 0) {
    out.add('deleted', midA.length);
    out.add('inserted', midB.length);
  } else {
    const changes = diffArrays(midA, midB, { maxEditLength: editCap });
    if (changes === undefined) {
      fellBack = true;
      out.add('deleted', midA.length);
      out.add('inserted', midB.length);
    } else for (const c of changes) out.add(c.added ? 'inserted' : c.removed ? 'deleted' : 'same', c.count ?? c.value.length);
  }
  out.add('same', suffix);

  const count = (kind: StretchKind) => out.list.reduce((n, s) => n + (s.kind === kind ? Math.max(s.a_end - s.a_start, s.b_end - s.b_start) : 0), 0);
  return {
    method: fellBack ? 'prefix_suffix' : 'edit',
    fell_back: fellBack,
    edit_cap: editCap,
    columns: out.columns,
    matched: count('same'),
    deleted: count('deleted'),
    inserted: count('inserted'),
    stretches: out.list,
  };
}

/** A per-token series of each side laid over the alignment's columns (null where that side has a gap). */
export function alignSeries<T>(alignment: TokenAlignment, a: readonly T[], b: readonly T[]): { a: (T | null)[]; b: (T | null)[] } {
  const outA = new Array<T | null>(alignment.columns).fill(null);
  const outB = new Array<T | null>(alignment.columns).fill(null);
  for (const s of alignment.stretches) {
    for (let i = s.a_start; i < s.a_end; i++) outA[s.column + i - s.a_start] = a[i] ?? null;
    for (let i = s.b_start; i < s.b_end; i++) outB[s.column + i - s.b_start] = b[i] ?? null;
  }
  return { a: outA, b: outB };
}
