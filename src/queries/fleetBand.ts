// Fleet overview arithmetic: phase composition fractions and the per-bucket util quantile band.
import { pyFixed } from '../formats/pythonFormat.ts';
import type { FleetBand } from '../wire/timeline.ts';

/** `round(x, 4)` as Python does it: half to even on the exact binary value. */
export function pyRound4(x: number): number {
  return Number(pyFixed(x, 4));
}

/** Nearest-rank quantile of `sorted[0..n)`: index `round_half_away_from_zero(q * (n-1))` (polars "nearest"). */
export function nearestQuantile(sorted: ArrayLike<number>, n: number, q: number): number {
  return sorted[Math.round((n - 1) * q)];
}

/**
 * `composition[name]` per palette id (id 0 reported as `"none"`): the fraction of the `rows` lanes whose
 * byte in bucket x equals that id, rounded to 4 decimals. Empty when there are no rows or no palette.
 */
export function phaseComposition(matrix: Uint8Array, rows: number, xb: number, palette: readonly string[]): Record<string, number[]> {
  const out: Record<string, number[]> = {};
  if (rows === 0 || palette.length === 0) return out;
  const counts = new Uint32Array(palette.length * xb);
  for (let r = 0; r < rows; r++) {
    const base = r * xb;
    for (let x = 0; x < xb; x++) {
      const id = matrix[base + x];
      if (id < palette.length) counts[id * xb + x]++;
    }
  }
  palette.forEach((name, id) => {
    const col = new Array<number>(xb);
    for (let x = 0; x < xb; x++) col[x] = pyRound4(counts[id * xb + x] / rows);
    out[id === 0 ? 'none' : name] = col;
  });
  return out;
}

export type { FleetBand };

/**
 * Per bucket: p10/p50/p90 (nearest rank) and min over lanes of each lane's max util in that bucket.
 * `bucketMax` is bucket-major `[xb × lanes]`, NaN where a lane had no sample; empty buckets give null.
 */
export function utilBand(bucketMax: Float64Array, lanes: number, xb: number): FleetBand {
  const band: FleetBand = { p10: [], p50: [], p90: [], min: [] };
  const column = new Float64Array(lanes);
  for (let x = 0; x < xb; x++) {
    let n = 0;
    const base = x * lanes;
    for (let l = 0; l < lanes; l++) {
      const v = bucketMax[base + l];
      if (v === v) column[n++] = v;
    }
    if (n === 0) {
      band.p10.push(null);
      band.p50.push(null);
      band.p90.push(null);
      band.min.push(null);
      continue;
    }
    const sorted = column.subarray(0, n).sort();
    band.p10.push(nearestQuantile(sorted, n, 0.1));
    band.p50.push(nearestQuantile(sorted, n, 0.5));
    band.p90.push(nearestQuantile(sorted, n, 0.9));
    band.min.push(sorted[0]);
  }
  return band;
}
