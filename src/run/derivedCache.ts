// Derived data kept in `--cache-dir` (never inside a run): named text entries written whole (temp file, rename).
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

export class DerivedCache {
  constructor(readonly dir: string | null) {}

  /** An entry's text, or null when there is none (or no cache). */
  async read(name: string): Promise<string | null> {
    if (!this.dir) return null;
    return readFile(join(this.dir, name), 'utf8').catch(() => null);
  }

  /** Stores an entry; `text` is only called with a cache. A failure to write is ignored: the cache is an optimisation. */
  async write(name: string, text: () => string): Promise<void> {
    if (!this.dir) return;
    try {
      await mkdir(this.dir, { recursive: true });
      const path = join(this.dir, name);
      await writeFile(`${path}.tmp`, text());
      await rename(`${path}.tmp`, path);
    } catch {
      // A read-only or full cache directory must not fail the answer that wanted to write it.
    }
  }
}
