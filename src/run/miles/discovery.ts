// Which rollout steps of a run are ready to read, and when a decode failure means "still being written".
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';

/** A rollout dump younger than this is hidden unless its train companion exists. */
export const MIN_AGE_SECONDS = 10;
/** A dump younger than this that fails to decode is assumed to be still being written. */
export const FRESH_SECONDS = 60;

export interface RolloutIds {
  train: number[];
  eval: number[];
}

const ROLLOUT_FILE = /^(eval_)?(-?\d+)\.pt$/;

/**
 * Train and eval rollout ids under `rollout_data/`, ascending. A file is visible once older than
 * MIN_AGE_SECONDS, or at once for a train step whose `train_data/{id}_0.pt` exists (written strictly later).
 */
export async function discoverRolloutIds(runDir: string, nowMs = Date.now()): Promise<RolloutIds> {
  let names: string[];
  try {
    names = await readdir(join(runDir, 'rollout_data'));
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT' || (e as NodeJS.ErrnoException).code === 'ENOTDIR') return { train: [], eval: [] };
    throw e;
  }
  const out: RolloutIds = { train: [], eval: [] };
  // One stat per file, all at once: a long run has hundreds of steps and this runs on every catalog read.
  const found = await Promise.all(
    names.map(async (name) => {
      const m = ROLLOUT_FILE.exec(name);
      if (!m) return null;
      const evaluation = m[1] !== undefined;
      const id = Number(m[2]);
      let mtimeMs: number;
      try {
        mtimeMs = (await stat(join(runDir, 'rollout_data', name))).mtimeMs;
      } catch {
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
