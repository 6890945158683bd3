// "Nice" axis ticks (1, 2, 5 × 10^k) without duplicates, integer-only when the data are integers.
export function niceTicks(min: number, max: number, target: number, integer = false): number[] {
  if (!Number.isFinite(min) || !Number.isFinite(max)) return [];
  if (min === max) return [min];
  const raw = (max - min) / Math.max(1, target);
  const mag = 10 ** Math.floor(Math.log10(raw));
  let step = [1, 2, 5, 10].map((m) => m * mag).find((s) => s >= raw) ?? 10 * mag;
  if (integer) step = Math.max(1, Math.round(step));
  const out: number[] = [];
  for (let v = Math.ceil(min / step) * step; v <= max + step * 1e-9; v += step) out.push(+v.toPrecision(12));
  return out;
}

export function fmtTick(v: number): string {
  if (v === 0) return '0';
  const a = Math.abs(v);
  if (a >= 1e5 || a < 1e-3) return v.toExponential(1);
  if (a >= 100) return v.toFixed(0);
  return String(+v.toPrecision(4));
}

/**
 * Labels for a set of ticks, each as `fmt` writes it, with as many more significant digits as it takes for no two
 * to read alike (a nearly constant series, 9.95e-7 to 1.02e-6, read `1.0e-6, 1.0e-6, 9.8e-7`).
 */
export function fmtTicks(values: readonly number[], fmt: (v: number) => string = fmtTick): string[] {
  const labels = values.map(fmt);
  for (let digits = 2; digits <= 15 && new Set(labels).size < labels.length; digits++) {
    values.forEach((v, i) => {
      const a = Math.abs(v);
      labels[i] = v === 0 ? '0' : a >= 1e5 || a < 1e-3 ? v.toExponential(digits) : String(+v.toPrecision(digits + 1));
    });
  }
  return labels;
}
