// Opens a run directory for serving: its model, answered through the queries. Nothing under it is ever written.
import type { RunAnswers } from '../queries/runAnswers.ts';
import { answersFor } from '../queries/slimeAnswers.ts';
import type { OpenRunOptions } from '../run/model.ts';
import { derivedEntries, openRunModel } from '../run/open.ts';

export type { OpenRunOptions };
export type OpenRun = RunAnswers;

export async function openRun(runDir: string, opts: OpenRunOptions = {}): Promise<RunAnswers> {
  const model = await openRunModel(runDir, opts);
  return answersFor(model, { cache: derivedEntries(model) });
}
