// Links out of the diffs to one run's views (`run=` names the run when the server holds several).
import { href } from '../../route.ts';

export interface SideRun {
  /** The run's id when the server holds several, else null. */
  run: string | null;
}

export function sampleHref(side: SideRun, step: number, sample: number, evaluation = false): string {
  return href(`/rollout/${step}/sample/${sample}`, { eval: evaluation, run: side.run ?? undefined });
}

/** A step's group in the Rollouts view of its run. */
export function groupHref(side: SideRun, step: number, group: number | null): string {
  return href(`/rollout/${step}`, { group, run: side.run ?? undefined });
}

/** The sample diff of `a` (of run A) against `b` (of run B). */
export function sampleDiffHref(runA: string | null, runB: string | null, a: [number, number], b: [number, number]): string {
  return href('/diff/sample', { a: a.join(':'), b: b.join(':'), run_a: runA, run_b: runB !== runA ? runB : null });
}
