// The context-parallel (CP) zigzag split of a sample's sequence, as miles' training shards it: the padded
// sequence is cut into 2·cp chunks and CP rank r holds chunks r and 2·cp−r−1; a rank stores the per-token
// values (one per response token, from the logits one position earlier) of the response positions inside
// its chunks. Written by the demo's train dumps, reassembled by the train dump reader.

/** Response positions `[lo, hi)` of the zigzag CP slice held by `cpRank` (in the order the rank stores them). */
export function cpResponseRanges(
  totalLength: number,
  responseLength: number,
  cpSize: number,
  cpRank: number,
  paddedLength = totalLength,
): [number, number][] {
  const prompt = totalLength - responseLength;
  const chunk = Math.ceil(paddedLength / (2 * cpSize));
  const out: [number, number][] = [];
  for (const c of [cpRank, 2 * cpSize - cpRank - 1]) {
    const lo = Math.max(c * chunk, prompt - 1);
    const hi = Math.min((c + 1) * chunk, totalLength - 1);
    if (lo < hi) out.push([lo - (prompt - 1), hi - (prompt - 1)]);
  }
  return out;
}
