// Opens a run directory for serving: its model, answered through the queries. Nothing under it is ever written.
import { RunAnswers } from '../queries/runAnswers.ts';
import type { OpenRunOptions } from '../run/model.ts';
import { openRunModel } from '../run/open.ts';

export type { OpenRunOptions };
export type OpenRun = RunAnswers;

export async function openRun(runDir: string, opts: OpenRunOptions = {}): Promise<RunAnswers> {
  return new RunAnswers(await openRunModel(runDir, opts));
}
