// A sample's tokens held whole in the page: windows cut from it (the server's own window answer, made locally),
// chunks joined into it, the whole sample's peak, and its per-pixel overview.
import type { TokenStat, TokenView } from '../../../src/wire/index.ts';
import { TOKEN_STATS } from './tokenStats.ts';

/** The largest range asked in one request: ~130 bytes a token as JSON, so about 2 MB (0.7 MB gzipped) at most. */
export const CHUNK_TOKENS = 16_384;

/** Tokens `[start, end)` of a view that holds them: the answer the server gives for that window. */
export function sliceTokens(v: TokenView, start: number, end: number): TokenView {
  const s = Math.max(v.start, start);
  const e = Math.min(v.end, end, v.total_len);
  const base = Math.max(v.start, v.prompt_len);
  // response-relative: a stat array starts at the first response token the view holds
  const a = Math.max(0, Math.max(s, v.prompt_len) - base);
  const b = Math.max(0, Math.max(e, v.prompt_len) - base);
  const stat = (x: (number | null)[] | null) => (x ? x.slice(a, b) : null);
  const out: TokenView = {
    ...v,
    start: s,
    end: e,
    response_offset: Math.min(e - s, Math.max(0, v.prompt_len - s)),
    token_ids: v.token_ids.slice(s - v.start, e - v.start),
    token_text: v.token_text ? v.token_text.slice(s - v.start, e - v.start) : null,
    loss_mask: v.loss_mask ? v.loss_mask.slice(a, b) : null,
  };
  for (const k of TOKEN_STATS) out[k] = stat(v[k]);
  return out;
}

/** `a` followed by `b` (b starts where a ends): one view of both ranges. */
export function joinTokens(a: TokenView, b: TokenView): TokenView {
  if (b.start !== a.end) throw new Error(`token chunks do not meet: ${a.end} then ${b.start}`);
  const cat = <T,>(x: T[] | null, y: T[] | null): T[] | null => (x && y ? x.concat(y) : x ?? y);
  const ids = a.token_ids.concat(b.token_ids);
  const out: TokenView = {
    ...a,
    end: b.end,
    response_offset: Math.min(ids.length, Math.max(0, a.prompt_len - a.start)),
    token_ids: ids,
    token_text: a.token_text && b.token_text ? a.token_text.concat(b.token_text) : null,
    loss_mask: cat(a.loss_mask, b.loss_mask),
  };
  for (const k of TOKEN_STATS) out[k] = cat(a[k], b[k]);
  return out;
}

/** The value a colour scale reads (|f(v)| for a diverging scale): `f` is the stat's scale function. */
export type Magnitude = (v: number) => number;

/** The absolute position of the token whose `mag` is largest, or null when the stat has no finite value. */
export function peakOf(v: TokenView, stat: TokenStat, mag: Magnitude): number | null {
  const arr = v[stat];
  if (!arr) return null;
  const base = Math.max(v.start, v.prompt_len);
  let best = -1;
  let bestV = -Infinity;
  for (let i = 0; i < arr.length; i++) {
    const x = arr[i];
    if (x === null || x === undefined || !Number.isFinite(x)) continue;
    const m = mag(x);
    if (m > bestV) {
      bestV = m;
      best = i;
    }
  }
  return best < 0 ? null : base + best;
}

/** One pixel column of the overview: the stat's smallest and largest value there, and the value of largest magnitude. */
export interface Column {
  min: number;
  max: number;
  loudest: number;
}

export interface Overview {
  /** Per pixel column; null where no token has a value (prompt, loss-masked). */
  cols: (Column | null)[];
  /** Per pixel column: it holds response tokens and every one of them is loss-masked. */
  masked: boolean[];
}

/**
 * The whole sample in `width` columns (tokens `[v.start, v.end)`): a column per pixel holds every token that
 * falls in it, so one spike among thousands of tokens still shows. Null for a column with no value (prompt, masked).
 */
export function overviewColumns(v: TokenView, stat: TokenStat | null, mag: Magnitude, width: number): Overview {
  const cols: (Column | null)[] = new Array(Math.max(0, width)).fill(null);
  const masked: boolean[] = new Array(Math.max(0, width)).fill(false);
  const n = v.end - v.start;
  if (n <= 0 || width <= 0) return { cols, masked };
  const arr = stat ? v[stat] : null;
  const base = Math.max(v.start, v.prompt_len);
  const unmasked = new Uint8Array(width);
  const response = new Uint8Array(width);
  for (let pos = base; pos < v.end; pos++) {
    const c = Math.min(width - 1, Math.floor(((pos - v.start) / n) * width));
    const i = pos - base;
    response[c] = 1;
    const m = v.loss_mask ? v.loss_mask[i] : 1;
    if (m !== 0) unmasked[c] = 1;
    const x = arr ? arr[i] : null;
    if (x === null || x === undefined || !Number.isFinite(x)) continue;
    const col = cols[c];
    if (!col) cols[c] = { min: x, max: x, loudest: x };
    else {
      if (x < col.min) col.min = x;
      if (x > col.max) col.max = x;
      if (mag(x) > mag(col.loudest)) col.loudest = x;
    }
  }
  for (let c = 0; c < width; c++) masked[c] = response[c] === 1 && unmasked[c] === 0;
  return { cols, masked };
}

/** The loss-masked response runs as absolute `[from, to)` ranges (for shading). */
export function maskedRuns(v: TokenView): [number, number][] {
  const out: [number, number][] = [];
  const mask = v.loss_mask;
  if (!mask) return out;
  const base = Math.max(v.start, v.prompt_len);
  let from = -1;
  for (let i = 0; i <= mask.length; i++) {
    const off = i < mask.length && mask[i] === 0;
    if (off && from < 0) from = i;
    else if (!off && from >= 0) {
      out.push([base + from, base + i]);
      from = -1;
    }
  }
  return out;
}

/** The window start that puts `pos` a third of the way into a window of `win` tokens, inside `[0, total)`. */
export function windowAround(pos: number, win: number, total: number): number {
  return Math.max(0, Math.min(pos - Math.floor(win / 3), total - win));
}
