// What a command's run argument names on disk: a directory, a file, or a folder of loose slime dump files
// (what a `--save-debug-rollout-data` template wrote), and the words for a folder that holds no run.
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

export function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

export function isFile(path: string): boolean {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

/**
 * Whether a run argument names slime dump files (`serve FILE.pt|GLOB`: what a `--save-debug-rollout-data`
 * template wrote) rather than a run directory: a file, a name with a glob character, or a `.pt` name. A name
 * that is nothing yet is a missing run directory (a mistyped folder is not reported as a missing dump).
 */
export function namesDumpFiles(arg: string): boolean {
  return !isDirectory(arg) && (isFile(arg) || /[*?[]/.test(arg) || arg.endsWith('.pt'));
}

/**
 * What a folder that is no run holds that could be slime dump files: its `.pt` files, and the quoted glob that
 * names them (`'dbg/rollout_*.pt'` for `rollout_0.pt`, `rollout_eval_0.pt`), or null when it holds none.
 */
export function looseDumpFiles(dir: string): { names: string[]; glob: string } | null {
  let names: string[];
  try {
    names = readdirSync(dir)
      .filter((n) => n.endsWith('.pt') && isFile(join(dir, n)))
      .sort();
  } catch {
    return null;
  }
  if (names.length === 0) return null;
  // the part before the id that every name shares (`rollout_` for rollout_3.pt and rollout_eval_0.pt)
  const stems = new Set(names.map((n) => n.replace(/(eval_)?\d+\.pt$/, '')));
  const stem = stems.size === 1 ? [...stems][0] : '';
  return { names, glob: join(dir, `${stem.endsWith('.pt') ? '' : stem}*.pt`) };
}

/** The words for a folder that holds no run: what it does hold when that could be slime dump files, and what to pass instead. */
export function notARun(dir: string): string {
  const loose = looseDumpFiles(dir);
  if (!loose) return `not a run: ${dir} holds no rollout dumps or telemetry`;
  const shown = loose.names.length > 3 ? `${loose.names.slice(0, 3).join(', ')} and ${loose.names.length - 3} more` : loose.names.join(', ');
  return `${dir} is not a run directory (no rollout_data/ or dashboard/ inside) but holds .pt files (${shown}): slime --save-debug-rollout-data dumps are given as one file or one quoted glob, as serve takes them: '${loose.glob}'`;
}
