// The train side of a sample reduced to its per-sample values (loss-masked means over the response), on
// the load side: the rank files' per-token arrays are dropped as soon as a sample's row is joined.
import type { TrainDigest } from '../model.ts';
import type { TrainRow } from './trainDump.ts';

/** A finite number, or null (NaN/±inf serialize as null). */
function finite(x: number | null | undefined): number | null {
  return x === null || x === undefined || !Number.isFinite(x) ? null : x;
}

/** Mean and max of `x[i]` over the positions where the loss mask is set. */
interface MaskedStats {
  n: number;
  mean: number;
  max: number;
}

/** Loss-masked mean/max; null when `x` is absent or nothing is selected (NaN propagates to both). */
function maskedStats(x: ArrayLike<number> | null, mask: ArrayLike<number> | null): MaskedStats | null {
  if (!x || !mask) return null;
  const n = Math.min(x.length, mask.length);
  let count = 0;
  let sum = 0;
  let max = -Infinity;
  for (let i = 0; i < n; i++) {
    if (!(mask[i] > 0)) continue;
    const v = x[i];
    count++;
    sum += v;
    if (!(v <= max)) max = Number.isNaN(max) ? max : v;
  }
  if (count === 0) return null;
  return { n: count, mean: sum / count, max };
}

/** Unbiased (n-1) standard deviation of the masked values; NaN for a single value. */
function maskedStd(x: ArrayLike<number> | null, mask: ArrayLike<number> | null, stats: MaskedStats | null): number | null {
  if (!x || !mask || !stats) return null;
  if (stats.n === 1) return NaN;
  const n = Math.min(x.length, mask.length);
  let s = 0;
  for (let i = 0; i < n; i++) {
    if (!(mask[i] > 0)) continue;
    const d = Math.fround(x[i]) - stats.mean;
    s += d * d;
  }
  return Math.sqrt(s / (stats.n - 1));
}

/** Loss-masked mean/max of |lp_diff| and mean of exp(lp_diff), in one pass without materializing lp_diff. */
function lpDiffStats(row: TrainRow, mask: ArrayLike<number> | null): { absMean: number; absMax: number; ratioMean: number } | null {
  const a = row.logProbs;
  const b = row.rolloutLogProbs;
  if (!a || !b || !mask || a.length !== b.length) return null;
  const n = Math.min(a.length, mask.length);
  let count = 0;
  let absSum = 0;
  let absMax = -Infinity;
  let ratioSum = 0;
  for (let i = 0; i < n; i++) {
    if (!(mask[i] > 0)) continue;
    const d = Math.fround(Math.fround(a[i]) - Math.fround(b[i]));
    const ad = Math.abs(d);
    count++;
    absSum += ad;
    if (!(ad <= absMax)) absMax = Number.isNaN(absMax) ? absMax : ad;
    ratioSum += Math.fround(Math.exp(d));
  }
  if (count === 0) return null;
  return { absMean: absSum / count, absMax, ratioMean: ratioSum / count };
}

/** Reduces a joined train row to its summary columns (loss-masked means over the response). */
export function digestTrainRow(row: TrainRow): TrainDigest {
  const mask = row.lossMask;
  const diff = lpDiffStats(row, mask);
  const entropy = maskedStats(row.entropy, mask);
  const adv = maskedStats(row.advantages, mask);
  return {
    normalized_reward: finite(row.reward),
    truncated: row.truncated === null ? null : row.truncated !== 0,
    dumped_rank: row.rank,
    mean_entropy: finite(entropy?.mean),
    max_entropy: finite(entropy?.max),
    ref_entropy_mean: finite(maskedStats(row.refEntropy, mask)?.mean),
    mean_abs_lp_diff: finite(diff?.absMean),
    max_abs_lp_diff: finite(diff?.absMax),
    mean_imp_ratio: finite(diff?.ratioMean),
    adv_mean: finite(adv?.mean),
    adv_std: finite(maskedStd(row.advantages, mask, adv)),
    return_mean: finite(maskedStats(row.returns, mask)?.mean),
    alignment_failed: row.alignmentFailed,
  };
}
