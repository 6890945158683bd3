// Which rollout steps of a run are ready to read, and when a decode failure means "still being written".
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { fileKind } from '../../formats/fileAccess.ts';
import { ROLLOUT_DIR, rolloutNameOf, trainFile } from '../../formats/miles/layout.ts';

/** A rollout dump younger than this is hidden unless its train companion exists. */
export const MIN_AGE_SECONDS = 10;

export interface RolloutIds {
  train: number[];
  eval: number[];
}

/** Reports a listed file that is skipped (`rollout_data/-1.pt`, "not a step id: skipped"). */
export type SkipNote = (file: string, problem: string) => void;

/**
 * Train and eval rollout ids under `rollout_data/`, ascending. A file is visible once older than
 * MIN_AGE_SECONDS, or at once for a train step whose `train_data/{id}_0.pt` exists (written strictly later).
 */
export async function discoverRolloutIds(runDir: string, nowMs = Date.now(), skipped: SkipNote = () => {}): Promise<RolloutIds> {
  let names: string[];
  try {
    names = await readdir(join(runDir, ROLLOUT_DIR));
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOTDIR') skipped(ROLLOUT_DIR, 'not a directory: rollout dumps skipped');
    if (code === 'ENOENT' || code === 'ENOTDIR') return { train: [], eval: [] };
    throw e;
  }
  const out: RolloutIds = { train: [], eval: [] };
  // One stat per file, all at once: a long run has hundreds of steps and this runs on every catalog read.
  const found = await Promise.all(
    names.map(async (name) => {
      const step = rolloutNameOf(name);
      if (step === null || step === 'not a step') {
        if (step !== null) skipped(`${ROLLOUT_DIR}/${name}`, 'not a step id (a non-negative integer): skipped');
        return null;
      }
      const { evaluation, id } = step;
      let mtimeMs: number;
      try {
        const st = await stat(join(runDir, ROLLOUT_DIR, name));
        // Only regular files are steps: a FIFO or device would wedge whoever opened it.
        if (!st.isFile()) {
          skipped(`${ROLLOUT_DIR}/${name}`, `${fileKind(st)}, not a regular file: skipped`);
          return null;
        }
        mtimeMs = st.mtimeMs;
      } catch (e) {
        // A symlink loop is a damaged entry, not a step (a file gone since the listing is just gone).
        const code = (e as NodeJS.ErrnoException).code;
        if (code !== 'ENOENT') skipped(`${ROLLOUT_DIR}/${name}`, `${code === 'ELOOP' ? 'a symlink loop' : (e as Error).message}: skipped`);
        return null;
      }
      let visible = nowMs - mtimeMs > MIN_AGE_SECONDS * 1000;
      if (!visible && !evaluation) visible = await exists(join(runDir, trainFile(id, 0)));
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
