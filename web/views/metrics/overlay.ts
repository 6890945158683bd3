// Which runs a Metrics chart draws, and on what x: the run the header shows is always among the drawn runs, a
// time axis draws only series that carry a time per point, and runs on different step keys are named on the axis.
import type { RunListing } from '../../../src/wire/index.ts';

/** The x axis chosen: a step key, wall time, or time since each run's start (to line runs up). */
export type AxisKind = 'step' | 'time' | 'rel';

/**
 * The runs Metrics draws: the ticked ones (`ticked`, the shown run first when ticked), and the run the header
 * shows (`shown`) always among them, first. Choosing a run in the header adds it to an overlay whose ticked runs
 * do not hold it, so the key list (every drawn run's keys) and the charts are of the same runs.
 */
export function drawnRuns(all: readonly RunListing[], ticked: readonly RunListing[], shown: string | null): RunListing[] {
  if (shown === null || ticked.some((r) => r.id === shown)) return [...ticked];
  const own = all.find((r) => r.id === shown);
  return own ? [own, ...ticked] : [...ticked];
}

/** One run's series of a key, as the chart's x is chosen from it. */
export interface SeriesX {
  /** The run's id (null: the only run, at the reference paths). */
  run: string | null;
  /** The step key its `x` is on. */
  axis: string;
  /** Its points, and how many of them carry a wall time (a point's time, or none at all). */
  points: number;
  timed: number;
}

/** A chart's x: the series it draws, on which axis, and what it says about those it leaves out. */
export interface XPlan {
  /** Whether the drawn series are placed by their wall time (else by their step). */
  onTime: boolean;
  /** The indices (into the series given) of the series drawn. */
  drawn: number[];
  /** The x axis' name: one step key, the step keys of the runs drawn when they differ, or the time axis. */
  xLabel: string;
  /** Per series (by index), the step key it is drawn on when the drawn runs are on different ones. */
  ownAxis: (string | undefined)[];
  /** Why the chart is not on the chosen axis, or that its runs count different steps. */
  note?: string;
  /** The runs left out of a time axis (their points carry no time), each with why. */
  leftOut: { run: string; why: string }[];
}

const noTime = (key: string, axis: string): string =>
  key.startsWith('dump/') ? 'dump/* aggregates are computed per step and carry no time' : `its points are counted on ${axis} and carry no time`;

/**
 * The x of one key's chart over its runs' series. On the step axis every series is drawn on its own step key; when
 * those differ the axis names each key with its runs. On a time axis (`time`, `rel`) only the series whose points
 * carry a time are drawn: the others are left out and named, never put on a time axis by their step numbers. Only
 * when no series has a time is the chart drawn on its steps, which its note says.
 */
export function planX(xKind: AxisKind, key: string, series: readonly SeriesX[]): XPlan {
  const all = series.map((_, i) => i);
  const filled = all.filter((i) => series[i]!.points > 0);
  const timed = (i: number) => series[i]!.points > 0 && series[i]!.timed === series[i]!.points;
  if (xKind !== 'step' && (filled.length === 0 || filled.some(timed))) {
    const drawn = all.filter((i) => series[i]!.points === 0 || timed(i));
    const leftOut = all.filter((i) => !drawn.includes(i)).map((i) => ({ run: series[i]!.run ?? '', why: noTime(key, series[i]!.axis) }));
    return { onTime: true, drawn, xLabel: xKind === 'rel' ? 'time since start (s)' : 'time (UTC)', ownAxis: series.map(() => undefined), leftOut };
  }
  const axes = [...new Set(series.map((s) => s.axis))];
  const mixed = axes.length > 1;
  const xLabel = mixed ? axes.map((ax) => `${ax} (${series.filter((s) => s.axis === ax).map((s) => s.run).join(', ')})`).join(' · ') : (axes[0] ?? '');
  const notes: string[] = [];
  if (xKind !== 'step') {
    const why = key.startsWith('dump/') ? 'dump/* aggregates are computed per step and carry no time' : series.length > 1 ? 'no run has a time for this key’s points' : 'this key has no time per point';
    notes.push(`on ${mixed ? 'steps' : xLabel}: ${why}`);
  }
  if (mixed) notes.push(`the runs count different steps (${axes.join(', ')}), lined up by number`);
  return { onTime: false, drawn: all, xLabel, ownAxis: series.map((s) => (mixed ? s.axis : undefined)), note: notes.join('; ') || undefined, leftOut: [] };
}
