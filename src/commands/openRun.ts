// Opens a run directory for the commands and the server they start: its model (run/open.ts detects the
// format), answered through the queries, with what the queries are handed (the searchable texts, engine series
// from Prometheus). Nothing under the run is ever written.
import { answersFor, SLIME_STEPS_ENTRY } from '../queries/slimeAnswers.ts';
import type { RunAnswers } from '../queries/runAnswers.ts';
import { STEP_FACTS_ENTRY } from '../queries/stepFacts.ts';
import type { StepMetricsInputs } from '../queries/slimeRollouts.ts';
import { readdirSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { RefusedOption, SlimeDumpError } from '../run/errors.ts';
import { namesDumpFiles, notARun } from './runPaths.ts';
import type { OpenRunOptions, RolloutIds, RunModel } from '../run/model.ts';
import { openDerivedEntry, openDumpFiles, openPrometheusEngines, openRunModel, openSearchTexts, runFormats } from '../run/open.ts';

export type OpenRun = RunAnswers;

export interface OpenAnswersOptions extends OpenRunOptions {
  /** `--prometheus URL`: engine series from Prometheus for a run that scraped none. */
  prometheus?: string;
  /** slime's step metrics inputs (`--eval-datasets`). */
  slime?: StepMetricsInputs;
}

/** The answers over an open model, handed its searchable texts (kept in its cache directory) and outside engine series. */
export function answersOver(model: RunModel, opts: Pick<OpenAnswersOptions, 'prometheus' | 'slime'> = {}): RunAnswers {
  return answersFor(model, {
    searchTexts: (source) => openSearchTexts(source, { cacheDir: model.cacheDir }),
    stepFacts: openDerivedEntry(model.cacheDir, STEP_FACTS_ENTRY),
    slimeSteps: model.traces ? openDerivedEntry(model.cacheDir, SLIME_STEPS_ENTRY) : null,
    engines: opts.prometheus ? openPrometheusEngines(opts.prometheus) : null,
    slime: opts.slime,
  });
}

export async function openRun(runDir: string, opts: OpenAnswersOptions = {}): Promise<RunAnswers> {
  return answersOver(await openRunModel(runDir, opts), opts);
}

/** What is wrong with the run a command was given, said without the flag or command that gave it (the caller adds that). */
export interface RunArgumentProblem {
  problem: string;
}

/**
 * The slime dump files one FILE.pt or GLOB names, as one run, with the rollout ids they hold; a spec naming no
 * file, or only files that are no dump, is a problem (a usage error where a command was given it).
 */
export async function openDumpFilesRun(spec: string): Promise<{ model: RunModel; ids: RolloutIds } | RunArgumentProblem> {
  let model: RunModel;
  try {
    model = openDumpFiles(spec);
  } catch (e) {
    // the spec itself (no such file or folder, nothing matching the glob, a glob in a folder name)
    if (e instanceof SlimeDumpError) return { problem: e.message };
    throw e;
  }
  const ids = await model.rolloutIds();
  if (ids.train.length + ids.eval.length === 0) {
    const why = model.warnings()[0];
    await model.close();
    return { problem: `no slime rollout dump in ${spec}${why ? ` (${why})` : ''}` };
  }
  return { model, ids };
}

/**
 * Opens the run a command (health, search, export) names, in every form `serve` takes: a run directory of any
 * format, or slime dump files as one FILE.pt or one quoted GLOB (`dumpFiles: false`, for `--dump-details`,
 * takes a directory only). What is wrong with the argument comes back as a problem; `--cache-dir` with dump
 * files is refused (param `cacheDir`): they are read into memory and keep no cache, as `serve` keeps none; so is
 * a TensorBoard logdir (param `tensorboard`), which `serve` reads beside a run directory only.
 */
export async function openRunArgument(arg: string, opts: { cacheDir?: string; dumpFiles?: boolean; tensorboard?: string } = {}): Promise<{ run: RunAnswers } | RunArgumentProblem> {
  if (namesDumpFiles(arg)) {
    if (opts.dumpFiles === false) {
      const named = arg.endsWith('.pt') || /[*?[]/.test(arg);
      return { problem: named ? `${arg} is not a directory; slime dump files (FILE.pt or a quoted GLOB) are given on their own, without --dump-details` : `not a directory: ${arg}` };
    }
    if (opts.cacheDir !== undefined) throw new RefusedOption('cacheDir', 'not used with slime dump files (FILE.pt|GLOB): they are read into memory and keep no cache');
    if (opts.tensorboard !== undefined) throw new RefusedOption('tensorboard', 'a TensorBoard logdir is read beside a run directory, not slime dump files (FILE.pt|GLOB), as serve reads it');
    const opened = await openDumpFilesRun(arg);
    return 'problem' in opened ? opened : { run: answersOver(opened.model) };
  }
  const abs = resolve(arg);
  let dir: boolean;
  try {
    dir = statSync(abs).isDirectory();
  } catch {
    return { problem: `no such directory: ${arg}` };
  }
  if (!dir) return { problem: `not a directory: ${arg}` };
  if (runFormats(abs).length === 0) return { problem: notARun(arg) };
  return { run: await openRun(abs, { cacheDir: opts.cacheDir, tensorboard: opts.tensorboard }) };
}

