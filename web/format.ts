// Number and time formats shared by every view (one format per kind of value), and the app's one text order.

/**
 * Names in natural order, the one every list of the app uses: digit runs compare as numbers, so addresses
 * order by octet (`10.0.0.2` before `10.0.0.10` before `10.0.0.100`) and host names by their numbers
 * (`node-2` before `node-10`), as the server orders lanes.
 */
export function naturalCompare(a: string, b: string): number {
  return a.localeCompare(b, undefined, { numeric: true });
}

export function fmtNum(v: unknown): string {
  if (v === null || v === undefined) return '—';
  if (typeof v === 'boolean') return v ? '✓' : '·';
  if (typeof v !== 'number') return String(v);
  if (!Number.isFinite(v)) return String(v);
  if (Number.isInteger(v)) return Math.abs(v) >= 1e7 ? v.toExponential(2) : String(v);
  const a = Math.abs(v);
  if (a >= 1e5 || a < 1e-3) return v.toExponential(2);
  if (a >= 100) return v.toFixed(1);
  return v.toFixed(3);
}

export function fmtPct(v: number | null | undefined, digits = 1): string {
  return v === null || v === undefined ? '—' : `${(v * 100).toFixed(digits)}%`;
}

/** Elapsed time since run start: +m:ss, +h:mm:ss, +Nd hh:mm:ss. */
export function fmtElapsed(s: number): string {
  const sign = s < 0 ? '−' : '+';
  let t = Math.abs(s);
  const d = Math.floor(t / 86400);
  t -= d * 86400;
  const h = Math.floor(t / 3600);
  t -= h * 3600;
  const m = Math.floor(t / 60);
  const sec = t - m * 60;
  const ss = sec < 10 ? `0${sec.toFixed(sec % 1 ? 1 : 0)}` : sec.toFixed(sec % 1 ? 1 : 0);
  const mm = String(m).padStart(2, '0');
  if (d) return `${sign}${d}d ${String(h).padStart(2, '0')}:${mm}:${ss}`;
  if (h) return `${sign}${h}:${mm}:${ss}`;
  return `${sign}${m}:${ss}`;
}

/** Wall-clock time with date and zone (UTC), so screenshots and permalinks agree. */
export function fmtWall(ts: number): string {
  return `${new Date(ts * 1000).toISOString().replace('T', ' ').slice(0, 19)} UTC`;
}

export function fmtDuration(s: number): string {
  if (s < 1) return `${(s * 1000).toFixed(0)} ms`;
  if (s < 120) return `${s.toFixed(s < 10 ? 1 : 0)} s`;
  if (s < 7200) return `${(s / 60).toFixed(1)} min`;
  return `${(s / 3600).toFixed(1)} h`;
}

export function laneKey(node: string, gpu: number): string {
  return `${node}:${gpu}`;
}

/** Ascending integers as ranges: `[0,1,2,3,8]` → `0–3, 8`. */
export function fmtIntRanges(values: readonly number[]): string {
  const out: string[] = [];
  for (let i = 0; i < values.length; ) {
    let j = i;
    while (j + 1 < values.length && values[j + 1] === values[j]! + 1) j++;
    out.push(j === i ? String(values[i]) : `${values[i]}–${values[j]}`);
    i = j + 1;
  }
  return out.join(', ');
}

/** What runs on a lane, for its label: `rank 8 · train+rollout`, `rollout`, or '' when unknown. */
export function fmtLaneRoles(lane: { ranks?: readonly number[]; roles?: readonly string[] }): string {
  const ranks = lane.ranks?.length ? `rank${lane.ranks.length > 1 ? 's' : ''} ${fmtIntRanges(lane.ranks)}` : '';
  const roles = lane.roles?.length ? lane.roles.join('+') : '';
  return [ranks, roles].filter(Boolean).join(' · ');
}

/** Time-axis tick step: the first "nice" step giving at most `maxTicks` ticks. */
export function timeStep(span: number, maxTicks: number): number {
  const steps = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400];
  for (const s of steps) if (span / s <= maxTicks) return s;
  return Math.ceil(span / maxTicks / 86400) * 86400;
}
