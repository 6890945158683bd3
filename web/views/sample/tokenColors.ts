// Token colour scales: each series maps through f(v) onto a diverging or sequential ramp whose extent is either
// fixed per series (comparable across windows and samples; the default) or the current window's extent (shows small effects).
// Fixed extents: lp_diff ±0.5, imp_ratio 0.5–2 (log scale), advantages and returns ±2, entropies 0–3 nats,
// log-probs 0 to −5.
import type { TokenStat } from '../../../src/wire/index.ts';

export type ScaleMode = 'window' | 'fixed';

interface Scale {
  kind: 'diverging' | 'sequential';
  f: (v: number) => number;
  /** Fixed extent of f. */
  fixed: number;
  describe: (extent: number) => string;
}

const r = (x: number) => +x.toPrecision(2);

export const SCALES: Record<TokenStat, Scale> = {
  lp_diff: { kind: 'diverging', f: (v) => v, fixed: 0.5, describe: (e) => `−${r(e)} … +${r(e)} (train − rollout log-prob)` },
  imp_ratio: { kind: 'diverging', f: (v) => Math.log(Math.max(v, 1e-6)), fixed: Math.log(2), describe: (e) => `÷${r(Math.exp(e))} … ×${r(Math.exp(e))} (1 = no colour)` },
  advantages: { kind: 'diverging', f: (v) => v, fixed: 2, describe: (e) => `−${r(e)} … +${r(e)}` },
  returns: { kind: 'diverging', f: (v) => v, fixed: 2, describe: (e) => `−${r(e)} … +${r(e)}` },
  entropy: { kind: 'sequential', f: (v) => v, fixed: 3, describe: (e) => `0 … ${r(e)} nats` },
  ref_entropy: { kind: 'sequential', f: (v) => v, fixed: 3, describe: (e) => `0 … ${r(e)} nats` },
  rollout_log_probs: { kind: 'sequential', f: (v) => -v, fixed: 5, describe: (e) => `0 … −${r(e)} (greener = less likely)` },
  train_log_probs: { kind: 'sequential', f: (v) => -v, fixed: 5, describe: (e) => `0 … −${r(e)} (greener = less likely)` },
  ref_log_probs: { kind: 'sequential', f: (v) => -v, fixed: 5, describe: (e) => `0 … −${r(e)} (greener = less likely)` },
};

/** The extent of f over the values shown (never 0, so a flat window stays uncoloured rather than dividing by 0). */
export function extentOf(stat: TokenStat, values: readonly (number | null)[] | null, mode: ScaleMode): number {
  const s = SCALES[stat];
  if (mode === 'fixed' || !values) return s.fixed;
  let m = 0;
  for (const v of values) {
    if (v === null || !Number.isFinite(v)) continue;
    const x = s.kind === 'diverging' ? Math.abs(s.f(v)) : s.f(v);
    if (x > m) m = x;
  }
  return m > 0 ? m : s.fixed;
}

export function tokenColor(stat: TokenStat, v: number | null | undefined, extent: number): string | undefined {
  if (v === null || v === undefined || !Number.isFinite(v)) return undefined;
  const s = SCALES[stat];
  const t = Math.max(-1, Math.min(1, s.f(v) / extent));
  if (s.kind === 'diverging') {
    const a = (Math.abs(t) * 0.8).toFixed(3);
    return t >= 0 ? `rgba(255,92,92,${a})` : `rgba(78,161,255,${a})`;
  }
  return `rgba(47,207,143,${(Math.max(0, t) * 0.75).toFixed(3)})`;
}

export function scaleGradient(stat: TokenStat): string {
  return SCALES[stat].kind === 'diverging'
    ? 'linear-gradient(90deg, rgba(78,161,255,0.8), transparent, rgba(255,92,92,0.8))'
    : 'linear-gradient(90deg, transparent, rgba(47,207,143,0.75))';
}
