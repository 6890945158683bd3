// How a quick pick's scores are shown: with as many decimals as tell different scores apart.

/** A score as shown beside a picked lane: with its unit, one decimal unless told more. */
export function fmtScore(score: number, unit: string, digits = 1): string {
  return `${score.toFixed(digits)} ${unit}`;
}

/** Most decimals a score is shown with, however close two scores are. */
export const MAX_SCORE_DIGITS = 6;

/**
 * The scores of one pick as shown: one decimal, or as many more as it takes (up to MAX_SCORE_DIGITS) for any two
 * different scores to read differently, so only equal values read alike (and only they are called ties).
 */
export function scoreTexts(scores: readonly number[], unit: string): string[] {
  let digits = 1;
  const clash = (d: number) => scores.some((a, i) => scores.some((b, j) => j > i && a !== b && a.toFixed(d) === b.toFixed(d)));
  while (digits < MAX_SCORE_DIGITS && clash(digits)) digits++;
  return scores.map((v) => fmtScore(v, unit, digits));
}

/** A pick's scores (worst first) as its summary shows them: `12.5 %`, and `(tie)` beside equal scores (equal values, not texts). */
export function pickTexts(scores: readonly number[], unit: string): string[] {
  const shown = scoreTexts(scores, unit);
  return shown.map((t, i) => (scores[i] === scores[i - 1] || scores[i] === scores[i + 1] ? `${t} (tie)` : t));
}
