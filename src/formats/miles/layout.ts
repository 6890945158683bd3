// Where each dump of a miles `--dump-details` directory lives: the one definition of its folders and file
// names that the writers (demo, synthetic run) and the reader share.

/** A step's rollout dump: `rollout_data/[eval_]{id}.pt`. */
export const ROLLOUT_DIR = 'rollout_data';
/** One rank's train dump of a step: `train_data/{id}_{rank}.pt`. */
export const TRAIN_DIR = 'train_data';
/** A step's parquet mirror of the rollout's per-token columns: `dashboard_columns/rollout_[eval_]{id}.parquet`. */
export const MIRROR_DIR = 'dashboard_columns';
/** A step's recorded conversations: `trajectory/[eval_]{id}.jsonl`. */
export const TRAJECTORY_DIR = 'trajectory';
/** The run's tokenizer (a Hugging Face save_pretrained folder). */
export const TOKENIZER_DIR = 'tokenizer';
export const TOKENIZER_FILE = `${TOKENIZER_DIR}/tokenizer.json`;
/** The folders a step's dumps are written to. */
export const STEP_DIRS = [ROLLOUT_DIR, TRAIN_DIR, MIRROR_DIR, TRAJECTORY_DIR] as const;

/** A step's dump file name: a canonical non-negative integer id (`007.pt` would alias step 7, `-1.pt` is no step). */
const ROLLOUT_NAME = /^(eval_)?(0|[1-9]\d*)\.pt$/;
/** What looks like a step's dump but is not one. */
const NUMBERED_NAME = /^(eval_)?[-+]?\d+\.pt$/;

/** `[eval_]{id}`: how a step's files are named. */
export function stepStem(id: number, evaluation: boolean): string {
  return `${evaluation ? 'eval_' : ''}${id}`;
}

export function rolloutFile(id: number, evaluation: boolean): string {
  return `${ROLLOUT_DIR}/${stepStem(id, evaluation)}.pt`;
}

export function trajectoryFile(id: number, evaluation: boolean): string {
  return `${TRAJECTORY_DIR}/${stepStem(id, evaluation)}.jsonl`;
}

export function mirrorFile(id: number, evaluation: boolean): string {
  return `${MIRROR_DIR}/rollout_${stepStem(id, evaluation)}.parquet`;
}

export function trainFile(id: number, rank: number): string {
  return `${TRAIN_DIR}/${id}_${rank}.pt`;
}

/** The rank a name in `train_data/` gives for step `id` (`{id}_{rank}.pt`), or null when it is not one of its files. */
export function trainRankOf(name: string, id: number): number | null {
  const prefix = `${id}_`;
  if (!name.startsWith(prefix) || !name.endsWith('.pt')) return null;
  const r = name.slice(prefix.length, -3);
  return /^\d+$/.test(r) ? Number(r) : null;
}

/**
 * The step a name in `rollout_data/` holds: its id and whether it is an eval step; `'not a step'` for a
 * numbered name that is no step id (skipped with a warning), null for any other name.
 */
export function rolloutNameOf(name: string): { id: number; evaluation: boolean } | 'not a step' | null {
  const m = ROLLOUT_NAME.exec(name);
  if (m && Number.isSafeInteger(Number(m[2]))) return { id: Number(m[2]), evaluation: m[1] !== undefined };
  return NUMBERED_NAME.test(name) ? 'not a step' : null;
}
