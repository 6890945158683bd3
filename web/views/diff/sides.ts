// Which run and step each side of a diff shows: the URL's choice when it names a run and step that exist,
// else defaults — the first run against itself, the newest step against the one before it; across runs, the
// same step number on both sides.

/** The run of each side: `run_a` if the server holds it (else the primary run), `run_b` likewise (else run A). */
export function diffRuns(runIds: readonly string[], primary: string | null, runA: string | null, runB: string | null): { a: string | null; b: string | null } {
  const known = (id: string | null) => (id !== null && runIds.includes(id) ? id : null);
  const a = known(runA) ?? primary;
  return { a, b: known(runB) ?? a };
}

/** The step of each side, given each side's steps (oldest first). Undefined when a side has no steps. */
export function diffSteps(
  stepsA: readonly number[],
  stepsB: readonly number[],
  sameRun: boolean,
  a: number | null,
  b: number | null,
): { a: number | undefined; b: number | undefined } {
  const stepB = b !== null && stepsB.includes(b) ? b : stepsB.at(-1);
  if (a !== null && stepsA.includes(a)) return { a, b: stepB };
  if (sameRun) return { a: stepB === undefined ? stepsA.at(-2) ?? stepsA.at(-1) : (stepsA.filter((s) => s < stepB).at(-1) ?? stepB), b: stepB };
  return { a: stepB !== undefined && stepsA.includes(stepB) ? stepB : stepsA.at(-1), b: stepB };
}
