// What a URL asked for that the screen could not show, said in one line (never replaced silently).
import { fmtIntRanges } from './format.ts';

/** A step parameter (`a=`, `b=`) that is not a recorded step: why, and which steps exist. */
export function stepParamNote(name: string, raw: string | null, steps: readonly number[], shown: number | undefined): string | null {
  if (raw === null || raw === '') return null;
  const n = Number(raw);
  if (/^\d+$/.test(raw) && steps.includes(n)) return null;
  const why = /^\d+$/.test(raw) ? `${name}=${raw} is not a recorded step` : `${name}=“${raw}” is not a step number`;
  return `${why} (steps ${steps.length ? fmtIntRanges(steps) : 'none yet'}): showing ${shown === undefined ? 'nothing' : `step ${shown}`} instead.`;
}

/** A run parameter (`run_a=`, `run_b=`) that names no run served here: which runs exist, and which is shown. */
export function runParamNote(name: string, raw: string | null, runIds: readonly string[], shown: string | null): string | null {
  if (raw === null || raw === '' || runIds.includes(raw)) return null;
  return `${name}=“${raw}” is not a run served here (runs: ${runIds.join(', ') || 'none'}): showing ${shown ?? 'nothing'} instead.`;
}

/** The compared runs (`runs=A,B`, or `all`) naming runs not served here: which, and which runs exist. */
export function runsParamNote(raw: string | null, runIds: readonly string[]): string | null {
  if (raw === null || raw === 'all') return null;
  const unknown = raw.split(',').filter((id) => id && !runIds.includes(id));
  if (!unknown.length) return null;
  const names = unknown.map((id) => `“${id}”`).join(', ');
  return `runs=${raw}: ${names} ${unknown.length > 1 ? 'are not runs' : 'is not a run'} served here (runs: ${runIds.join(', ') || 'none'}), left out of the comparison.`;
}

/**
 * The timeline window asked for (`t0`, `t1`, seconds since the epoch) against the run's data [lo, hi] and the
 * window shown: null when it is shown as asked (up to the clamp of a millisecond).
 */
export function windowParamNote(t0: string | null, t1: string | null, lo: number, hi: number, shown: { t0: number; t1: number }): string | null {
  if (t0 === null && t1 === null) return null;
  const bad = [
    ['t0', t0],
    ['t1', t1],
  ].filter(([, v]) => v !== null && !Number.isFinite(Number(v)));
  if (bad.length) return `${bad.map(([k, v]) => `${k}=“${v}”`).join(' and ')} ${bad.length > 1 ? 'are not numbers' : 'is not a number'} (seconds since the epoch): showing the default window.`;
  if (t0 === null || t1 === null) return `${t0 === null ? 't1' : 't0'} needs ${t0 === null ? 't0' : 't1'} too: showing the default window.`;
  const a = Number(t0);
  const b = Number(t1);
  if (b <= a) return `t1 (${b}) is not after t0 (${a}): showing a window around them.`;
  if (b < lo || a > hi) return `t0–t1 (${a}–${b}) lies outside the run's data (${lo.toFixed(3)}–${hi.toFixed(3)}): showing the nearest window.`;
  if (Math.abs(shown.t0 - a) > 1e-3 || Math.abs(shown.t1 - b) > 1e-3) return `t0–t1 (${a}–${b}) reaches past the run's data or the widest window: showing ${shown.t0.toFixed(3)}–${shown.t1.toFixed(3)}.`;
  return null;
}
