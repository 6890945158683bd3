// Which rollout steps of a run are ready to read, and when a decode failure means "still being written".
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { fileKind } from '../../formats/fileAccess.ts';

/** A rollout dump younger than this is hidden unless its train companion exists. */
export const MIN_AGE_SECONDS = 10;
/** A dump younger than this that fails to decode is assumed to be still being written. */
export const FRESH_SECONDS = 60;

export interface RolloutIds {
  train: number[];
  eval: number[];
}

/** A step's dump: a canonical non-negative integer id (`007.pt` would alias step 7, `-1.pt` is no step). */
const ROLLOUT_FILE = /^(eval_)?(0|[1-9]\d*)\.pt$/;
/** What looks like a step's dump but is not one: skipped with a warning. */
const NUMBERED_FILE = /^(eval_)?[-+]?\d+\.pt$/;

/** Reports a listed file that is skipped (`rollout_data/-1.pt`, "not a step id: skipped"). */
export type SkipNote = (file: string, problem: string) => void;

/**
 * Train and eval rollout ids under `rollout_data/`, ascending. A file is visible once older than
 * MIN_AGE_SECONDS, or at once for a train step whose `train_data/{id}_0.pt` exists (written strictly later).
 */
export async function discoverRolloutIds(runDir: string, nowMs = Date.now(), skipped: SkipNote = () => {}): Promise<RolloutIds> {
  let names: string[];
  try {
    names = await readdir(join(runDir, 'rollout_data'));
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOTDIR') skipped('rollout_data', 'not a directory: rollout dumps skipped');
    if (code === 'ENOENT' || code === 'ENOTDIR') return { train: [], eval: [] };
    throw e;
  }
  const out: RolloutIds = { train: [], eval: [] };
  // One stat per file, all at once: a long run has hundreds of steps and this runs on every catalog read.
  const found = await Promise.all(
    names.map(async (name) => {
      const m = ROLLOUT_FILE.exec(name);
      if (!m || !Number.isSafeInteger(Number(m[2]))) {
        if (NUMBERED_FILE.test(name)) skipped(`rollout_data/${name}`, 'not a step id (a non-negative integer): skipped');
        return null;
      }
      const evaluation = m[1] !== undefined;
      const id = Number(m[2]);
      let mtimeMs: number;
      try {
        const st = await stat(join(runDir, 'rollout_data', name));
        // Only regular files are steps: a FIFO or device would wedge whoever opened it.
        if (!st.isFile()) {
          skipped(`rollout_data/${name}`, `${fileKind(st)}, not a regular file: skipped`);
          return null;
        }
        mtimeMs = st.mtimeMs;
      } catch (e) {
        // A symlink loop is a damaged entry, not a step (a file gone since the listing is just gone).
        const code = (e as NodeJS.ErrnoException).code;
        if (code !== 'ENOENT') skipped(`rollout_data/${name}`, `${code === 'ELOOP' ? 'a symlink loop' : (e as Error).message}: skipped`);
        return null;
      }
      let visible = nowMs - mtimeMs > MIN_AGE_SECONDS * 1000;
      if (!visible && !evaluation) visible = await exists(join(runDir, 'train_data', `${id}_0.pt`));
      return visible ? { evaluation, id } : null;
    }),
  );
  for (const f of found) if (f) (f.evaluation ? out.eval : out.train).push(f.id);
  out.train.sort((a, b) => a - b);
  out.eval.sort((a, b) => a - b);
  return out;
}

async function exists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch {
    return false;
  }
}
