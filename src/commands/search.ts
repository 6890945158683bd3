// `rlsight search DIR QUERY [--limit N] [--cache-dir DIR]`: one JSON line per matching sample
// (step, evaluation, sample_index, field, snippet), printed as the steps are scanned.
import { parseQuery, searchRun } from '../queries/search.ts';
import { BadArgument, limitProblem, SEARCH_RESULTS } from '../queries/limits.ts';
import { cacheDirFlag, CommandUsageError, EXIT_FAILED, EXIT_INCOMPLETE, intFlag, openRunDir, runCommand, runDirArgs, stdoutClosed, terminalSafe } from './common.ts';
import { relativeToRoots } from '../formats/fileAccess.ts';

export async function searchCommand(argv: string[]): Promise<number> {
  return runCommand(async () => {
    const { run: dir, values, rest: positionals } = runDirArgs(argv, 'search', { limit: { type: 'string' }, 'cache-dir': { type: 'string' } }, { rest: true });
    if (positionals.length === 0) throw new CommandUsageError('search: a QUERY is required');
    // a query given whole: its last word is complete too, not a prefix being typed (a trailing space says so)
    const query = `${positionals.join(' ')} `;
    // the query is the command's QUERY here, not the API's `q` (a bad one is refused before the scan, a runaway
    // regular expression during it)
    const queryProblem = (e: unknown): unknown => (e instanceof BadArgument && e.param === 'q' ? new CommandUsageError(e.message.replace(/^q: /, 'QUERY: ')) : e);
    try {
      parseQuery(query);
    } catch (e) {
      throw queryProblem(e);
    }
    const limit = intFlag(values.limit, 'limit', 1) ?? SEARCH_RESULTS.fallback;
    const problem = limitProblem(SEARCH_RESULTS, limit);
    if (problem) throw new CommandUsageError(`--${problem}`);
    const run = await openRunDir(dir, values['cache-dir']);
    // Without a cache a one-shot scan has no later use for an index.
    const { openSearchTexts } = await import('../run/open.ts');
    const cacheDir = cacheDirFlag(values['cache-dir']) ?? null;
    const search = openSearchTexts(run.answers, { indexing: cacheDir !== null, cacheDir });
    try {
      return await scan();
    } catch (e) {
      throw queryProblem(e);
    } finally {
      // A step still being read when --limit stopped the scan need not finish before the process exits.
      search.stop();
      await run.close();
    }

    async function scan(): Promise<number> {
      let matches = 0;
      let unread = 0;
      for await (const e of searchRun(search, run.answers, query, { limit })) {
        if (e.type === 'match') {
          // the reader has gone (`| head -1`): the matches it read are the answer; the rest of the run is not scanned
          if (stdoutClosed()) return 0;
          matches++;
          const { step, evaluation, sample_index, field, snippet } = e;
          process.stdout.write(`${JSON.stringify({ step, evaluation, sample_index, field, snippet, group_index: e.group_index, reward: e.reward, status: e.status })}\n`);
        } else if (e.type === 'done') {
          if (e.note) console.error(`rlsight search: ${e.note}`);
          for (const w of e.warnings) console.error(`warning: ${terminalSafe(relativeToRoots(w, run.answers.roots))}`);
          unread = e.warnings.length;
          if (e.truncated) console.error(`rlsight search: stopped at --limit ${limit} matches`);
        }
      }
      // With a cache, the indexes built by this scan are written before exiting (the next search is warm).
      if (values['cache-dir']) await search.idle();
      // some steps not searched outranks what the others gave
      return unread > 0 ? EXIT_INCOMPLETE : matches > 0 ? 0 : EXIT_FAILED;
    }
  });
}
