// A token told in words: what the per-token chart's cursor says as the keyboard moves it, and what "peak" found.
import type { TokenStat, TokenView } from '../../../src/wire/index.ts';
import { fmtNum } from '../../format.ts';

/** A stat's value at absolute position `pos` of a view (null in the prompt, outside the view, or unrecorded). */
export function statAt(v: TokenView, stat: TokenStat, pos: number): number | null {
  const arr = v[stat];
  const i = pos - Math.max(v.start, v.prompt_len);
  return arr && i >= 0 && i < arr.length ? (arr[i] ?? null) : null;
}

/** The loss mask at absolute position `pos` of a view (1 trained on, 0 not; null in the prompt, outside the view, or unrecorded). */
export function maskAt(v: TokenView, pos: number): number | null {
  const i = pos - Math.max(v.start, v.prompt_len);
  return v.loss_mask && i >= 0 && i < v.loss_mask.length ? v.loss_mask[i]! : null;
}

/** A token's text as the tooltip shows it (quoted, newlines escaped), else its id; null outside the view. */
export function tokenQuote(v: TokenView, pos: number): string | null {
  const i = pos - v.start;
  if (i < 0 || i >= v.token_ids.length) return null;
  return v.token_text ? JSON.stringify(v.token_text[i] ?? '') : `id ${v.token_ids[i]}`;
}

const grouped = (n: number) => n.toLocaleString('en-US');

/**
 * The words for the token at `pos`: its position and text, then each stat's value (the charted one first, the
 * colouring one after when they differ); a prompt token has no statistics, a loss-masked one is said to be.
 */
export function tokenWords(v: TokenView, pos: number, stats: readonly TokenStat[]): string {
  const head = `position ${grouped(pos)} ${tokenQuote(v, pos) ?? ''}`.trimEnd();
  if (pos < v.prompt_len) return `${head}: prompt, no per-token statistics`;
  const masked = maskAt(v, pos) === 0 ? ', loss-masked (not trained on)' : '';
  const values = [...new Set(stats)].map((s) => `${s} ${fmtNum(statAt(v, s, pos))}`);
  return `${head}: ${values.join(', ')}${masked}`;
}

/** What "peak" found: the stat's value there, the position and the token ("peak lp_diff 3.000 at position 5,540 "x""). */
export function peakWords(v: TokenView, stat: TokenStat, pos: number | null): string {
  if (pos === null) return `no ${stat} value to find a peak in`;
  return `peak ${stat} ${fmtNum(statAt(v, stat, pos))} at position ${grouped(pos)} ${tokenQuote(v, pos) ?? ''}`.trimEnd();
}
