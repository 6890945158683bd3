// Where `rlsight serve` keeps a run's derived caches when no --cache-dir is given: one folder per run under the
// user's cache directory (`$RLSIGHT_CACHE_DIR`, else `$XDG_CACHE_HOME/rlsight`, else `~/.cache/rlsight`), named
// by the run's folder and a hash of its real path, so a second `serve` of the same run starts warm.
import { createHash } from 'node:crypto';
import { accessSync, constants, mkdirSync, realpathSync } from 'node:fs';
import { homedir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { isInside, realpathOfFuture } from '../formats/fileAccess.ts';

/** The folder under which runs get their default caches. */
export function userCacheRoot(env: NodeJS.ProcessEnv = process.env): string {
  if (env.RLSIGHT_CACHE_DIR) return resolve(env.RLSIGHT_CACHE_DIR);
  return join(env.XDG_CACHE_HOME ? resolve(env.XDG_CACHE_HOME) : join(homedir(), '.cache'), 'rlsight');
}

/**
 * The default cache folder of the run at `runDir` under `root`, created; or why there is none (the folder
 * cannot be written, or it would lie inside the run).
 */
export function defaultRunCache(runDir: string, root: string = userCacheRoot()): { dir: string } | { problem: string } {
  const shown = (name: string) => join(root, 'runs', name);
  let run: string;
  try {
    run = realpathSync(runDir);
  } catch (e) {
    return { problem: `${runDir} cannot be read (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})` };
  }
  const name = `${basename(run) || 'run'}-${createHash('sha256').update(run).digest('hex').slice(0, 12)}`;
  try {
    // links followed before anything is made: a root reached through a link into the run is inside it all the same
    const dir = join(realpathOfFuture(resolve(root)), 'runs', name);
    if (isInside(run, dir)) return { problem: `${shown(name)} lies inside the run once its links are followed (nothing is written inside a run)` };
    mkdirSync(dir, { recursive: true });
    accessSync(dir, constants.W_OK);
    return { dir };
  } catch (e) {
    return { problem: `${shown(name)} cannot be written (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})` };
  }
}
