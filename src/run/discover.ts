// Run directories under a root (`rlsight serve --runs ROOT`): every folder a format adapter recognises.
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { runFormats } from './open.ts';

/** How deep below the root run directories are looked for (`ROOT/project/run` is found). */
const MAX_DEPTH = 2;

/** Run directories under `root` (the root itself when it is one), sorted by path; a run's own subfolders are not searched. */
export function discoverRunDirs(root: string, depth = MAX_DEPTH): string[] {
  if (runFormats(root).length > 0) return [root];
  if (depth === 0) return [];
  let names: string[];
  try {
    names = readdirSync(root).sort();
  } catch {
    return [];
  }
  const out: string[] = [];
  for (const name of names) {
    if (name.startsWith('.')) continue;
    const p = join(root, name);
    let isDir = false;
    try {
      isDir = statSync(p).isDirectory();
    } catch {
      continue;
    }
    if (isDir) out.push(...discoverRunDirs(p, depth - 1));
  }
  return out;
}
