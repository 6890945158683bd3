// A run's rollout answers under short call signatures, for tests that read a run the way the server answers it.
import { RunAnswers } from '../../src/queries/runAnswers.ts';
import { openMilesRun } from '../../src/run/miles/index.ts';
import type { DumpReaderOptions } from '../../src/run/miles/reader.ts';

/** Opens a miles run (its dump reader tuned by `opts`) and answers summaries, groups, messages, tokens and dump/* aggregates. */
export async function openAnswers(dir: string, opts: DumpReaderOptions = {}) {
  const run = new RunAnswers(await openMilesRun(dir, { reader: opts }));
  return {
    rolloutIds: () => run.model.rolloutIds(),
    summary: (id: number, evaluation = false) => run.summary(id, evaluation),
    summaryPreview: (id: number, evaluation = false, first = false) => run.summaryPreview(id, evaluation, undefined, first),
    groups: (id: number, evaluation = false) => run.groups(id, evaluation),
    messages: (id: number, idx: number, evaluation = false) => run.messages(id, idx, evaluation),
    tokens: (id: number, idx: number, q: { start?: number; end?: number | null; evaluation?: boolean } = {}) =>
      run.tokens(id, idx, { start: q.start ?? 0, end: q.end ?? undefined, evaluation: q.evaluation ?? false }),
    stepAggregates: () => run.stepAggregates(),
    warnings: () => run.warnings(),
    close: () => run.model.close(),
  };
}

export type Answers = Awaited<ReturnType<typeof openAnswers>>;
