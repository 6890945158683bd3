// Opens a run directory for the commands and the server they start: its model (run/open.ts detects the
// format), answered through the queries, with what the queries are handed (the searchable texts, engine series
// from Prometheus). Nothing under the run is ever written.
import { answersFor } from '../queries/slimeAnswers.ts';
import type { RunAnswers } from '../queries/runAnswers.ts';
import { STEP_FACTS_ENTRY } from '../queries/stepFacts.ts';
import type { StepMetricsInputs } from '../queries/slimeRollouts.ts';
import type { OpenRunOptions, RunModel } from '../run/model.ts';
import { openDerivedEntry, openPrometheusEngines, openRunModel, openSearchTexts } from '../run/open.ts';

export type OpenRun = RunAnswers;

export interface OpenAnswersOptions extends OpenRunOptions {
  /** `--prometheus URL`: engine series from Prometheus for a run that scraped none. */
  prometheus?: string;
  /** slime's step metrics inputs (`--rollout-num-gpus`, `--eval-datasets`). */
  slime?: StepMetricsInputs;
}

/** The answers over an open model, handed its searchable texts (kept in its cache directory) and outside engine series. */
export function answersOver(model: RunModel, opts: Pick<OpenAnswersOptions, 'prometheus' | 'slime'> = {}): RunAnswers {
  return answersFor(model, {
    searchTexts: (source) => openSearchTexts(source, { cacheDir: model.cacheDir }),
    stepFacts: openDerivedEntry(model.cacheDir, STEP_FACTS_ENTRY),
    engines: opts.prometheus ? openPrometheusEngines(opts.prometheus) : null,
    slime: opts.slime,
  });
}

export async function openRun(runDir: string, opts: OpenAnswersOptions = {}): Promise<RunAnswers> {
  return answersOver(await openRunModel(runDir, opts), opts);
}
