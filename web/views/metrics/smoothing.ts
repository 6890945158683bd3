// Display smoothing: a debiased exponential moving average (TensorBoard's), which skips nulls and keeps gaps.
export function ema(y: readonly (number | null | undefined)[], weight: number): (number | null)[] {
  if (weight <= 0) return y.map((v) => (v ?? null));
  const out: (number | null)[] = new Array(y.length);
  let last = 0;
  let n = 0;
  for (let i = 0; i < y.length; i++) {
    const v = y[i];
    if (v === null || v === undefined || !Number.isFinite(v)) {
      out[i] = null;
      continue;
    }
    last = last * weight + (1 - weight) * v;
    n++;
    out[i] = last / (1 - weight ** n);
  }
  return out;
}
