// Links out of the diffs to one run's views: the primary run's at the reference paths, another run's with `run=`.
import { href } from '../../route.ts';

export interface SideRun {
  /** The run's id when the server holds several, else null. */
  run: string | null;
  primary: boolean;
}

export function sampleHref(side: SideRun, step: number, sample: number, evaluation = false): string {
  return href(`/rollout/${step}/sample/${sample}`, { eval: evaluation, run: side.primary ? null : side.run });
}

/**
 * A step's group: in the Rollouts view for the primary run (that view reads one run), else the group's best
 * sample in the Sample view (which steps through the group).
 */
export function groupHref(side: SideRun, step: number, group: number | null, bestSample: number | null): string | null {
  if (side.primary) return href(`/rollout/${step}`, { group });
  return bestSample === null ? null : sampleHref(side, step, bestSample);
}

/** The sample diff of `a` (of run A) against `b` (of run B). */
export function sampleDiffHref(runA: string | null, runB: string | null, a: [number, number], b: [number, number]): string {
  return href('/diff/sample', { a: a.join(':'), b: b.join(':'), run_a: runA, run_b: runB !== runA ? runB : null });
}
