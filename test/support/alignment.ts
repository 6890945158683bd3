// The invariants every sample diff's token alignment must hold, checked against each side's own tokens.
import assert from 'node:assert/strict';
import type { SampleDiff, TokenView } from '../../src/wire/index.ts';

/**
 * The stretches tile the aligned axis and both responses in order, matched stretches hold equal token ids,
 * and every aligned series, its gaps removed, is that side's own series.
 */
export function assertAlignmentHolds(d: SampleDiff, ta: TokenView, tb: TokenView): void {
  const al = d.alignment;
  const idsA = ta.token_ids.slice(ta.response_offset);
  const idsB = tb.token_ids.slice(tb.response_offset);
  assert.equal(al.matched + al.deleted, idsA.length);
  assert.equal(al.matched + al.inserted, idsB.length);
  assert.equal(al.columns, al.matched + al.deleted + al.inserted);
  let [col, ia, ib] = [0, 0, 0];
  for (const s of al.stretches) {
    assert.deepEqual([s.column, s.a_start, s.b_start], [col, ia, ib]);
    const [na, nb] = [s.a_end - s.a_start, s.b_end - s.b_start];
    if (s.kind === 'same') assert.deepEqual(idsA.slice(s.a_start, s.a_end), idsB.slice(s.b_start, s.b_end));
    else assert.equal(s.kind === 'deleted' ? nb : na, 0, `${s.kind} stretch holds tokens of one side only`);
    col += Math.max(na, nb);
    [ia, ib] = [s.a_end, s.b_end];
  }
  assert.deepEqual([col, ia, ib], [al.columns, idsA.length, idsB.length]);
  const columnsOf = (side: 'a' | 'b') =>
    al.stretches.flatMap((s) =>
      s.kind === (side === 'a' ? 'inserted' : 'deleted') ? [] : Array.from({ length: Math.max(s.a_end - s.a_start, s.b_end - s.b_start) }, (_, k) => s.column + k),
    );
  for (const series of d.series) {
    const own = (t: TokenView) => (t[series.name as keyof TokenView] as (number | null)[] | null) ?? [];
    assert.equal(series.a.length, al.columns, series.name);
    assert.deepEqual(columnsOf('a').map((c) => series.a[c]), own(ta).length ? own(ta) : columnsOf('a').map(() => null), `${series.name} of A`);
    assert.deepEqual(columnsOf('b').map((c) => series.b[c]), own(tb).length ? own(tb) : columnsOf('b').map(() => null), `${series.name} of B`);
  }
}
