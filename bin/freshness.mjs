// Whether a build output is older than the sources it was made from (newest mtime below a folder).
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

/** The newest mtime (ms) of any file below `dir`, skipping folders named in `skip`. */
export function newestMtime(dir, skip = []) {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (skip.includes(entry.name)) continue;
    const path = join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestMtime(path, skip) : statSync(path).mtimeMs);
  }
  return newest;
}

/** True when `output` exists and is at least as new as every file below `sourceDir`. */
export function isFresh(output, sourceDir, skip = []) {
  try {
    return statSync(output).mtimeMs >= newestMtime(sourceDir, skip);
  } catch {
    return false;
  }
}
