// The per-token view of one sample: a window of its tokens with the response-relative per-token stats.
import { BadArgument } from './limits.ts';
import type { Numbers, SampleTokenRecord, TrainTokens } from '../run/model.ts';
import type { TokenStatValues, TokenView } from '../wire/rollout.ts';

export interface TokenWindow {
  start?: number;
  end?: number | null;
}

export type { TokenView };

function checkInt(name: string, v: number): number {
  if (!Number.isSafeInteger(v)) throw new BadArgument(name, `${name} must be an integer, got ${v}`);
  return v;
}

/** `log_probs - rollout_log_probs` in float32, or null unless both exist with equal lengths. */
function lpDiff(row: TrainTokens): Float32Array | null {
  const a = row.logProbs;
  const b = row.rolloutLogProbs;
  if (!a || !b || a.length !== b.length) return null;
  const out = new Float32Array(a.length);
  for (let i = 0; i < a.length; i++) out[i] = Math.fround(a[i]) - Math.fround(b[i]);
  return out;
}

/** Tokens `[start, end)` of a sample (start clamped to 0, end to the sample length) and their stats. */
export function tokenView(src: SampleTokenRecord, window: TokenWindow = {}): TokenView {
  const total = src.totalLength;
  const promptLen = total - src.responseLength;
  const start = Math.max(0, checkInt('start', window.start ?? 0));
  const end = window.end === undefined || window.end === null ? total : Math.min(checkInt('end', window.end), total);
  if (start >= end) throw new BadArgument('start', `empty token range [${start}, ${end}) for total_len=${total}`);
  const a = Math.max(0, start - promptLen);
  const b = Math.max(0, end - promptLen);
  const row = src.train;
  const mask = row ? row.lossMask : null;

  const responseSlice = (v: ArrayLike<number> | null, f?: (x: number) => number): TokenStatValues => {
    if (!v) return null;
    const out = new Array<number | null>(b - a).fill(null);
    // tokens past the values, or masked out, stay null
    const to = Math.min(b, v.length);
    for (let i = a; i < to; i++) {
      if (mask && !(mask[i] > 0)) continue;
      const x = f ? f(v[i]) : v[i];
      // finite (x - x is NaN for NaN and ±Infinity)
      if (x - x === 0) out[i - a] = x;
    }
    return out;
  };

  const stop = Math.min(end, src.tokens.length);
  const tokenIds = new Array<number>(Math.max(0, stop - start));
  for (let i = start; i < stop; i++) tokenIds[i - start] = Number(src.tokens[i]);
  const diff = row ? lpDiff(row) : null;
  const stat = (v: Numbers | null | undefined): TokenStatValues => (row ? responseSlice(v ?? null) : null);

  return {
    rollout_id: src.rolloutId,
    sample_index: src.sampleIndex,
    evaluation: src.evaluation,
    total_len: total,
    prompt_len: promptLen,
    start,
    end,
    response_offset: Math.min(tokenIds.length, Math.max(0, promptLen - start)),
    token_ids: tokenIds,
    token_text: src.decodeToken ? tokenIds.map(src.decodeToken) : null,
    rollout_log_probs: src.rolloutLogProbs ? responseSlice(src.rolloutLogProbs) : row ? responseSlice(row.rolloutLogProbs) : null,
    loss_mask: row && row.lossMask ? Array.from(row.lossMask.subarray(a, b), (v) => Math.trunc(v)) : null,
    train_log_probs: stat(row?.logProbs),
    ref_log_probs: stat(row?.refLogProbs),
    lp_diff: stat(diff),
    imp_ratio: row && diff ? responseSlice(diff, (d) => Math.fround(Math.exp(d))) : null,
    entropy: stat(row?.entropy),
    ref_entropy: stat(row?.refEntropy),
    advantages: stat(row?.advantages),
    returns: stat(row?.returns),
  };
}
